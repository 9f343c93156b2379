package matrix

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// IdentityDigest is the hex sha256 over the identity fields and the
// target class (live or twin).
func (m *Matrix) IdentityDigest() string {
	h := sha256.New()
	id := m.Identity
	var cache []string
	for _, k := range slices.Sorted(maps.Keys(id.CacheConfig)) {
		cache = append(cache, k+"="+id.CacheConfig[k])
	}
	for _, f := range [][2]string{
		{"target", targetClass(m.Target)},
		{"model", id.Model},
		{"server_build", id.ServerBuild},
		{"server_flags", id.ServerFlags},
		{"gpu", id.GPU},
		{"tool", id.Tool},
		{"cache_config", strings.Join(cache, " ")},
		{"harness_version", id.HarnessVersion},
		{"duration_seconds", strconv.FormatFloat(m.DurationSeconds, 'g', -1, 64)},
		{"max_output_tokens", strconv.Itoa(m.MaxOutputTokens)},
	} {
		fmt.Fprintf(h, "%s=%s\n", f[0], f[1])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func targetClass(t receipts.Target) string {
	switch t.Kind {
	case receipts.TargetContainer, receipts.TargetInProcess:
		return "twin"
	case receipts.TargetLive:
		return "live"
	}
	return string(t.Kind)
}

// Validate reports what makes a matrix unusable, naming each field by its
// path; the error joins one *receipts.SchemaError per problem.
func (m *Matrix) Validate() error { return m.validate("") }

func (m *Matrix) validate(file string) error {
	p := &receipts.Problems{File: file}
	if m == nil {
		p.Add("", "no matrix")
		return p.Err()
	}
	// Problems come in document order: the header, then prefill, then cells.
	m.validateHeader(p)
	m.validatePrefill(p)
	m.validateCells(p)
	return p.Err()
}

// validateHeader checks the fields about the whole run: schema, source,
// times, target, limits, identity digest and how it stopped.
func (m *Matrix) validateHeader(p *receipts.Problems) {
	if m.Schema != Schema {
		p.Add("schema", "%q is not %q", m.Schema, Schema)
	}
	switch m.Source {
	case SourceVetbench, SourcePublished:
	default:
		p.Add("source", "unknown source %q (want %s or %s)", m.Source, SourceVetbench, SourcePublished)
	}
	if !m.Started.IsZero() && !m.Finished.IsZero() && m.Finished.Before(m.Started) {
		p.Add("finished_utc", "%s is before started_utc %s", m.Finished, m.Started)
	}
	switch m.Target.Kind {
	case receipts.TargetLive, receipts.TargetContainer, receipts.TargetInProcess:
	default:
		p.Add("target.kind", "unknown target kind %q", m.Target.Kind)
	}
	if e := m.Target.Endpoint; e != "" {
		if u, err := url.Parse(e); err != nil || u.User != nil || u.RawQuery != "" {
			p.Add("target.endpoint", "not a URL without credentials or query")
		}
	}
	if strings.ContainsAny(m.Description, "\r\n") {
		p.Add("description", "holds a line break; it is one line")
	}
	if bad(m.DurationSeconds) || m.DurationSeconds < 0 {
		p.Add("duration_seconds", "%v is not a finite number >= 0", m.DurationSeconds)
	}
	if m.MaxOutputTokens < 0 {
		p.Add("max_output_tokens", "negative (%d)", m.MaxOutputTokens)
	}
	if d := m.Identity.Digest; d != "" && d != m.IdentityDigest() {
		p.Add("identity.digest", "%.12s does not match the identity fields (computed %.12s): the matrix was edited", d, m.IdentityDigest())
	}
	if s := m.Stopped; s != nil {
		switch s.Reason {
		case "error", "canceled", "timeout":
		default:
			p.Add("stopped.reason", "unknown reason %q (want error, canceled or timeout)", s.Reason)
		}
	}
}

// validatePrefill checks the prefill rows: one per context, each with
// the figures a valid row stands on.
func (m *Matrix) validatePrefill(p *receipts.Problems) {
	seenPrefill := map[string]int{}
	for i, r := range m.Prefill {
		path := fmt.Sprintf("prefill[%d]", i)
		m.validateContext(p, path, r.Context, r.ContextTokens)
		if j, dup := seenPrefill[r.Context]; dup {
			p.Add(path+".context", "%s again (also prefill[%d])", r.Context, j)
		}
		seenPrefill[r.Context] = i
		if r.Requests < 1 {
			p.Add(path+".requests_at_once", "%d is below 1", r.Requests)
		}
		m.validateStatus(p, path, r.Status, r.Reason)
		if r.Samples < 0 {
			p.Add(path+".samples", "negative (%d)", r.Samples)
		}
		nonNegInt(p, path+".prompt_tokens", r.PromptTokens)
		nonNeg(p, path+".ttft_ms", r.TTFTMs)
		nonNeg(p, path+".tok_s", r.TokS)
		if r.Status == Valid {
			need(p, path, "tok_s", r.TokS != nil)
			need(p, path, "ttft_ms", r.TTFTMs != nil)
		}
	}
}

// validateCells checks the cells: one per context and concurrency, each
// with figures finite and not negative, and the figures its verdict
// stands on present.
func (m *Matrix) validateCells(p *receipts.Problems) {
	seen := map[cellKey]int{}
	for i, c := range m.Cells {
		path := fmt.Sprintf("cells[%d]", i)
		m.validateContext(p, path, c.Context, c.ContextTokens)
		if c.Concurrency < 1 {
			p.Add(path+".requests_at_once", "%d is below 1", c.Concurrency)
		}
		k := cellKey{c.Context, c.Concurrency}
		if j, dup := seen[k]; dup {
			p.Add(path, "cell %s again (also cells[%d])", k, j)
		}
		seen[k] = i
		m.validateStatus(p, path, c.Status, c.Reason)
		if c.CompletedRequests < 0 {
			p.Add(path+".completed_requests", "negative (%d)", c.CompletedRequests)
		}
		nonNegInt(p, path+".output_tokens", c.OutputTokens)
		for _, f := range []struct {
			name string
			v    *float64
		}{
			{"total_tok_s", c.TotalTokS}, {"per_request_tok_s", c.PerRequestTokS}, {"ttft_ms", c.TTFTMs},
			{"time_between_tokens_ms", c.TimeBetweenTokensMs}, {"average_active_requests", c.AverageActive}, {"measured_seconds", c.MeasuredSeconds},
		} {
			nonNeg(p, path+"."+f.name, f.v)
		}
		validateServe(p, path+".vllm_bench_serve", c.Serve)
		// A figure the verdict stands on must be there.
		if c.Status == Valid || c.Status == RequestsQueued {
			need(p, path, "total_tok_s", c.TotalTokS != nil)
			need(p, path, "measured_seconds", c.MeasuredSeconds != nil)
		}
	}
}

func (m *Matrix) validateContext(p *receipts.Problems, path, label string, tokens int) {
	if _, ok := ContextSize(label); !ok {
		p.Add(path+".context", "%q is not a context label such as 8K", label)
	}
	if tokens < 0 {
		p.Add(path+".context_tokens", "negative (%d)", tokens)
	} else if tokens > 0 && ContextLabel(tokens) != label {
		p.Add(path+".context", "%q, but context_tokens %d is labelled %s", label, tokens, ContextLabel(tokens))
	}
}

func (m *Matrix) validateStatus(p *receipts.Problems, path string, s Status, reason string) {
	if !s.Known() {
		p.Add(path+".status", "unknown status %q", s)
		return
	}
	// A published page gives no reasons; vetbench always says why.
	if m.Source == SourceVetbench && s != Valid && reason == "" {
		p.Add(path+".reason", "empty: a %s cell says why", s.Label())
	}
}

func need(p *receipts.Problems, path, field string, ok bool) {
	if !ok {
		p.Add(path+"."+field, "missing")
	}
}

func nonNeg(p *receipts.Problems, path string, v *float64) {
	if v != nil && (bad(*v) || *v < 0) {
		p.Add(path, "%v is not a finite number >= 0", *v)
	}
}

func nonNegInt(p *receipts.Problems, path string, v *int) {
	if v != nil && *v < 0 {
		p.Add(path, "negative (%d)", *v)
	}
}

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

// validateServe checks a cell's optional `vllm bench serve` block: when
// present (it is absent in older files and a published CSV), its
// definitions and its figures are finite and not negative.
func validateServe(p *receipts.Problems, path string, s *tokens.Serve) {
	if s == nil {
		return
	}
	if s.Definitions != tokens.DefinitionsServe {
		p.Add(path+".definitions", "%q is not %q", s.Definitions, tokens.DefinitionsServe)
	}
	if s.Completed < 1 || s.Failed < 0 {
		p.Add(path, "completed %d, failed %d: a block needs a completed request", s.Completed, s.Failed)
	}
	figures := map[string]float64{
		"duration": s.Duration, "mean_ttft_ms": s.MeanTTFTMs, "median_ttft_ms": s.MedianTTFTMs, "p99_ttft_ms": s.P99TTFTMs,
		"mean_tpot_ms": s.MeanTPOTMs, "median_tpot_ms": s.MedianTPOTMs, "p99_tpot_ms": s.P99TPOTMs,
		"mean_itl_ms": s.MeanITLMs, "median_itl_ms": s.MedianITLMs, "p99_itl_ms": s.P99ITLMs,
		"mean_e2el_ms": s.MeanE2ELMs, "median_e2el_ms": s.MedianE2ELMs, "p99_e2el_ms": s.P99E2ELMs,
	}
	for _, name := range slices.Sorted(maps.Keys(figures)) {
		if v := figures[name]; bad(v) || v < 0 {
			p.Add(path+"."+name, "%v is not a finite number >= 0", v)
		}
	}
}
