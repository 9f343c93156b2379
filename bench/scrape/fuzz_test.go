package scrape

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vetbench/vetbench/receipts"
)

// FuzzDiff feeds arbitrary after-pages against a small before-page to
// FromText, Diff and CacheConfig: they must never panic, a failed parse
// must be carried by its snapshot, a status must always be set, and what
// Diff returns must be a server block a receipt can hold (JSON: no NaN or
// infinity; finite counters and histograms, hit rates in [0,1]), or the
// run would lose its receipt at write time. Seeds are small after-pages in
// testdata/fuzz/FuzzDiff (a window as vLLM writes it, and the ways a
// window goes wrong: a counter backwards, a recreated series, changed
// bucket edges, a restart, +Inf, another model); the before-page is
// parsed once and inputs stay small, so the fuzzer spends its time on
// shapes. -fuzzminimizetime is a count: minimizing each new input for up
// to 60 s, the default, leaves no time to fuzz.
//
//	go test ./bench/scrape -run '^$' -fuzz '^FuzzDiff$' -fuzztime 60s -fuzzminimizetime 200x
func FuzzDiff(f *testing.F) {
	f.Add("# TYPE vllm:e2e_request_latency_seconds histogram\nvllm:e2e_request_latency_seconds_count 3\n")
	f.Add("vllm:prompt_tokens_total NaN\nvllm:prompt_tokens_created +Inf\n")
	before := fuzzSnap(f, seedBefore)
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4<<10 {
			t.Skip("long inputs add no shapes")
		}
		after := fuzzSnap(t, text)
		srv := Diff(before, after)
		switch {
		case srv.Status == StatusOK, strings.HasPrefix(srv.Status, "partial: "), strings.HasPrefix(srv.Status, "unknown: "):
		default:
			t.Fatalf("status %q", srv.Status)
		}
		checkServer(t, srv)
		_ = CacheConfig(after)
	})
}

func fuzzSnap(t testing.TB, text string) Snapshot {
	s, err := FromText(strings.NewReader(text), time.Unix(0, 0))
	if err != nil && s.Err == nil {
		t.Fatal("a failed parse must be carried by the snapshot")
	}
	return s
}

// checkServer holds Diff's output to what a receipt can hold: no NaN or
// infinity in any float of receipts.Server (JSON has neither), and what
// receipts.Validate requires of a server block. A walk, not json.Marshal:
// the fuzzer calls it on every input.
func checkServer(t testing.TB, srv receipts.Server) {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	badp := func(p *float64) bool { return p != nil && bad(*p) }
	for k, v := range srv.Counters {
		if bad(v) {
			t.Fatalf("counter %s is %v", k, v)
		}
	}
	for k, v := range srv.Extra {
		if bad(v) {
			t.Fatalf("extra %s is %v", k, v)
		}
	}
	for k, e := range srv.Engines {
		if bad(e.RequestSuccess) {
			t.Fatalf("engine %s: request_success %v", k, e.RequestSuccess)
		}
	}
	for k, g := range srv.Gauges {
		if badp(g.Before) || badp(g.After) {
			t.Fatalf("gauge %s: %v, %v", k, *g.Before, *g.After)
		}
	}
	for k, h := range srv.Histograms {
		if bad(h.Count) || h.Count < 0 || bad(h.Sum) || h.Sum < 0 {
			t.Fatalf("histogram %s: count %v, sum %v", k, h.Count, h.Sum)
		}
		for _, q := range []*receipts.Quantiles{h.UpperBound, h.Interpolated} {
			if q != nil && (badp(q.P50) || badp(q.P95) || badp(q.P99)) {
				t.Fatalf("histogram %s: quantiles %+v", k, *q)
			}
		}
	}
	for _, r := range []*float64{srv.PrefixCacheHitRate, srv.MMCacheHitRate} {
		if r != nil && !(*r >= 0 && *r <= 1) {
			t.Fatalf("hit rate %v", *r)
		}
	}
}

// seedBefore is a small before-page: the families Diff reads, as vLLM
// writes them.
const seedBefore = `# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.79000118e+09
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 1.0
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 100.0
vllm:prefix_cache_queries_created{engine="0",model_name="m"} 1.79e+09
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 40.0
vllm:prefix_cache_hits_created{engine="0",model_name="m"} 1.79e+09
# TYPE vllm:request_success counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 10.0
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.5",model_name="m"} 2.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 10.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="m"} 10.0
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="m"} 7.5
`
