package stub

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEncoderBudget: vLLM's scheduler charges images to a per-step encoder
// budget (_try_schedule_encoder_inputs, vllm/v1/core/sched/scheduler.py;
// compute_mm_encoder_budget, vllm/v1/core/encoder_cache_manager.py): an
// image that does not fit waits, and its request computes only the tokens
// before it this step.
func TestEncoderBudget(t *testing.T) {
	set := lookalikeChecks(t, 2)
	for _, tc := range []struct {
		name   string
		budget int
		images []int // images encoded per step
	}{
		{"default budget (max_num_batched_tokens)", 0, []int{2}},
		{"one image per step", 1, []int{1, 1}}, // at least one item always fits
	} {
		t.Run(tc.name, func(t *testing.T) {
			prof := ProfileFast()
			prof.MaxNumEncoderInputTokens = tc.budget
			c := newCore(prof, newMetrics(prof, prof.Model, fixedTime))
			items := simItems(t, set, prof)
			a, b := items[0][0], items[1][0] // two items: two distinct images
			ra := &request{prompt: a.p, hashes: a.hashes, maxTokens: 1}
			rb := &request{prompt: b.p, hashes: b.hashes, maxTokens: 1}
			c.add(ra, 0)
			c.add(rb, 0)
			var got []int
			now := 0.0
			for c.hasWork() {
				st := c.schedule(now)
				require.NotNil(t, st)
				if len(got) == 0 && tc.budget > 0 {
					require.Len(t, st.entries, 2)
					require.Equal(t, b.p.Images[0].Offset, st.entries[1].n, "the second request stops before its image")
				}
				got = append(got, st.images)
				now++
				c.complete(st, now)
			}
			images := 0
			for _, n := range got {
				images += n
			}
			require.Equal(t, 2, images)
			require.Equal(t, tc.images, got[:len(tc.images)])
		})
	}
}

// TestGenerationTokenHistograms: vllm:request_max_num_generation_tokens
// observes the tokens generated (the most over n), not max_tokens, which
// vllm:request_params_max_tokens observes (vllm/v1/metrics/loggers.py,
// finished request stats).
func TestGenerationTokenHistograms(t *testing.T) {
	prof := ProfileFast()
	m := newMetrics(prof, prof.Model, fixedTime)
	r := &request{prompt: prompt{Tokens: make([]int, 40)}, maxTokens: 16, generated: 3, everRan: true, finishReason: "stop"}
	m.iterate(iteration{finished: []*request{r}})
	require.Equal(t, 3.0, m.hist["vllm:request_max_num_generation_tokens"].sum)
	require.Equal(t, 3.0, m.hist["vllm:request_generation_tokens"].sum)
	require.Equal(t, 16.0, m.hist["vllm:request_params_max_tokens"].sum)
}

// TestBalancer follows DPLBAsyncMPClient.get_core_engine_for_request
// (vllm/v1/engine/core_client.py): the lowest waiting×4 + running of the
// last published counts, ties to the first engine, the chosen engine's
// waiting bumped locally until the next publication (every 100 ms).
func TestBalancer(t *testing.T) {
	prof := ProfileFast()
	es := make([]*engine, 3)
	for i := range es {
		es[i] = newEngine(prof, prof.Model, 1, 1, nil)
		es[i].index = i
	}
	busy := func(e *engine, waiting, running int) {
		e.c.waiting, e.c.running = make([]*request, waiting), make([]*request, running)
	}
	busy(es[0], 0, 3) // score 3
	busy(es[1], 1, 0) // score 4
	busy(es[2], 0, 1) // score 1
	b := newBalancer(es)
	var picks []int
	for range 4 {
		picks = append(picks, b.pick(0.01).index)
	}
	// Scores 3, 4, 1: engine 2 (1, then 5), 0 (3, then 7), 1 (4, then 8),
	// 2 again (5): the local bumps spread requests between publications.
	require.Equal(t, []int{2, 0, 1, 2}, picks)
	busy(es[0], 0, 0)
	busy(es[1], 0, 0)
	busy(es[2], 0, 0)
	require.Equal(t, 0, b.pick(0.05).index, "no publication yet: the local counts stand")
	require.Equal(t, 0, b.pick(0.2).index, "published: all idle, ties go to the first engine")
	require.Equal(t, 1, b.pick(0.2).index)
}

// TestDataParallelMetrics: one exposition, each family's HELP and TYPE
// once, one series per engine label (loggers.py, create_metric_per_engine).
func TestDataParallelMetrics(t *testing.T) {
	s, err := New(Config{DataParallel: 3})
	require.NoError(t, err)
	defer s.Close()
	var b bytes.Buffer
	require.NoError(t, s.writeMetrics(&b))
	page := b.String()
	require.Equal(t, 1, strings.Count(page, "# TYPE vllm:prefix_cache_hits_total counter\n"))
	for _, e := range []string{"0", "1", "2"} {
		require.Contains(t, page, `vllm:prefix_cache_hits_total{engine="`+e+`",model_name="google/gemma-4-31B-it"} 0.0`)
		require.Contains(t, page, `vllm:cache_config_info{block_size="16"`)
	}
	// Every engine has its own KV cache and prefix cache.
	require.NotSame(t, s.engines[0].c.pool, s.engines[1].c.pool)
	require.NotSame(t, s.engines[1].c.enc, s.engines[2].c.enc)
	require.Same(t, s.engines[0].clock, s.engines[2].clock, "one clock")
}

// TestOffFormat: an off-format answer's greedy token is no candidate, and
// the softmax over the candidates, the answer, is unchanged.
func TestOffFormat(t *testing.T) {
	key := []byte("content")
	d := modelDistribution(key, 2, DefaultSpread)
	before := d.logprobs()
	d.makeOffFormat(key)
	after := d.logprobs()
	order := rank(after)
	require.False(t, isCandidate(order[0].id, 2), "the greedy token is no candidate")
	gap := func(lps map[int]float64) float64 { return lps[controlID(1)] - lps[controlID(0)] }
	require.InDelta(t, gap(before), gap(after), 1e-9, "the candidates keep their relative logprobs")
	n, share := 0, 0.3
	for i := range 1000 {
		if offFormatDraw([]byte{byte(i), byte(i >> 8)}, share) {
			n++
		}
	}
	require.InDelta(t, 300, n, 60, "about the share asked")
	require.False(t, offFormatDraw(key, 0))
}

// TestAuthPaths: public endpoints match on segment boundaries, every other
// registered route is guarded (authenticate.py, is_public_path,
// build_guarded_prefixes).
func TestAuthPaths(t *testing.T) {
	require.True(t, isPublicPath("/health", "/health"))
	require.True(t, isPublicPath("/metrics/", "/metrics"))
	require.False(t, isPublicPath("/healthcheck", "/health"))
	g := guardedPrefixes([]string{"/v1/chat/completions", "/tokenize", "/health", "/metrics", "/reset_prefix_cache"})
	require.Contains(t, g, "/tokenize")
	require.Contains(t, g, "/reset_prefix_cache")
	require.Contains(t, g, "/v1")
	require.NotContains(t, g, "/health")
	require.NotContains(t, g, "/metrics")
	s := &Server{}
	require.False(t, s.tokenOK(""))

}
