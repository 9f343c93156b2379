package receipts

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// identityField is one fact that must be equal for two receipts to be
// comparable. An empty Value means the receipt does not record it
// (typevet lacks several); Entries, when set, make the field a map whose
// keys are compared one by one.
type identityField struct {
	Name    string
	Value   string
	Entries map[string]string
	// PerKey fields compare only the keys both sides hold (per-item
	// digests: items missing on one side are reported by Compare instead).
	PerKey bool
	// HashWhenRecorded fields enter the digest only when recorded: fields
	// added after receipts were written, so that those receipts' digests
	// still verify.
	HashWhenRecorded bool
}

func (f identityField) known() bool { return f.Value != "" || len(f.Entries) > 0 }

// identityFields lists what makes answers comparable, in a fixed order.
// Not included on purpose: concurrency, run id, times, target endpoint,
// latencies and the Upstream facts.
func (r *Receipt) identityFields() []identityField {
	p := r.Pins
	fs := []identityField{
		{Name: "set", Value: r.Set},
		{Name: "target", Value: targetClass(r.Target)},
		{Name: "model", Value: Weights(p)},
		{Name: "model_revision", Value: p.ModelRevision},
		{Name: "served", Value: servedKey(p.Served)},
		{Name: "server_build", Value: p.ServerBuild},
		{Name: "scoring_mode", Value: scoringKey(p)},
		{Name: "control_token_ids", Value: controlsKey(p.Controls)},
		{Name: "prompt_digests", Entries: r.Identity.PromptDigests},
		{Name: "fixture.items", Value: strconv.Itoa(p.Fixture.Items)},
		{Name: "fixture.seed", Value: strconv.FormatInt(p.Fixture.Seed, 10)},
		{Name: "fixture.slice_sha256", Value: p.Fixture.SliceSHA256},
	}
	for _, k := range sortedKeys(p.Fixture.Extra) {
		fs = append(fs, identityField{Name: "fixture.extra." + k, Value: p.Fixture.Extra[k]})
	}
	fs = append(fs,
		identityField{Name: "fixture_digests", Entries: r.Identity.FixtureDigests, PerKey: true},
		identityField{Name: "server_flags", Value: r.Identity.ServerFlags},
		identityField{Name: "server_env", Value: r.Identity.ServerEnv, HashWhenRecorded: true},
		identityField{Name: "cache_config", Value: mapKey(r.Identity.CacheConfig)},
		identityField{Name: "harness_version", Value: r.Identity.HarnessVersion},
	)
	return fs
}

// Weights names the weights behind the model that was asked: the root of
// its /v1/models entry when the server lists one (so a served alias such
// as "gemma-4-31b-it" and "google/gemma-4-31B-it" name the same weights),
// else the model name as asked.
func Weights(p Pins) string {
	for _, s := range p.Served {
		if s.ID == p.Model && s.Root != "" {
			return s.Root
		}
	}
	return p.Model
}

// targetClass is "live" or "twin": answers of a twin and of a real server
// are never the same experiment; container and in-process twins are.
func targetClass(t Target) string {
	switch t.Kind {
	case TargetContainer, TargetInProcess:
		if t.Replay != "" {
			return "twin replay " + t.Replay
		}
		return "twin"
	case TargetLive, TargetTypevet:
		return "live"
	}
	return string(t.Kind)
}

// servedKey lists the served weights with their context length; the
// served alias (id) is left out: it names, it does not decide.
func servedKey(ss []ServedModel) string {
	var parts []string
	for _, s := range ss {
		name := s.Root
		if name == "" {
			name = s.ID
		}
		parts = append(parts, fmt.Sprintf("%s (max_model_len %d)", name, s.MaxModelLen))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func scoringKey(p Pins) string {
	if p.ScoringMode == "top_logprobs" {
		return fmt.Sprintf("%s (top_logprobs %d)", p.ScoringMode, p.TopLogprobs)
	}
	return p.ScoringMode
}

func controlsKey(c map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(c) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c[k]))
	}
	return strings.Join(parts, " ")
}

func mapKey(m map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}

// IdentityDigest is the hex sha256 over the identity fields (see
// IdentityDiff for the list). Equal identities give equal digests. A field
// a receipt does not record enters as empty, so a typevet receipt and a
// vetbench receipt of the same setup have different digests; IdentityDiff
// is the comparison that treats an unrecorded field as unverified rather
// than different.
func (r *Receipt) IdentityDigest() string {
	h := sha256.New()
	for _, f := range r.identityFields() {
		if f.HashWhenRecorded && !f.known() {
			continue
		}
		if f.Entries == nil {
			fmt.Fprintf(h, "%s=%s\n", f.Name, f.Value)
			continue
		}
		for _, k := range sortedKeys(f.Entries) {
			fmt.Fprintf(h, "%s.%s=%s\n", f.Name, k, f.Entries[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// IdentityDiff lists, in words, the identity fields that both receipts
// record and that differ ("model: google/gemma-4-31B-it →
// google/gemma-4-31B-it-FP8"). Empty means comparable. The fields are:
// set, target (live or twin), model (weights: served root), model
// revision, served models (root and max_model_len), server build, scoring
// mode (+ top_logprobs), control token ids, prompt digests per question,
// fixture items/seed/slice digest/extra pins, per-item fixture digests (on
// items both hold), server flags, server environment, cache config and
// harness version.
func IdentityDiff(a, b *Receipt) []string {
	d, _, _ := identityCompare(a, b)
	return d
}

// IdentityUnverified lists the identity fields that only one of the two
// receipts records, so they could not be checked (typevet receipts lack
// control token ids, server flags, cache config and harness version; the
// 0.4.0 face receipt lacks the model revision).
func IdentityUnverified(a, b *Receipt) []string {
	_, u, _ := identityCompare(a, b)
	return u
}

// IdentityUnrecorded lists the identity fields neither receipt records
// (two typevet receipts: control token ids, server flags, cache config,
// harness version).
func IdentityUnrecorded(a, b *Receipt) []string {
	_, _, n := identityCompare(a, b)
	return n
}

// IdentityComparison is IdentityDiff, IdentityUnverified and
// IdentityUnrecorded of one pair of receipts, worked out in one pass.
type IdentityComparison struct {
	Differences []string
	Unverified  []string
	Unrecorded  []string
}

// CompareIdentity says whether a (the baseline) and b (the candidate) are
// the same experiment: Differences empty means comparable.
func CompareIdentity(a, b *Receipt) IdentityComparison {
	d, u, n := identityCompare(a, b)
	return IdentityComparison{Differences: d, Unverified: u, Unrecorded: n}
}

// ErrIdentityMismatch says two receipts are not the same experiment
// (model, server, prompts, fixtures…) and were not compared.
var ErrIdentityMismatch = errors.New("receipts: identity mismatch")

// IdentityError lists what differs; it matches ErrIdentityMismatch.
type IdentityError struct {
	Differences []string
}

func (e *IdentityError) Error() string {
	return fmt.Sprintf("%v: %s", ErrIdentityMismatch, strings.Join(e.Differences, "; "))
}

func (e *IdentityError) Is(target error) bool { return target == ErrIdentityMismatch }

func identityCompare(a, b *Receipt) (diff, unverified, unrecorded []string) {
	fa, fb := a.identityFields(), b.identityFields()
	index := func(fs []identityField) map[string]identityField {
		m := make(map[string]identityField, len(fs))
		for _, f := range fs {
			m[f.Name] = f
		}
		return m
	}
	ia, ib := index(fa), index(fb)
	var names []string
	for _, f := range fa {
		names = append(names, f.Name)
	}
	for _, f := range fb {
		if _, ok := ia[f.Name]; !ok {
			names = append(names, f.Name)
		}
	}
	for _, name := range names {
		x, y := ia[name], ib[name]
		switch {
		case !x.known() && !y.known():
			// An optional statement neither side made (a server env) is no
			// gap in either record.
			if !x.HashWhenRecorded && !y.HashWhenRecorded {
				unrecorded = append(unrecorded, name)
			}
		case !x.known():
			unverified = append(unverified, fmt.Sprintf("%s: recorded by the candidate only (%s)", name, show(y)))
		case !y.known():
			unverified = append(unverified, fmt.Sprintf("%s: recorded by the baseline only (%s)", name, show(x)))
		case x.Entries != nil || y.Entries != nil:
			diff = append(diff, entriesDiff(name, x, y)...)
		case x.Value != y.Value:
			diff = append(diff, fmt.Sprintf("%s: %s → %s", name, short(x.Value), short(y.Value)))
		}
	}
	return diff, unverified, unrecorded
}

func entriesDiff(name string, x, y identityField) []string {
	if x.PerKey {
		var differ []string
		for _, k := range sortedKeys(x.Entries) {
			if v, ok := y.Entries[k]; ok && v != x.Entries[k] {
				differ = append(differ, k)
			}
		}
		if len(differ) == 0 {
			return nil
		}
		shown := differ
		if len(shown) > 5 {
			shown = shown[:5]
		}
		more := ""
		if len(differ) > len(shown) {
			more = fmt.Sprintf(", … %d more", len(differ)-len(shown))
		}
		return []string{fmt.Sprintf("%s: %d items differ (%s%s)", name, len(differ), strings.Join(shown, ", "), more)}
	}
	var out []string
	keys := sortedKeys(x.Entries)
	for _, k := range sortedKeys(y.Entries) {
		if _, ok := x.Entries[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, ok1 := x.Entries[k]
		w, ok2 := y.Entries[k]
		switch {
		case !ok1:
			out = append(out, fmt.Sprintf("%s.%s: (absent) → %s", name, k, short(w)))
		case !ok2:
			out = append(out, fmt.Sprintf("%s.%s: %s → (absent)", name, k, short(v)))
		case v != w:
			out = append(out, fmt.Sprintf("%s.%s: %s → %s", name, k, short(v), short(w)))
		}
	}
	return out
}

func show(f identityField) string {
	if f.Entries != nil {
		return fmt.Sprintf("%d entries", len(f.Entries))
	}
	return short(f.Value)
}

// short trims a hex digest for display.
func short(s string) string {
	if len(s) == 64 && isHex(s) {
		return s[:12] + "…"
	}
	return s
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}
