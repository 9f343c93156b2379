package receipts

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// Normalize returns a deep copy of r holding only what must be stable
// between two runs of the same experiment: run id, times, the target
// endpoint, latencies, throughput rates, server figures, self-checks,
// cost and warnings are dropped. Counts (judgments, requests, prompt
// tokens) and every answer stay. Goldens hold normalized receipts.
func Normalize(r *Receipt) *Receipt {
	if r == nil {
		return nil
	}
	n := *r.Clone()
	n.RunID = ""
	n.Started, n.Finished = time.Time{}, time.Time{}
	n.Target.Endpoint = ""
	t := n.Throughput
	n.Throughput = Throughput{
		Concurrency:  t.Concurrency,
		Judgments:    t.Judgments,
		Images:       t.Images,
		Requests:     t.Requests,
		Failed:       t.Failed,
		Discarded:    t.Discarded,
		PromptTokens: t.PromptTokens,
	}
	n.Server, n.Checks, n.Cost = nil, nil, nil
	n.Warnings = nil
	for i := range n.Items {
		n.Items[i].LatencySeconds = 0
	}
	n.Identity.Digest = n.IdentityDigest()
	return &n
}

// ErrGoldenUpdateInCI refuses to rewrite goldens in CI (CI=true), where a
// rewrite would hide the very change the golden guards.
var ErrGoldenUpdateInCI = errors.New("receipts: refusing to update goldens under CI=true")

// Golden checks a fresh receipt against the golden receipt at path.
//
// Without update it compares Normalize(golden) with Normalize(got) under
// p and returns the report (check Report.Failed); on a failed comparison
// it leaves the normalized receipt beside the golden as *.got.json, and
// removes a stale one on success. A missing golden is an error that says
// to run with -update.
//
// With update it rewrites the golden only when the normalized bytes
// differ, re-reads the new file to prove it stable, and is refused under
// CI=true (ErrGoldenUpdateInCI). The returned report then compares the
// written golden with got.
func Golden(path string, got *Receipt, update bool, p Policy) (*Report, error) {
	norm := Normalize(got)
	data, err := Marshal(norm)
	if err != nil {
		return nil, fmt.Errorf("golden %s: fresh receipt: %w", path, err)
	}
	if update {
		if os.Getenv("CI") == "true" {
			return nil, ErrGoldenUpdateInCI
		}
		old, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("golden: %w", err)
		}
		if !bytes.Equal(old, data) {
			if err := writeAtomic(path, data); err != nil {
				return nil, fmt.Errorf("golden: %w", err)
			}
		}
		again, err := ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("golden: re-read after update: %w", err)
		}
		if redo, err := Marshal(Normalize(again)); err != nil || !bytes.Equal(redo, data) {
			return nil, fmt.Errorf("golden %s: not stable after rewrite (read back differs)", path)
		}
		return Compare(again, norm, p)
	}
	golden, err := ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("golden %s missing: run the test with -update to create it: %w", path, err)
	}
	if err != nil {
		return nil, err
	}
	rep, err := Compare(Normalize(golden), norm, p)
	side := gotPath(path)
	if err != nil || rep.Failed() {
		if werr := writeAtomic(side, data); werr != nil {
			return rep, errors.Join(err, fmt.Errorf("golden: write %s: %w", side, werr))
		}
		return rep, err
	}
	if rerr := os.Remove(side); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return rep, fmt.Errorf("golden: remove stale %s: %w", side, rerr)
	}
	return rep, nil
}

// gotPath names the sidecar left on a mismatch: x.golden.json → x.got.json.
func gotPath(path string) string {
	if base, ok := strings.CutSuffix(path, ".golden.json"); ok {
		return base + ".got.json"
	}
	return strings.TrimSuffix(path, ".json") + ".got.json"
}
