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
// endpoints and each one's figures, latencies, throughput rates, server figures, self-checks,
// cost and warnings are dropped. Counts (judgments, requests, prompt
// tokens) and every answer stay. Goldens hold normalized receipts.
func Normalize(r *Receipt) *Receipt {
	if r == nil {
		return nil
	}
	n := *r.Clone()
	n.RunID = ""
	n.Started, n.Finished = time.Time{}, time.Time{}
	n.Target.Endpoint, n.Target.Endpoints = "", nil
	// Which endpoint answered what depends on timing: not stable.
	n.Endpoints = nil
	t := n.Throughput
	n.Throughput = Throughput{
		Concurrency:   t.Concurrency,
		Judgments:     t.Judgments,
		Images:        t.Images,
		Requests:      t.Requests,
		Failed:        t.Failed,
		Discarded:     t.Discarded,
		FailedByClass: t.FailedByClass,
		PromptTokens:  t.PromptTokens,
	}
	n.Server, n.Checks, n.Cost = nil, nil, nil
	n.Warnings = nil
	for i := range n.Items {
		n.Items[i].LatencySeconds = 0
	}
	n.Identity.Digest = n.IdentityDigest()
	return &n
}

// ErrGoldenUpdateInCI refuses to rewrite goldens in CI, where a rewrite
// would hide the very change the golden guards.
var ErrGoldenUpdateInCI = errors.New("receipts: refusing to update goldens under CI=true")

// Goldens are normalized receipts kept in the repository; answers.Golden
// compares a fresh run with one. These are its file operations, so that a
// golden is read, rewritten and left beside in one way everywhere.

// ReadGolden reads the golden receipt at path. A missing golden is an
// error (matching fs.ErrNotExist) that says to run with -update.
func ReadGolden(path string) (*Receipt, error) {
	golden, err := ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("golden %s missing: run the test with -update to create it: %w", path, err)
	}
	return golden, err
}

// UpdateGolden rewrites the golden at path with Normalize(got), only when
// the normalized bytes differ, re-reads the file to prove it stable and
// returns what it read back. ci is whether this runs in CI (the caller
// knows: CI=true in the environment of a test): there the update is
// refused with ErrGoldenUpdateInCI and nothing is written.
func UpdateGolden(path string, got *Receipt, ci bool) (*Receipt, error) {
	data, err := Marshal(Normalize(got))
	if err != nil {
		return nil, fmt.Errorf("golden %s: fresh receipt: %w", path, err)
	}
	if ci {
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
	return again, nil
}

// KeepGot leaves Normalize(got) beside the golden at path as *.got.json
// (x.golden.json → x.got.json) when keep is set, for a person to diff
// after a mismatch, and removes a stale one when it is not.
func KeepGot(path string, got *Receipt, keep bool) error {
	side := gotPath(path)
	if !keep {
		if err := os.Remove(side); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("golden: remove stale %s: %w", side, err)
		}
		return nil
	}
	data, err := Marshal(Normalize(got))
	if err != nil {
		return fmt.Errorf("golden %s: fresh receipt: %w", path, err)
	}
	if err := writeAtomic(side, data); err != nil {
		return fmt.Errorf("golden: write %s: %w", side, err)
	}
	return nil
}

// gotPath names the sidecar left on a mismatch: x.golden.json → x.got.json.
func gotPath(path string) string {
	if base, ok := strings.CutSuffix(path, ".golden.json"); ok {
		return base + ".got.json"
	}
	return strings.TrimSuffix(path, ".json") + ".got.json"
}
