package matrix

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/receipts"
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

const maxProblems = 20

type problems struct {
	file string
	errs []error
	more int
}

func (p *problems) add(path, format string, args ...any) {
	if len(p.errs) >= maxProblems {
		p.more++
		return
	}
	p.errs = append(p.errs, &receipts.SchemaError{File: p.file, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (p *problems) err() error {
	if p.more > 0 {
		p.errs = append(p.errs, &receipts.SchemaError{File: p.file, Msg: fmt.Sprintf("… and %d more problems", p.more)})
	}
	return errors.Join(p.errs...)
}

// Validate reports what makes a matrix unusable, naming each field by its
// path; the error joins one *receipts.SchemaError per problem.
func (m *Matrix) Validate() error { return m.validate("") }

func (m *Matrix) validate(file string) error {
	p := &problems{file: file}
	if m == nil {
		p.add("", "no matrix")
		return p.err()
	}
	if m.Schema != Schema {
		p.add("schema", "%q is not %q", m.Schema, Schema)
	}
	switch m.Source {
	case SourceVetbench, SourcePublished:
	default:
		p.add("source", "unknown source %q (want %s or %s)", m.Source, SourceVetbench, SourcePublished)
	}
	if !m.Started.IsZero() && !m.Finished.IsZero() && m.Finished.Before(m.Started) {
		p.add("finished_utc", "%s is before started_utc %s", m.Finished, m.Started)
	}
	switch m.Target.Kind {
	case receipts.TargetLive, receipts.TargetContainer, receipts.TargetInProcess:
	default:
		p.add("target.kind", "unknown target kind %q", m.Target.Kind)
	}
	if e := m.Target.Endpoint; e != "" {
		if u, err := url.Parse(e); err != nil || u.User != nil || u.RawQuery != "" {
			p.add("target.endpoint", "not a URL without credentials or query")
		}
	}
	if strings.ContainsAny(m.Description, "\r\n") {
		p.add("description", "holds a line break; it is one line")
	}
	if bad(m.DurationSeconds) || m.DurationSeconds < 0 {
		p.add("duration_seconds", "%v is not a finite number >= 0", m.DurationSeconds)
	}
	if m.MaxOutputTokens < 0 {
		p.add("max_output_tokens", "negative (%d)", m.MaxOutputTokens)
	}
	if d := m.Identity.Digest; d != "" && d != m.IdentityDigest() {
		p.add("identity.digest", "%.12s does not match the identity fields (computed %.12s): the matrix was edited", d, m.IdentityDigest())
	}
	if s := m.Stopped; s != nil {
		switch s.Reason {
		case "error", "canceled", "timeout":
		default:
			p.add("stopped.reason", "unknown reason %q (want error, canceled or timeout)", s.Reason)
		}
	}
	seenPrefill := map[string]int{}
	for i, r := range m.Prefill {
		path := fmt.Sprintf("prefill[%d]", i)
		m.validateContext(p, path, r.Context, r.ContextTokens)
		if j, dup := seenPrefill[r.Context]; dup {
			p.add(path+".context", "%s again (also prefill[%d])", r.Context, j)
		}
		seenPrefill[r.Context] = i
		if r.Requests < 1 {
			p.add(path+".requests_at_once", "%d is below 1", r.Requests)
		}
		m.validateStatus(p, path, r.Status, r.Reason)
		if r.Samples < 0 {
			p.add(path+".samples", "negative (%d)", r.Samples)
		}
		nonNegInt(p, path+".prompt_tokens", r.PromptTokens)
		nonNeg(p, path+".ttft_ms", r.TTFTMs)
		nonNeg(p, path+".tok_s", r.TokS)
		if r.Status == Valid {
			need(p, path, "tok_s", r.TokS != nil)
			need(p, path, "ttft_ms", r.TTFTMs != nil)
		}
	}
	seen := map[cellKey]int{}
	for i, c := range m.Cells {
		path := fmt.Sprintf("cells[%d]", i)
		m.validateContext(p, path, c.Context, c.ContextTokens)
		if c.Concurrency < 1 {
			p.add(path+".requests_at_once", "%d is below 1", c.Concurrency)
		}
		k := cellKey{c.Context, c.Concurrency}
		if j, dup := seen[k]; dup {
			p.add(path, "cell %s again (also cells[%d])", k, j)
		}
		seen[k] = i
		m.validateStatus(p, path, c.Status, c.Reason)
		if c.CompletedRequests < 0 {
			p.add(path+".completed_requests", "negative (%d)", c.CompletedRequests)
		}
		nonNegInt(p, path+".output_tokens", c.OutputTokens)
		for _, f := range []struct {
			name string
			v    *float64
		}{
			{"total_tok_s", c.TotalTokS}, {"per_request_tok_s", c.PerRequestTokS}, {"ttft_ms", c.TTFTMs},
			{"time_between_tokens_ms", c.TimeBetweenTokensMs}, {"average_active_requests", c.AverageActive},
			{"measured_seconds", c.MeasuredSeconds},
		} {
			nonNeg(p, path+"."+f.name, f.v)
		}
		// A figure the verdict stands on must be there.
		if c.Status == Valid || c.Status == RequestsQueued {
			need(p, path, "total_tok_s", c.TotalTokS != nil)
			need(p, path, "measured_seconds", c.MeasuredSeconds != nil)
		}
	}
	return p.err()
}

func (m *Matrix) validateContext(p *problems, path, label string, tokens int) {
	if _, ok := ContextSize(label); !ok {
		p.add(path+".context", "%q is not a context label such as 8K", label)
	}
	if tokens < 0 {
		p.add(path+".context_tokens", "negative (%d)", tokens)
	} else if tokens > 0 && ContextLabel(tokens) != label {
		p.add(path+".context", "%q, but context_tokens %d is labelled %s", label, tokens, ContextLabel(tokens))
	}
}

func (m *Matrix) validateStatus(p *problems, path string, s Status, reason string) {
	if !s.Known() {
		p.add(path+".status", "unknown status %q", s)
		return
	}
	// A published page gives no reasons; vetbench always says why.
	if m.Source == SourceVetbench && s != Valid && reason == "" {
		p.add(path+".reason", "empty: a %s cell says why", s.Label())
	}
}

func need(p *problems, path, field string, ok bool) {
	if !ok {
		p.add(path+"."+field, "missing")
	}
}

func nonNeg(p *problems, path string, v *float64) {
	if v != nil && (bad(*v) || *v < 0) {
		p.add(path, "%v is not a finite number >= 0", *v)
	}
}

func nonNegInt(p *problems, path string, v *int) {
	if v != nil && *v < 0 {
		p.add(path, "negative (%d)", *v)
	}
}

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
