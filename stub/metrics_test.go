package stub

import (
	"math"
	"net/http"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// wantFamilies is vLLM's /metrics as the twin exposes it: every family's
// type and the label names of its series (besides le). Counters appear
// as <name>_total with a <name>_created gauge, histograms with a
// <name>_created gauge.
var wantFamilies = map[string]struct {
	typ    dto.MetricType
	labels string
}{
	"vllm:num_requests_running":                {dto.MetricType_GAUGE, "engine,model_name"},
	"vllm:num_requests_waiting":                {dto.MetricType_GAUGE, "engine,model_name"},
	"vllm:num_requests_waiting_by_reason":      {dto.MetricType_GAUGE, "engine,model_name,reason"},
	"vllm:engine_sleep_state":                  {dto.MetricType_GAUGE, "engine,model_name,sleep_state"},
	"vllm:kv_cache_usage_perc":                 {dto.MetricType_GAUGE, "engine,model_name"},
	"vllm:cache_config_info":                   {dto.MetricType_GAUGE, "block_size,cache_dtype,calculate_kv_scales,cpu_offload_gb,enable_prefix_caching,engine,gpu_memory_utilization,is_attention_free,num_cpu_blocks,num_gpu_blocks,num_gpu_blocks_override,prefix_caching_hash_algo,sliding_window,swap_space_bytes"},
	"vllm:prefix_cache_queries_total":          {dto.MetricType_COUNTER, "engine,model_name"},
	"vllm:prefix_cache_hits_total":             {dto.MetricType_COUNTER, "engine,model_name"},
	"vllm:external_prefix_cache_queries_total": {dto.MetricType_COUNTER, "engine,model_name"},
	"vllm:external_prefix_cache_hits_total":    {dto.MetricType_COUNTER, "engine,model_name"},
	"vllm:mm_cache_queries_total":              {dto.MetricType_COUNTER, "engine,model_name"},
	"vllm:mm_cache_hits_total":                 {dto.MetricType_COUNTER, "engine,model_name"},
	"vllm:num_preemptions_total":               {dto.MetricType_COUNTER, "engine,model_name"},
	"vllm:prompt_tokens_total":                 {dto.MetricType_COUNTER, "engine,model_name"},
	"vllm:prompt_tokens_by_source_total":       {dto.MetricType_COUNTER, "engine,model_name,source"},
	"vllm:prompt_tokens_cached_total":          {dto.MetricType_COUNTER, "engine,model_name"},
	"vllm:generation_tokens_total":             {dto.MetricType_COUNTER, "engine,model_name"},
	"vllm:request_success_total":               {dto.MetricType_COUNTER, "engine,finished_reason,model_name"},
}

// wantHistograms are the histogram families with their exact bucket edges
// (max_model_len 8192 for the 1-2-5 families).
var wantHistograms = map[string][]float64{
	"vllm:request_prompt_tokens":                 {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000},
	"vllm:request_generation_tokens":             {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000},
	"vllm:iteration_tokens_total":                {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384},
	"vllm:request_max_num_generation_tokens":     {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000},
	"vllm:request_params_n":                      {1, 2, 5, 10, 20},
	"vllm:request_params_max_tokens":             {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000},
	"vllm:time_to_first_token_seconds":           {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0},
	"vllm:inter_token_latency_seconds":           {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0},
	"vllm:request_time_per_output_token_seconds": {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0},
	"vllm:e2e_request_latency_seconds":           {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0},
	"vllm:request_queue_time_seconds":            {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0},
	"vllm:request_inference_time_seconds":        {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0},
	"vllm:request_prefill_time_seconds":          {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0},
	"vllm:request_decode_time_seconds":           {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0},
	"vllm:request_prefill_kv_computed_tokens":    {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000},
	"vllm:request_num_preemptions":               {1, 2, 3, 4, 5, 10, 20},
}

// TestMetricsExposition checks every family's name, type, labels, _created
// sample and bucket edges, and the text format details a scraper sees.
func TestMetricsExposition(t *testing.T) {
	rs, err := Start(Config{})
	require.NoError(t, err)
	defer rs.Close()
	s := twintest.ScrapeMetrics(t.Context(), t, http.DefaultClient, rs.URL())
	want := map[string]bool{}
	for name, f := range wantFamilies {
		want[name] = true
		fam, ok := s[name]
		require.True(t, ok, "%s missing", name)
		require.Equal(t, f.typ, fam.GetType(), name)
		for _, m := range fam.GetMetric() {
			var names []string
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName())
				if l.GetName() == "model_name" {
					require.Equal(t, rs.Model(), l.GetValue())
				}
				if l.GetName() == "engine" {
					require.Equal(t, "0", l.GetValue())
				}
			}
			require.Equal(t, f.labels, strings.Join(names, ","), name)
		}
		if f.typ == dto.MetricType_COUNTER {
			created := strings.TrimSuffix(name, "_total") + "_created"
			want[created] = true
			require.Equal(t, dto.MetricType_GAUGE, s[created].GetType(), created)
			require.Len(t, s[created].GetMetric(), len(fam.GetMetric()), created)
		}
	}
	for name, bounds := range wantHistograms {
		want[name], want[name+"_created"] = true, true
		fam, ok := s[name]
		require.True(t, ok, "%s missing", name)
		require.Equal(t, dto.MetricType_HISTOGRAM, fam.GetType(), name)
		var got []float64
		for _, b := range fam.GetMetric()[0].GetHistogram().GetBucket() {
			got = append(got, b.GetUpperBound())
		}
		require.Equal(t, append(append([]float64{}, bounds...), math.Inf(1)), got, name)
		require.Equal(t, dto.MetricType_GAUGE, s[name+"_created"].GetType())
	}
	var extra []string
	for name := range s {
		// The twin's own series (deadline.go) live apart, under
		// vetbench_twin_; anything else must be vLLM's.
		if !want[name] && !strings.HasPrefix(name, "vetbench_twin_") {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	require.Empty(t, extra, "families the twin exposes but vLLM does not")

	body, hdr := twintest.Get(t.Context(), t, http.DefaultClient, rs.URL()+"/metrics")
	require.Equal(t, ContentType, hdr.Get("Content-Type"))
	text := string(body)
	for _, line := range []string{
		"# TYPE vllm:prompt_tokens_total counter",
		"# TYPE vllm:prompt_tokens_created gauge",
		"# TYPE vllm:iteration_tokens_total histogram",
		`vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",model_name="google/gemma-4-31B-it"} 0.0`,
		`vllm:iteration_tokens_total_bucket{engine="0",le="16384.0",model_name="google/gemma-4-31B-it"} 0.0`,
		`vllm:request_success_total{engine="0",finished_reason="length",model_name="google/gemma-4-31B-it"} 0.0`,
		`vllm:engine_sleep_state{engine="0",model_name="google/gemma-4-31B-it",sleep_state="awake"} 1.0`,
	} {
		require.Contains(t, text, line+"\n")
	}
	// /metrics is mounted on a prefix, as vLLM's ASGI app is: no redirect.
	res, err := http.Get(rs.URL() + "/metrics/")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
}

// TestGoFloat pins prometheus_client's number formatting.
func TestGoFloat(t *testing.T) {
	for v, want := range map[float64]string{0: "0.0", 1: "1.0", 560: "560.0", 0.3: "0.3", 1e-5: "1e-05",
		1234567: "1.234567e+06", 1759256400.25: "1.75925640025e+09", math.Inf(1): "+Inf", 2.5e-9: "2.5e-09"} {
		require.Equal(t, want, goFloat(v), "%v", v)
	}
}
