package tokens

import (
	"encoding/hex"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"strings"

	"github.com/vetbench/vetbench/receipts"
)

// relTolerance is how far a stored figure may sit from its recomputation
// (float rounding of another writer, never an edit).
const relTolerance = 1e-9

// Validate reports what makes a receipt unusable, naming each field by its
// path; the error joins one *receipts.SchemaError per problem.
func (r *Receipt) Validate() error { return r.validate("") }

func (r *Receipt) validate(file string) error {
	p := &receipts.Problems{File: file}
	if r == nil {
		p.Add("", "no receipt")
		return p.Err()
	}
	if r.Schema != Schema {
		p.Add("schema", "%q is not %q", r.Schema, Schema)
	}
	switch r.Source {
	case SourceVetbench, SourcePublished:
	case SourceVLLM:
		// vLLM's own figures, read from its result file: only its block.
		if r.Summary.Serve == nil {
			p.Add("summary.vllm_bench_serve", "missing")
		}
		return p.Err()
	default:
		p.Add("source", "unknown source %q (want %s, %s or %s)", r.Source, SourceVetbench, SourcePublished, SourceVLLM)
	}
	if !r.Started.IsZero() && !r.Finished.IsZero() && r.Finished.Before(r.Started) {
		p.Add("finished_utc", "%s is before started_utc %s", r.Finished, r.Started)
	}
	validateTarget(p, "target", r.Target)
	r.validateIdentity(p)
	r.validatePoint(p)
	r.validateRuns(p)
	r.validateSummary(p)
	return p.Err()
}

// validateTarget checks a receipts.Target the way receipts does.
func validateTarget(p *receipts.Problems, path string, t receipts.Target) {
	switch t.Kind {
	case receipts.TargetLive, receipts.TargetContainer, receipts.TargetInProcess:
	default:
		p.Add(path+".kind", "unknown target kind %q", t.Kind)
	}
	if bad(t.TimeScale) || t.TimeScale < 0 {
		p.Add(path+".time_scale", "%v is not a finite number >= 0", t.TimeScale)
	}
	if t.Endpoint != "" {
		if u, err := url.Parse(t.Endpoint); err != nil {
			p.Add(path+".endpoint", "not a URL")
		} else if u.User != nil || u.RawQuery != "" {
			p.Add(path+".endpoint", "holds credentials or a query; receipts never do")
		}
	}
}

func (r *Receipt) validateIdentity(p *receipts.Problems) {
	id := r.Identity
	if id.PromptDigest != "" && !isDigest(id.PromptDigest) {
		p.Add("identity.prompt_digest", "%q is not a hex sha256", id.PromptDigest)
	}
	switch id.CacheIsolation {
	case "", CacheUniquePrompts, CacheReset, CacheSharedPrompts:
	default:
		p.Add("identity.cache_isolation", "unknown %q (want %s, %s or %s)", id.CacheIsolation, CacheUniquePrompts, CacheReset, CacheSharedPrompts)
	}
	if id.Digest != "" {
		if want := r.IdentityDigest(); id.Digest != want {
			p.Add("identity.digest", "%.12s does not match the identity fields (computed %.12s): the receipt was edited", id.Digest, want)
		}
	}
}

func (r *Receipt) validatePoint(p *receipts.Problems) {
	pt := r.Point
	switch pt.Workload {
	case WorkloadText, WorkloadOneImage:
	default:
		p.Add("point.workload", "unknown workload %q (want %s or %s)", pt.Workload, WorkloadText, WorkloadOneImage)
	}
	if pt.Concurrency < 1 {
		p.Add("point.concurrency", "%d is below 1", pt.Concurrency)
	}
	if pt.OutputTokens < 1 {
		p.Add("point.output_tokens", "%d is below 1", pt.OutputTokens)
	}
	if pt.Repeats < 1 {
		p.Add("point.repeats", "%d is below 1", pt.Repeats)
	}
	want := pt.Repeats
	if s := r.Stopped; s != nil {
		switch s.Reason {
		case "error", "canceled", "timeout":
		default:
			p.Add("stopped.reason", "unknown reason %q (want error, canceled or timeout)", s.Reason)
		}
		if s.Runs < 0 || s.Runs > pt.Repeats {
			p.Add("stopped.runs", "%d is outside [0, repeats %d]", s.Runs, pt.Repeats)
		}
		want = s.Runs
	}
	switch {
	case len(r.Runs) == want:
	case r.Stopped != nil:
		p.Add("runs", "%d runs, but stopped.runs is %d", len(r.Runs), want)
	default:
		p.Add("runs", "%d runs, but the point asked %d repeats and did not stop", len(r.Runs), pt.Repeats)
	}
}

func (r *Receipt) validateRuns(p *receipts.Problems) {
	pt := r.Point
	for i, run := range r.Runs {
		path := fmt.Sprintf("runs[%d]", i)
		if bad(run.WallSeconds) || run.WallSeconds <= 0 {
			p.Add(path+".wall_seconds", "%v is not a finite number > 0", run.WallSeconds)
		}
		for _, c := range []struct {
			name string
			n    int
		}{{"generated_tokens", run.GeneratedTokens}, {"verified_tokens", run.VerifiedTokens}, {"failed", run.Failed}, {"short", run.Short}} {
			if c.n < 0 {
				p.Add(path+"."+c.name, "negative (%d)", c.n)
			}
		}
		if run.VerifiedTokens > run.GeneratedTokens {
			p.Add(path+".verified_tokens", "%d is more than generated_tokens %d", run.VerifiedTokens, run.GeneratedTokens)
		}
		if run.WallSeconds > 0 && !near(run.OutputTokS, float64(run.GeneratedTokens)/run.WallSeconds) {
			p.Add(path+".output_tok_s", "%v, but generated_tokens ÷ wall_seconds is %v", run.OutputTokS, float64(run.GeneratedTokens)/run.WallSeconds)
		}
		if m := run.GPUMemoryMiBAfter; m != nil && (bad(*m) || *m < 0) {
			p.Add(path+".gpu_memory_mib_after", "%v is not a finite number >= 0", *m)
		}
		switch r.Source {
		case SourcePublished:
			if len(run.Requests) > 0 {
				p.Add(path+".requests", "a published point has no request samples")
			}
			if full := pt.Concurrency * pt.OutputTokens; pt.Concurrency > 0 && run.GeneratedTokens != full {
				p.Add(path+".generated_tokens", "%d, but %d requests of %d tokens make %d", run.GeneratedTokens, pt.Concurrency, pt.OutputTokens, full)
			}
			if run.VerifiedTokens != run.GeneratedTokens || run.Failed != 0 || run.Short != 0 {
				p.Add(path+".verified_tokens", "a published run is verified whole: %d verified of %d, %d failed, %d short", run.VerifiedTokens, run.GeneratedTokens, run.Failed, run.Short)
			}
		case SourceVetbench:
			r.validateRequests(p, path, run)
		}
	}
}

func (r *Receipt) validateRequests(p *receipts.Problems, path string, run Run) {
	pt := r.Point
	if len(run.Requests) != pt.Requests() {
		p.Add(path+".requests", "%d requests, but the run sends %d", len(run.Requests), pt.Requests())
	}
	for j, q := range run.Requests {
		qp := fmt.Sprintf("%s.requests[%d]", path, j)
		if q.OutputTokens < 0 {
			p.Add(qp+".output_tokens", "negative (%d)", q.OutputTokens)
		}
		if q.PromptTokens < 0 {
			p.Add(qp+".prompt_tokens", "negative (%d)", q.PromptTokens)
		}
		if bad(q.E2ESeconds) || q.E2ESeconds < 0 {
			p.Add(qp+".e2e_seconds", "%v is not a finite number >= 0", q.E2ESeconds)
		}
		if v := q.FirstTextSeconds; v != nil && (bad(*v) || *v < 0 || *v > q.E2ESeconds) {
			p.Add(qp+".first_text_seconds", "%v is outside [0, e2e_seconds %v]", *v, q.E2ESeconds)
		}
		if v := q.TimeBetweenTokensSeconds; v != nil && (bad(*v) || *v < 0) {
			p.Add(qp+".time_between_tokens_seconds", "%v is not a finite number >= 0", *v)
		}
		validateServeRecord(p, qp, q)
		if (q.Error == "") != (q.ErrorClass == "") {
			p.Add(qp+".error_class", "%q with error %q: both or neither", q.ErrorClass, q.Error)
		}
	}
	want := NewRun(pt, run.WallSeconds, run.Requests)
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"generated_tokens", run.GeneratedTokens, want.GeneratedTokens},
		{"verified_tokens", run.VerifiedTokens, want.VerifiedTokens},
		{"failed", run.Failed, want.Failed},
		{"short", run.Short, want.Short},
	} {
		if c.got != c.want {
			p.Add(path+"."+c.name, "%d, but its requests give %d", c.got, c.want)
		}
	}
}

func (r *Receipt) validateSummary(p *receipts.Problems) {
	got, want := r.Summary, Summarize(r.Point, r.Runs)
	ints := []struct {
		name      string
		got, want int
	}{
		{"requests", got.Requests, want.Requests},
		{"failed", got.Failed, want.Failed},
		{"short", got.Short, want.Short},
		{"total_verified_output_tokens", got.TotalVerifiedOutputTokens, want.TotalVerifiedOutputTokens},
	}
	for _, c := range ints {
		if c.got != c.want {
			p.Add("summary."+c.name, "%d, but the runs give %d", c.got, c.want)
		}
	}
	floats := []struct {
		name      string
		got, want float64
	}{
		{"aggregate_output_tok_s", got.AggregateOutputTokS, want.AggregateOutputTokS},
		{"per_request_output_tok_s", got.PerRequestOutputTokS, want.PerRequestOutputTokS},
		{"mean_completion_seconds", got.MeanCompletionSeconds, want.MeanCompletionSeconds},
		{"mean_batch_ms_per_token", got.MeanBatchMsPerToken, want.MeanBatchMsPerToken},
	}
	for _, c := range floats {
		if !near(c.got, c.want) {
			p.Add("summary."+c.name, "%v, but the runs give %v", c.got, c.want)
		}
	}
	switch {
	case (got.PeakGPUMemoryMiB == nil) != (want.PeakGPUMemoryMiB == nil):
		p.Add("summary.peak_observed_gpu_memory_mib", "present on one side only: the runs give %v", fmtPtr(want.PeakGPUMemoryMiB))
	case got.PeakGPUMemoryMiB != nil && !near(*got.PeakGPUMemoryMiB, *want.PeakGPUMemoryMiB):
		p.Add("summary.peak_observed_gpu_memory_mib", "%v, but the runs' peak is %v", *got.PeakGPUMemoryMiB, *want.PeakGPUMemoryMiB)
	}
	for _, d := range []struct {
		name      string
		got, want *Dist
	}{
		{"first_text_ms", got.FirstTextMs, want.FirstTextMs},
		{"time_between_tokens_ms", got.TimeBetweenTokensMs, want.TimeBetweenTokensMs},
		{"e2e_ms", got.E2EMs, want.E2EMs},
		{"request_output_tok_s", got.RequestOutputTokS, want.RequestOutputTokS},
	} {
		if !sameDist(d.got, d.want) {
			p.Add("summary."+d.name, "%s, but the requests give %s", fmtDist(d.got), fmtDist(d.want))
		}
	}
	if !sameGoodput(got.Goodput, want.Goodput) {
		p.Add("summary.goodput", "%s, but the requests and point.slo give %s", fmtGoodput(got.Goodput), fmtGoodput(want.Goodput))
	}
	if r.Source != SourceVLLM {
		if diff := serveDiff(got.Serve, want.Serve); diff != "" {
			p.Add("summary.vllm_bench_serve."+diff, "differs from what the requests give")
		}
	}
}

// validateServeRecord checks one request's `vllm bench serve` record.
func validateServeRecord(p *receipts.Problems, qp string, q Request) {
	if bad(q.StartSeconds) || q.StartSeconds < 0 {
		p.Add(qp+".start_seconds", "%v is not a finite number >= 0", q.StartSeconds)
	}
	if bad(q.LatencySeconds) || q.LatencySeconds < 0 {
		p.Add(qp+".latency_seconds", "%v is not a finite number >= 0", q.LatencySeconds)
	}
	if v := q.TTFTSeconds; v != nil && (bad(*v) || *v < 0 || *v > q.LatencySeconds) {
		p.Add(qp+".ttft_seconds", "%v is outside [0, latency_seconds %v]", *v, q.LatencySeconds)
	}
	for k, g := range q.ITLSeconds {
		if bad(g) || g < 0 {
			p.Add(fmt.Sprintf("%s.itl_seconds[%d]", qp, k), "%v is not a finite number >= 0", g)
			return
		}
	}
}

// serveDiff names the first field of two Serve blocks that differs
// beyond float rounding; "" when they agree.
func serveDiff(a, b *Serve) string {
	if a == nil || b == nil {
		if a != b {
			return "present"
		}
		return ""
	}
	av, bv := reflect.ValueOf(*a), reflect.ValueOf(*b)
	for i := range av.NumField() {
		if !av.Type().Field(i).IsExported() {
			continue // not in the receipt
		}
		name := strings.Split(av.Type().Field(i).Tag.Get("json"), ",")[0]
		if !sameValue(av.Field(i).Interface(), bv.Field(i).Interface()) {
			return name
		}
	}
	return ""
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		return near(x, b.(float64))
	case *float64:
		y := b.(*float64)
		return (x == nil) == (y == nil) && (x == nil || near(*x, *y))
	case map[string]float64:
		y := b.(map[string]float64)
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !near(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

func sameGoodput(a, b *Goodput) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Within == b.Within && a.Of == b.Of && near(a.Share, b.Share) && near(a.PerSecond, b.PerSecond) &&
		(a.Met == nil) == (b.Met == nil) && (a.Met == nil || *a.Met == *b.Met)
}

func fmtGoodput(g *Goodput) string {
	if g == nil {
		return "none"
	}
	return fmt.Sprintf("{%d of %d, share %v}", g.Within, g.Of, g.Share)
}

func sameDist(a, b *Dist) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.N == b.N && near(a.Mean, b.Mean) && near(a.P50, b.P50) && near(a.P90, b.P90) &&
		near(a.P99, b.P99) && near(a.Max, b.Max)
}

func fmtDist(d *Dist) string {
	if d == nil {
		return "none"
	}
	return fmt.Sprintf("{n %d mean %v p50 %v p90 %v p99 %v max %v}", d.N, d.Mean, d.P50, d.P90, d.P99, d.Max)
}

func fmtPtr(v *float64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprint(*v)
}

// near reports a and b equal within relTolerance (and both finite).
func near(a, b float64) bool {
	if bad(a) || bad(b) {
		return false
	}
	return math.Abs(a-b) <= relTolerance*max(math.Abs(a), math.Abs(b))+1e-12
}

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

func isDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
