package stub

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
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
	rs, err := Start()
	require.NoError(t, err)
	defer rs.Close()
	s := scrapeMetrics(t.Context(), t, rs.URL())
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
		if !want[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	require.Empty(t, extra, "families the twin exposes but vLLM does not")

	body, _ := get(t.Context(), t, rs.URL()+"/metrics")
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

// TestMetricsCoherence judges a set and checks that every counter and
// histogram moved by what was served, as vLLM counts it.
func TestMetricsCoherence(t *testing.T) {
	set := compactChecks(t)
	set.Cases = set.Cases[:35]
	rs, err := Start()
	require.NoError(t, err)
	defer rs.Close()
	ctx := t.Context()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	cl := judgments.NewClient(rs.URL(), judgments.WithModel(rs.Model()), judgments.WithHTTPClient(&http.Client{Transport: tr}))
	before := scrapeMetrics(ctx, t, rs.URL())
	res := closedLoop(ctx, t, cl, set, 8, false)
	after := scrapeMetrics(ctx, t, rs.URL())
	requests, prompt := 0, 0
	for _, j := range res.Judgments {
		requests += j.Requests
		prompt += j.PromptTokens
	}
	d := func(name string, match ...string) float64 {
		return after.value(name, match...) - before.value(name, match...)
	}
	dh := func(name string) (float64, float64) {
		c1, s1 := before.hist(name)
		c2, s2 := after.hist(name)
		return c2 - c1, s2 - s1
	}
	n := float64(requests)
	require.Equal(t, n, d("vllm:request_success_total"), "Δrequest_success = requests served")
	require.Equal(t, n, d("vllm:request_success_total", "finished_reason", "length"), "max_tokens 1 ends on length")
	require.Equal(t, float64(prompt), d("vllm:prompt_tokens_total"), "Δprompt_tokens = Σ usage.prompt_tokens")
	require.Equal(t, n, d("vllm:generation_tokens_total"))
	require.Equal(t, float64(prompt), d("vllm:prefix_cache_queries_total"), "queries count every prompt token")
	hits := d("vllm:prefix_cache_hits_total")
	require.Positive(t, hits, "questions of one item share their image prefix")
	require.Less(t, hits, float64(prompt))
	require.Zero(t, math.Mod(hits, 16), "hits are whole 16-token blocks")
	require.Equal(t, hits, d("vllm:prompt_tokens_cached_total"))
	require.Equal(t, hits, d("vllm:prompt_tokens_by_source_total", "source", "local_cache_hit"))
	require.Equal(t, float64(prompt)-hits, d("vllm:prompt_tokens_by_source_total", "source", "local_compute"))
	require.Equal(t, float64(set.Images()*len(set.Spec.Questions)), d("vllm:mm_cache_queries_total"), "one mm query per image per request")
	require.Equal(t, float64(set.Images()*(len(set.Spec.Questions)-1)), d("vllm:mm_cache_hits_total"), "only each item's first question misses")
	require.Zero(t, d("vllm:num_preemptions_total"))
	for _, h := range []string{"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds",
		"vllm:request_inference_time_seconds", "vllm:request_decode_time_seconds", "vllm:time_to_first_token_seconds",
		"vllm:request_prompt_tokens", "vllm:request_generation_tokens", "vllm:request_prefill_kv_computed_tokens",
		"vllm:request_params_max_tokens", "vllm:request_num_preemptions", "vllm:request_time_per_output_token_seconds"} {
		c, _ := dh(h)
		require.Equal(t, n, c, "%s observes every finished request", h)
	}
	_, sum := dh("vllm:request_prompt_tokens")
	require.Equal(t, float64(prompt), sum)
	_, sum = dh("vllm:request_prefill_kv_computed_tokens")
	require.Equal(t, float64(prompt)-hits, sum)
	_, sum = dh("vllm:iteration_tokens_total")
	require.Equal(t, float64(prompt)+n, sum, "iteration tokens = prompt tokens of first tokens + generated")
	_, sum = dh("vllm:request_decode_time_seconds")
	require.Zero(t, sum, "one token: no decode phase")
	_, e2e := dh("vllm:e2e_request_latency_seconds")
	_, prefill := dh("vllm:request_prefill_time_seconds")
	_, queue := dh("vllm:request_queue_time_seconds")
	require.Greater(t, e2e, prefill+queue, "e2e holds queue and prefill")
	for _, g := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"} {
		require.Zero(t, after.value(g), "%s back to 0 when idle", g)
	}
	require.Equal(t, requests, rs.Stats().Served)
}

// TestTimeScaleKeepsModelSeconds shows a time-scaled twin's histograms
// record model seconds: the same work at 1× and 20× gives the same
// prefill times (within timer noise), while wall time shrinks.
func TestTimeScaleKeepsModelSeconds(t *testing.T) {
	p := ProfileFast()
	p.StepBase = 40 * time.Millisecond
	set := compactChecks(t)
	set.Cases = set.Cases[:2]
	measure := func(scale float64) (prefillMean, wall float64) {
		rs, err := Start(WithProfile(p), WithTimeScale(scale))
		require.NoError(t, err)
		defer rs.Close()
		cl := judgments.NewClient(rs.URL(), judgments.WithModel(rs.Model()))
		res := closedLoop(t.Context(), t, cl, set, 1, false)
		c, s := scrapeMetrics(t.Context(), t, rs.URL()).hist("vllm:request_prefill_time_seconds")
		return s / c, res.Wall
	}
	real, realWall := measure(1)
	fast, fastWall := measure(20)
	require.InDelta(t, 0.040, real, 0.002, "a 40 ms step at 1×")
	require.InDelta(t, 0.040, fast, 0.002, "still 40 model ms at 20×")
	require.Less(t, fastWall, realWall/4)
}

// TestPreemption fills a small KV cache with long generations so the
// engine must preempt (recompute) the newest request; every request still
// finishes, and the preemption counters move.
func TestPreemption(t *testing.T) {
	p := ProfileFast()
	p.MaxModelLen = 1024
	p.NumGPUBlocks = 80 // 1280 tokens: one 700-token request fits, two do not
	rs, err := Start(WithProfile(p))
	require.NoError(t, err)
	defer rs.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"model":%q,"max_tokens":500,"messages":[{"role":"user","content":"request %d: %s"}]}`,
				rs.Model(), i, strings.Repeat("word ", 200))
			res, err := http.Post(rs.URL()+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("HTTP %d", res.StatusCode)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	s := scrapeMetrics(t.Context(), t, rs.URL())
	require.Positive(t, s.value("vllm:num_preemptions_total"), "a KV cache of 1280 tokens cannot hold four 700-token requests")
	require.Equal(t, 4.0, s.value("vllm:request_success_total", "finished_reason", "length"))
	require.Equal(t, 2000.0, s.value("vllm:generation_tokens_total"))
	c, sum := s.hist("vllm:request_num_preemptions")
	require.Equal(t, 4.0, c)
	require.Equal(t, s.value("vllm:num_preemptions_total"), sum, "per-request preemptions add up to the counter")
}

// TestResetPrefixCache shows the dev-mode reset refusing while a request
// holds KV blocks and succeeding when idle, and that a reset turns the
// next identical request's prefix hits into misses.
func TestResetPrefixCache(t *testing.T) {
	p := ProfileFast()
	p.StepBase = 300 * time.Millisecond
	rs, err := Start(WithProfile(p), WithDevMode(true))
	require.NoError(t, err)
	defer rs.Close()
	reset := func() string {
		res, err := http.Post(rs.URL()+"/reset_prefix_cache", "application/json", nil)
		require.NoError(t, err)
		defer res.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		require.Equal(t, http.StatusOK, res.StatusCode)
		return b.String()
	}
	body := fmt.Sprintf(`{"model":%q,"max_tokens":1,"messages":[{"role":"user","content":%q}]}`, rs.Model(), strings.Repeat("shared prefix ", 40))
	send := func() {
		res, err := http.Post(rs.URL()+"/v1/chat/completions", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	done := make(chan struct{})
	go func() { defer close(done); send() }()
	require.Eventually(t, func() bool {
		return scrapeMetrics(context.Background(), t, rs.URL()).value("vllm:num_requests_running") == 1
	}, 2*time.Second, 5*time.Millisecond)
	require.JSONEq(t, `{"success":false}`, reset(), "blocks are held by a running request")
	<-done
	send()
	hits := scrapeMetrics(t.Context(), t, rs.URL()).value("vllm:prefix_cache_hits_total")
	require.Positive(t, hits, "the second identical request hits the cache")
	require.JSONEq(t, `{"success":true}`, reset())
	send()
	require.Equal(t, hits, scrapeMetrics(t.Context(), t, rs.URL()).value("vllm:prefix_cache_hits_total"), "after a reset, no hits")
}
