package scrape

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

// The two pages are a vLLM 0.30-style exposition (prometheus_client text
// 0.0.4, global registry: a <name>_created gauge block after every counter
// and histogram), two data-parallel engines, a KV connector. The window
// deltas they were built from are in testdata/README.md; the figures below
// are those, worked out by hand, not read back from the code.
const (
	beforePage = "vllm_dp2_before.prom"
	afterPage  = "vllm_dp2_after.prom"
)

func page(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

func snap(t testing.TB, text string) Snapshot {
	t.Helper()
	s, err := FromText(strings.NewReader(text), time.Unix(0, 0))
	require.NoError(t, err)
	return s
}

// replaceLine swaps the one line that starts with prefix; it fails when the
// line is missing or not unique, so a mutation can never silently be a no-op.
func replaceLine(t testing.TB, text, prefix, line string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(prefix) + `.*$`)
	require.Len(t, re.FindAllString(text, -1), 1, "line starting %q", prefix)
	return re.ReplaceAllLiteralString(text, line)
}

// dropLines deletes every line that starts with prefix (at least one).
func dropLines(t testing.TB, text, prefix string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(prefix) + `.*\n`)
	require.NotEmpty(t, re.FindAllString(text, -1), "lines starting %q", prefix)
	return re.ReplaceAllString(text, "")
}

func TestDiffRealisticExposition(t *testing.T) {
	srv := Diff(snap(t, page(t, beforePage)), snap(t, page(t, afterPage)))

	require.Equal(t, StatusOK, srv.Status)
	require.Empty(t, srv.Problems)
	// Counters: summed over engines and finished_reason; _created stamps
	// (≈1.79e9) compared, never added.
	require.Equal(t, map[string]float64{
		PrefixCacheQueries: 122730,
		PrefixCacheHits:    67008,
		MMCacheQueries:     360,
		MMCacheHits:        260,
		PromptTokens:       122730,
		PromptTokensCached: 107008,
		GenerationTokens:   180,
		RequestSuccess:     180,
		Preemptions:        3,
	}, srv.Counters)
	// Local tier only: folding in the external tier would give
	// (67008+40000)/(122730+55722) = 0.5996.
	require.NotNil(t, srv.PrefixCacheHitRate)
	require.InDelta(t, 67008.0/122730, *srv.PrefixCacheHitRate, 1e-12)
	require.NotNil(t, srv.MMCacheHitRate)
	require.InDelta(t, 260.0/360, *srv.MMCacheHitRate, 1e-12)
	require.Equal(t, 55722.0, srv.Extra[ExtraExternalQueries])
	require.Equal(t, 40000.0, srv.Extra[ExtraExternalHits])
	require.InDelta(t, 40000.0/55722, srv.Extra[ExtraExternalHitRate], 1e-12)
	require.Equal(t, 178.0, srv.Extra[ExtraRequestSuccessPrefix+"stop"])
	require.Equal(t, 2.0, srv.Extra[ExtraRequestSuccessPrefix+"length"])
	require.Equal(t, 0.0, srv.Extra[ExtraRequestSuccessPrefix+"abort"])
	// Per engine: each has its own prefix cache; the engines' figures sum to
	// the overall ones, and the overall rate is their hits over queries.
	require.Len(t, srv.Engines, 2)
	e0, e1 := srv.Engines["0"], srv.Engines["1"]
	require.Equal(t, []float64{92, 62731, 34000}, []float64{e0.RequestSuccess, e0.PrefixCacheQueries, e0.PrefixCacheHits})
	require.Equal(t, []float64{88, 59999, 33008}, []float64{e1.RequestSuccess, e1.PrefixCacheQueries, e1.PrefixCacheHits})
	require.InDelta(t, 34000.0/62731, *e0.PrefixCacheHitRate, 1e-12)
	require.InDelta(t, 33008.0/59999, *e1.PrefixCacheHitRate, 1e-12)
	require.Equal(t, srv.Counters[PrefixCacheHits], e0.PrefixCacheHits+e1.PrefixCacheHits)
	require.Equal(t, srv.Counters[PrefixCacheQueries], e0.PrefixCacheQueries+e1.PrefixCacheQueries)
	require.InDelta(t, *srv.PrefixCacheHitRate, (e0.PrefixCacheHits+e1.PrefixCacheHits)/(e0.PrefixCacheQueries+e1.PrefixCacheQueries), 1e-15)

	// Gauges: running/waiting summed over engines, KV usage the higher engine.
	require.Equal(t, 3.0, *srv.Gauges[GaugeRequestsRunning].Before)
	require.Equal(t, 0.0, *srv.Gauges[GaugeRequestsRunning].After)
	require.Equal(t, 0.0, *srv.Gauges[GaugeRequestsWaiting].Before)
	require.Equal(t, 1.0, *srv.Gauges[GaugeRequestsWaiting].After)
	require.Equal(t, 0.0, *srv.Gauges[GaugeKVCacheUsage].Before)
	require.Equal(t, 0.02, *srv.Gauges[GaugeKVCacheUsage].After)

	// e2e delta (both engines): ≤0.3:10 ≤0.5:90 ≤0.8:40 ≤1:20 ≤1.5:10 ≤2:4
	// ≤2.5:5 ≤5:1 → cumulative 10 100 140 160 170 174 179 180.
	type want struct {
		count, sum    float64
		ub, interp    [3]float64 // p50 p95 p99
		optionalCheck bool
	}
	for key, w := range map[string]want{
		// ub: ranks 90, 171, 179 → 0.5, 2.0, 2.5. interp: rank 90 in
		// (0.3,0.5] with 10 below and 90 inside → 0.3+0.2·80/90; rank 171
		// in (1.5,2] → 1.5+0.5·1/4; rank 178.2 in (2,2.5] → 2+0.5·4.2/5.
		HistE2E: {count: 180, sum: 139.33619737625122, ub: [3]float64{0.5, 2.0, 2.5}, interp: [3]float64{0.3 + 0.2*80/90, 1.625, 2.42}},
		// all 180 in the first bucket (0, 0.3]: interp q·0.3.
		HistQueue: {count: 180, sum: 0.004182375967502594, ub: [3]float64{0.3, 0.3, 0.3}, interp: [3]float64{0.15, 0.285, 0.297}},
		// ≤0.3:120 ≤0.5:30 ≤0.8:10 ≤1:10 ≤1.5:5 ≤2:5 → cum 120 150 160 170 175 180.
		HistPrefill: {count: 180, sum: 104.11733736470342, ub: [3]float64{0.3, 1.5, 2.0}, interp: [3]float64{0.3 * 90 / 120, 1.0 + 0.5*1/5, 1.5 + 0.5*3.2/5}},
		// TTFT edges differ (…0.1, 0.25, 0.5, 0.75, 1.0…): ≤0.1:20 ≤0.25:100
		// ≤0.5:40 ≤0.75:10 ≤1:10 → cum 20 120 160 170 180.
		HistTTFT: {count: 180, sum: 55.5, ub: [3]float64{0.25, 1.0, 1.0}, interp: [3]float64{0.1 + 0.15*70/100, 0.75 + 0.25*1/10, 0.75 + 0.25*8.2/10}},
	} {
		h, ok := srv.Histograms[key]
		require.True(t, ok, key)
		require.Equal(t, StatusOK, h.Status, key)
		require.Equal(t, w.count, h.Count, key)
		require.InDelta(t, w.sum, h.Sum, 1e-9, key)
		for i, got := range []*float64{h.UpperBound.P50, h.UpperBound.P95, h.UpperBound.P99} {
			require.NotNil(t, got, key)
			require.Equal(t, w.ub[i], *got, "%s upper-bound estimate %d", key, i)
		}
		for i, got := range []*float64{h.Interpolated.P50, h.Interpolated.P95, h.Interpolated.P99} {
			require.NotNil(t, got, key)
			require.InDelta(t, w.interp[i], *got, 1e-9, "%s interpolated estimate %d", key, i)
		}
	}
	require.Contains(t, srv.Histograms, HistInference)
	require.Contains(t, srv.Histograms, HistDecode)
}

// TestDiffAmbiguity mutates the after page one way at a time: each
// ambiguity must be named in Problems and take exactly the figures it
// touches, never be guessed around. The clean pair above is the control.
func TestDiffAmbiguity(t *testing.T) {
	const model = `model_name="google/gemma-4-31B-it"`
	tests := []struct {
		name       string
		mutate     func(t testing.TB, after string) string
		status     string // prefix
		problem    string // substring of one problem
		check      func(t *testing.T, srv receipts.Server)
		restartish bool
	}{
		{
			name: "counter went backwards",
			mutate: func(t testing.TB, s string) string {
				return replaceLine(t, s, `vllm:prefix_cache_hits_total{engine="1",`, `vllm:prefix_cache_hits_total{engine="1",`+model+`} 12.0`)
			},
			status:     "unknown: server restarted",
			problem:    `vllm:prefix_cache_hits_total{engine="1",model_name="google/gemma-4-31B-it"} went backwards (601234 before, 12 after)`,
			restartish: true,
		},
		{
			name: "_created changed",
			mutate: func(t testing.TB, s string) string {
				return replaceLine(t, s, `vllm:prompt_tokens_created{engine="1",`, `vllm:prompt_tokens_created{engine="1",`+model+`} 1.7900099e+09`)
			},
			status:     "unknown: server restarted",
			problem:    `vllm:prompt_tokens_created{engine="1",model_name="google/gemma-4-31B-it"} changed (1.7900012346012344e+09 before, 1.7900099e+09 after)`,
			restartish: true,
		},
		{
			name: "histogram _created changed",
			mutate: func(t testing.TB, s string) string {
				return replaceLine(t, s, `vllm:request_queue_time_seconds_created{engine="0",`, `vllm:request_queue_time_seconds_created{engine="0",`+model+`} 1.7900099e+09`)
			},
			status:     "unknown: server restarted",
			problem:    `vllm:request_queue_time_seconds_created{engine="0",model_name="google/gemma-4-31B-it"} changed`,
			restartish: true,
		},
		{
			name: "histogram count went backwards",
			mutate: func(t testing.TB, s string) string {
				return replaceLine(t, s, `vllm:e2e_request_latency_seconds_count{engine="0",`, `vllm:e2e_request_latency_seconds_count{engine="0",`+model+`} 5.0`)
			},
			status:     "unknown: server restarted",
			problem:    `vllm:e2e_request_latency_seconds{engine="0",model_name="google/gemma-4-31B-it"} counts went backwards`,
			restartish: true,
		},
		{
			name: "process restarted",
			mutate: func(t testing.TB, s string) string {
				return replaceLine(t, s, `process_start_time_seconds `, `process_start_time_seconds 1.7900051e+09`)
			},
			status:     "unknown: server restarted",
			problem:    "process_start_time_seconds changed from 1.79000118e+09 to 1.7900051e+09",
			restartish: true,
		},
		{
			name: "another model answered",
			mutate: func(t testing.TB, s string) string {
				return strings.ReplaceAll(s, "google/gemma-4-31B-it", "google/gemma-4-12B-it")
			},
			status:     "unknown: server restarted",
			problem:    `model_name labels changed from ["google/gemma-4-31B-it"] to ["google/gemma-4-12B-it"]`,
			restartish: true,
		},
		{
			name: "bucket edges changed",
			mutate: func(t testing.TB, s string) string {
				re := regexp.MustCompile(`(vllm:e2e_request_latency_seconds_bucket\{engine="\d",)le="0\.8"`)
				require.Len(t, re.FindAllString(s, -1), 2)
				return re.ReplaceAllString(s, `${1}le="0.75"`)
			},
			status:  "partial: 1 problem",
			problem: `vllm:e2e_request_latency_seconds{engine="0",model_name="google/gemma-4-31B-it"} bucket edges changed between readings`,
			check: func(t *testing.T, srv receipts.Server) {
				require.True(t, strings.HasPrefix(srv.Histograms[HistE2E].Status, "unknown: "), srv.Histograms[HistE2E].Status)
				require.Nil(t, srv.Histograms[HistE2E].UpperBound)
				require.Equal(t, StatusOK, srv.Histograms[HistQueue].Status)
				require.Equal(t, 180.0, srv.Counters[RequestSuccess])
			},
		},
		{
			name: "series vanished",
			mutate: func(t testing.TB, s string) string {
				return dropLines(t, s, `vllm:mm_cache_hits_total{engine="1",`)
			},
			status:  "partial: 1 problem",
			problem: `vllm:mm_cache_hits_total{engine="1",model_name="google/gemma-4-31B-it"} present only in the before reading`,
			check: func(t *testing.T, srv receipts.Server) {
				require.NotContains(t, srv.Counters, MMCacheHits)
				require.Nil(t, srv.MMCacheHitRate)
				require.NotNil(t, srv.PrefixCacheHitRate)
			},
		},
		{
			name: "series appeared",
			mutate: func(t testing.TB, s string) string {
				return replaceLine(t, s, `vllm:num_preemptions_total{engine="1",`,
					`vllm:num_preemptions_total{engine="1",`+model+`} 1.0`+"\n"+`vllm:num_preemptions_total{engine="2",`+model+`} 4.0`)
			},
			status:  "partial: 1 problem",
			problem: `vllm:num_preemptions_total{engine="2",model_name="google/gemma-4-31B-it"} present only in the after reading`,
			check: func(t *testing.T, srv receipts.Server) {
				require.NotContains(t, srv.Counters, Preemptions)
			},
		},
		{
			name: "family vanished",
			mutate: func(t testing.TB, s string) string {
				return dropLines(t, s, `vllm:prefix_cache_queries_total`)
			},
			status:  "partial: 1 problem",
			problem: "vllm:prefix_cache_queries_total present only in the before reading",
			check: func(t *testing.T, srv receipts.Server) {
				require.Nil(t, srv.PrefixCacheHitRate)
				require.Equal(t, 67008.0, srv.Counters[PrefixCacheHits])
			},
		},
		{
			name: "counter name typed as gauge",
			mutate: func(t testing.TB, s string) string {
				return replaceLine(t, s, `# TYPE vllm:generation_tokens_total counter`, `# TYPE vllm:generation_tokens_total gauge`)
			},
			status:  "partial: 1 problem",
			problem: "vllm:generation_tokens_total is a gauge, not a counter",
			check: func(t *testing.T, srv receipts.Server) {
				require.NotContains(t, srv.Counters, GenerationTokens)
			},
		},
	}
	before := snap(t, page(t, beforePage))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := Diff(before, snap(t, tt.mutate(t, page(t, afterPage))))
			require.True(t, strings.HasPrefix(srv.Status, tt.status), "status %q", srv.Status)
			require.True(t, containsSub(srv.Problems, tt.problem), "problems %q lack %q", srv.Problems, tt.problem)
			if tt.restartish {
				// No delta survives a restart: nothing guessed.
				require.Nil(t, srv.Counters)
				require.Nil(t, srv.Histograms)
				require.Nil(t, srv.PrefixCacheHitRate)
				require.Nil(t, srv.MMCacheHitRate)
				require.Nil(t, srv.Engines)
				require.NotEmpty(t, srv.Gauges, "point readings are kept")
			}
			if tt.check != nil {
				tt.check(t, srv)
			}
		})
	}
}

func containsSub(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func TestDiffUnreadable(t *testing.T) {
	good := snap(t, page(t, beforePage))
	tests := []struct {
		name          string
		before, after Snapshot
		status        string
		problem       string
	}{
		{"after failed", good, Snapshot{Err: errString("scrape http://x/metrics: HTTP 500: boom")}, "unknown: scrape failed", "after reading: scrape http://x/metrics: HTTP 500: boom"},
		{"before failed", Snapshot{Err: errString("connection refused")}, good, "unknown: scrape failed", "before reading: connection refused"},
		{"not taken", good, Snapshot{}, "unknown: scrape failed", "after reading: not taken"},
		{"not vLLM", good, snap(t, "# TYPE up gauge\nup 1\n"), "unknown: not a vLLM /metrics page", "after reading"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := Diff(tt.before, tt.after)
			require.True(t, strings.HasPrefix(srv.Status, tt.status), "status %q", srv.Status)
			require.Contains(t, srv.Status, tt.problem)
			require.True(t, containsSub(srv.Problems, tt.problem), "%q", srv.Problems)
			require.Nil(t, srv.Counters)
			require.Nil(t, srv.PrefixCacheHitRate)
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestDiffNoQueries(t *testing.T) {
	// The same page twice: every delta is zero, rates are null (not 0),
	// histograms are empty with no percentiles.
	s := snap(t, page(t, beforePage))
	srv := Diff(s, s)
	require.Equal(t, StatusOK, srv.Status)
	require.Nil(t, srv.PrefixCacheHitRate)
	require.Nil(t, srv.MMCacheHitRate)
	require.NotContains(t, srv.Extra, ExtraExternalHitRate)
	require.Equal(t, 0.0, srv.Counters[RequestSuccess])
	e2e := srv.Histograms[HistE2E]
	require.Equal(t, StatusEmpty, e2e.Status)
	require.Nil(t, e2e.UpperBound)
	require.Nil(t, e2e.Interpolated)
}

func TestCacheConfig(t *testing.T) {
	cc := CacheConfig(snap(t, page(t, afterPage)))
	require.Equal(t, "0,1", cc["engine"])
	require.Equal(t, "16", cc["block_size"])
	require.Equal(t, "True", cc["enable_prefix_caching"])
	require.Equal(t, "23456", cc["num_gpu_blocks"])
	require.Len(t, cc, 14)

	// Engines that disagree are spelled out, not resolved.
	text := replaceLine(t, page(t, afterPage), `vllm:cache_config_info{block_size="16",cache_dtype="auto",calculate_kv_scales="False",cpu_offload_gb="0",enable_prefix_caching="True",engine="1"`,
		`vllm:cache_config_info{block_size="32",cache_dtype="auto",calculate_kv_scales="False",cpu_offload_gb="0",enable_prefix_caching="True",engine="1",gpu_memory_utilization="0.9",is_attention_free="False",kv_offloading_backend="None",num_cpu_blocks="None",num_gpu_blocks="23456",num_gpu_blocks_override="None",prefix_caching_hash_algo="sha256",sliding_window="None"} 1.0`)
	require.Equal(t, "engine 0: 16; engine 1: 32", CacheConfig(snap(t, text))["block_size"])

	require.Nil(t, CacheConfig(snap(t, "# TYPE up gauge\nup 1\n")))
	require.Nil(t, CacheConfig(Snapshot{Err: errString("down")}))
}

func TestModelNames(t *testing.T) {
	require.Equal(t, []string{"google/gemma-4-31B-it"}, ModelNames(snap(t, page(t, afterPage))))
}

// More hits than queries is a broken reading: the rate is left unknown and
// said, never clipped to 1 (tally.HitRatio).
func TestDiffHitsAboveQueries(t *testing.T) {
	after := replaceLine(t, page(t, afterPage), `vllm:mm_cache_hits_total{engine="0"`,
		`vllm:mm_cache_hits_total{engine="0",model_name="google/gemma-4-31B-it"} 3733.0`)
	srv := Diff(snap(t, page(t, beforePage)), snap(t, after))
	require.Nil(t, srv.MMCacheHitRate)
	require.NotNil(t, srv.PrefixCacheHitRate, "the other rate stands")
	require.Equal(t, []string{"mm cache: 1260 hits exceed 360 queries"}, srv.Problems)
	require.Equal(t, "partial: 1 problem(s), see problems", srv.Status)
}
