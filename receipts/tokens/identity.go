package tokens

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/receipts"
)

type identityField struct{ name, value string }

// identityFields lists, in a fixed order, what makes two points
// comparable. Concurrency, repeats, run id, times and the endpoint are
// left out on purpose: they vary between points of one experiment.
func (r *Receipt) identityFields() []identityField {
	id := r.Identity
	out := []identityField{
		{"target", targetClass(r.Target)},
		{"model", id.Model},
		{"server_build", id.ServerBuild},
		{"server_flags", id.ServerFlags},
		{"gpu", id.GPU},
		{"profile", mapKey(id.Profile)},
		{"sampling", id.Sampling},
		{"workload", r.Point.Workload},
		{"output_tokens", strconv.Itoa(r.Point.OutputTokens)},
		{"load", loadKey(r.Point)},
		{"prompt_digest", id.PromptDigest},
		{"cache_isolation", id.CacheIsolation},
		{"harness_version", id.HarnessVersion},
		{"api", id.API},
	}
	return out
}

// targetClass is "live" or "twin": a twin and a real server are never the
// same experiment; container and in-process twins are.
func targetClass(t receipts.Target) string {
	switch t.Kind {
	case receipts.TargetContainer, receipts.TargetInProcess:
		if t.Replay != "" {
			return "twin replay " + t.Replay
		}
		return "twin"
	case receipts.TargetLive, receipts.TargetTypevet:
		return "live"
	}
	return string(t.Kind)
}

// loadKey is how requests were offered: a closed batch, or refilled slots
// at a request rate ("inf": all prompts queued at once) and burstiness.
func loadKey(p Point) string {
	if p.NumPrompts == 0 {
		return "closed_batch"
	}
	rate := "inf"
	if p.RequestRate > 0 {
		rate = strconv.FormatFloat(p.RequestRate, 'g', -1, 64)
	}
	b := max(p.Burstiness, 0)
	if b == 0 {
		b = 1
	}
	s := fmt.Sprintf("refilled_slots request_rate=%s", rate)
	if p.RequestRate > 0 {
		s += " burstiness=" + strconv.FormatFloat(b, 'g', -1, 64)
	}
	return s
}

func mapKey(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}

// IdentityDigest is the hex sha256 over the identity fields.
func (r *Receipt) IdentityDigest() string {
	h := sha256.New()
	for _, f := range r.identityFields() {
		if f.name == "api" && f.value == "" {
			continue // recorded since 2026-12: a receipt from before keeps its digest
		}
		fmt.Fprintf(h, "%s=%s\n", f.name, f.value)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// IdentityDiff lists, in words, the identity fields both receipts record
// and that differ ("gpu: RTX 3090 → H100"). Empty means comparable as far
// as both know.
func IdentityDiff(a, b *Receipt) []string {
	var out []string
	bf := b.identityFields()
	for i, f := range a.identityFields() {
		g := bf[i]
		if f.value != "" && g.value != "" && f.value != g.value {
			out = append(out, fmt.Sprintf("%s: %s → %s", f.name, f.value, g.value))
		}
	}
	return out
}

// IdentityUnverified names the identity fields only one side records: the
// comparison cannot say they are equal.
func IdentityUnverified(a, b *Receipt) []string {
	var out []string
	bf := b.identityFields()
	for i, f := range a.identityFields() {
		if (f.value == "") != (bf[i].value == "") {
			out = append(out, f.name)
		}
	}
	return out
}

// promptTolerance is how far apart two points' mean prompt lengths may be
// and still be the same prompts: the twin's and a server's tokenizers, or
// two templates, move a prompt by a token or two.
const promptTolerance = 0.05

// promptTokensDiff is, in words, how two points' prompts differ in length
// — the mean prompt tokens per completed request, by the servers' own
// usage counts — when they are more than promptTolerance apart: another
// prompt set (vllm bench serve's random dataset against vetbench's text
// workload), or the same text through the completions endpoint and the
// chat template. A workload's change, not the server's speed. "" when
// they agree or a side has no counts (a published point).
func promptTokensDiff(a, b *Receipt) string {
	mean := func(r *Receipt) float64 {
		s := r.Summary.Serve
		if s == nil || s.Completed == 0 || s.TotalInputTokens == 0 {
			return 0
		}
		return float64(s.TotalInputTokens) / float64(s.Completed)
	}
	ma, mb := mean(a), mean(b)
	if ma == 0 || mb == 0 || math.Abs(ma-mb) <= promptTolerance*max(ma, mb) {
		return ""
	}
	return fmt.Sprintf("prompt tokens per request: %.1f → %.1f (other prompts)", ma, mb)
}
