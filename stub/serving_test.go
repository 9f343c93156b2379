package stub_test

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// TestMetricsCoherence judges a set and checks that every counter and
// histogram moved by what was served, as vLLM counts it.
func TestMetricsCoherence(t *testing.T) {
	set := twintest.CompactChecks(t)
	set.Cases = set.Cases[:35]
	synctest.Test(t, func(t *testing.T) {
		tw := newTwin(t, stub.Config{})
		before := tw.scrape(t)
		res := closedLoop(t.Context(), t, tw.client(), set, 8, false)
		after := tw.scrape(t)
		requests, prompt := 0, 0
		for _, j := range res.Judgments {
			requests += j.Requests
			prompt += j.PromptTokens
		}
		d := func(name string, match ...string) float64 {
			return after.Value(name, match...) - before.Value(name, match...)
		}
		dh := func(name string) (float64, float64) {
			c1, s1 := before.Hist(name)
			c2, s2 := after.Hist(name)
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
			require.Zero(t, after.Value(g), "%s back to 0 when idle", g)
		}
		require.Equal(t, requests, tw.Stats().Served)
	})
}

// TestTimeScaleKeepsModelSeconds shows a time-scaled twin's histograms
// record model seconds: the same work at 1× and 20× gives the same prefill
// times (a 40 ms step is 40 model ms at both), while the time the run
// takes shrinks twentyfold. On fake time both hold exactly; on real timers
// (how late they fire, how the clock makes up for it) it is
// BenchmarkTimeScale (make calibrate).
func TestTimeScaleKeepsModelSeconds(t *testing.T) {
	p := stub.ProfileFast()
	p.StepBase = 40 * time.Millisecond
	set := twintest.CompactChecks(t)
	set.Cases = set.Cases[:2]
	measure := func(scale float64) (prefillMean, wall float64) {
		synctest.Test(t, func(t *testing.T) {
			tw := newTwin(t, stub.Config{Profile: p, TimeScale: scale})
			res := closedLoop(t.Context(), t, tw.client(), set, 1, false)
			c, s := tw.scrape(t).Hist("vllm:request_prefill_time_seconds")
			prefillMean, wall = s/c, res.Wall
		})
		return prefillMean, wall
	}
	slow, slowWall := measure(1)
	fast, fastWall := measure(20)
	// Step time is StepBase + StepPerSeq per sequence + StepPerImage per
	// image encoded (one image per item, encoded at its first question).
	images := float64(len(set.Cases)) / float64(len(set.Cases)*len(set.Spec.Questions))
	want := (p.StepBase + p.StepPerSeq).Seconds() + images*p.StepPerImage.Seconds()
	require.InDelta(t, want, slow, 1e-9, "a 40 ms step at 1×")
	require.InDelta(t, want, fast, 1e-9, "still 40 model ms at 20×")
	require.InEpsilon(t, 20, slowWall/fastWall, 1e-6, "20× faster")
}

// TestPreemption fills a small KV cache with long generations so the
// engine must preempt (recompute) the newest request; every request still
// finishes, and the preemption counters move.
func TestPreemption(t *testing.T) {
	p := stub.ProfileFast()
	p.MaxModelLen = 1024
	p.NumGPUBlocks = 80 // 1280 tokens: one 700-token request fits, two do not
	synctest.Test(t, func(t *testing.T) {
		tw := newTwin(t, stub.Config{Profile: p})
		var wg sync.WaitGroup
		codes := make([]int, 4)
		for i := range codes {
			wg.Go(func() {
				body := fmt.Sprintf(`{"model":%q,"max_tokens":500,"ignore_eos":true,"messages":[{"role":"user","content":"request %d: %s"}]}`,
					tw.Model(), i, strings.Repeat("word ", 200))
				res, err := tw.hc.Post(twinURL+"/v1/chat/completions", "application/json", strings.NewReader(body))
				if err == nil {
					res.Body.Close()
					codes[i] = res.StatusCode
				}
			})
		}
		wg.Wait()
		require.Equal(t, []int{200, 200, 200, 200}, codes)
		s := tw.scrape(t)
		require.Positive(t, s.Value("vllm:num_preemptions_total"), "a KV cache of 1280 tokens cannot hold four 700-token requests")
		require.Equal(t, 4.0, s.Value("vllm:request_success_total", "finished_reason", "length"))
		require.Equal(t, 2000.0, s.Value("vllm:generation_tokens_total"))
		c, sum := s.Hist("vllm:request_num_preemptions")
		require.Equal(t, 4.0, c)
		require.Equal(t, s.Value("vllm:num_preemptions_total"), sum, "per-request preemptions add up to the counter")
	})
}

// TestResetPrefixCache shows the dev-mode reset refusing while a request
// holds KV blocks and succeeding when idle, and that a reset turns the
// next identical request's prefix hits into misses.
func TestResetPrefixCache(t *testing.T) {
	p := stub.ProfileFast()
	p.StepBase = 300 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		tw := newTwin(t, stub.Config{Profile: p, DevMode: true})
		reset := func() string {
			code, body := tw.post(t, "/reset_prefix_cache", "")
			require.Equal(t, http.StatusOK, code)
			return body
		}
		body := fmt.Sprintf(`{"model":%q,"max_tokens":1,"messages":[{"role":"user","content":%q}]}`, tw.Model(), strings.Repeat("shared prefix ", 40))
		send := func() {
			code, data := tw.post(t, "/v1/chat/completions", body)
			require.Equal(t, http.StatusOK, code, data)
		}
		code := make(chan int, 1)
		go func() {
			res, err := tw.hc.Post(twinURL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				code <- 0
				return
			}
			res.Body.Close()
			code <- res.StatusCode
		}()
		time.Sleep(150 * time.Millisecond) // halfway through its 300 ms prefill
		require.Equal(t, 1.0, tw.scrape(t).Value("vllm:num_requests_running"))
		require.JSONEq(t, `{"success":false}`, reset(), "blocks are held by a running request")
		require.Equal(t, http.StatusOK, <-code)
		send()
		hits := tw.scrape(t).Value("vllm:prefix_cache_hits_total")
		require.Positive(t, hits, "the second identical request hits the cache")
		require.JSONEq(t, `{"success":true}`, reset())
		send()
		require.Equal(t, hits, tw.scrape(t).Value("vllm:prefix_cache_hits_total"), "after a reset, no hits")
	})
}
