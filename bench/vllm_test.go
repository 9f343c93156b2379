package bench_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/target"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/answers"
	"github.com/vetbench/vetbench/stub"
)

// A server whose model answers off-format for a share of prompts (the
// greedy token is no candidate, so vLLM returns N+1 entries, the sampled
// token first) runs clean in token_ids mode: no question fails, the
// off-format answers are counted per question, and the answers are the
// ones a server without the share gives.
func TestOffFormatRun(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 14)
	cfg := testConfig()
	off := inProcess(t, set, cfg, stub.Config{OffFormat: 0.3})
	rec, err := off.Measure(t.Context(), bench.Point{Concurrency: 1})
	require.NoError(t, err)
	require.Nil(t, rec.Stopped)
	require.Zero(t, rec.Throughput.Failed)
	o := rec.OffFormat
	require.NotNil(t, o)
	require.Equal(t, 14*4, o.Answers)
	require.Positive(t, o.Total)
	require.Less(t, o.Total, o.Answers)
	sum := 0
	for _, q := range set.Spec.Questions {
		sum += o.ByQuestion[q.ID]
	}
	require.Equal(t, o.Total, sum)
	n := 0
	for _, it := range rec.Items {
		for _, a := range it.Answers {
			require.NotEmpty(t, a.Sampled)
			if a.OffFormat {
				n++
				require.NotContains(t, tokenIDsOf(rec.Pins.Controls), a.Sampled, "an off-format answer sampled no control")
			}
		}
	}
	require.Equal(t, o.Total, n)
	require.NoError(t, rec.Validate())

	clean := inProcess(t, set, cfg, stub.Config{})
	base, err := clean.Measure(t.Context(), bench.Point{Concurrency: 1})
	require.NoError(t, err)
	require.Zero(t, base.OffFormat.Total)
	rep, err := answers.Compare(base, rec, answers.StrictPolicy())
	require.NoError(t, err)
	require.True(t, rep.Passed, "off-format answers keep their verdicts: %v", rep.Failures())
	require.Zero(t, rep.VerdictsMoved.Total())
}

func tokenIDsOf(c map[string]int) []string {
	var out []string
	for _, id := range c {
		out = append(out, "token_id:"+strconv.Itoa(id))
	}
	return out
}

// A server older than logprob_token_ids stops a token_ids session before
// anything is measured, naming the mode, the build and the remedy; with
// the fallback allowed the session scores from top_logprobs and the
// receipt says so.
func TestOlderServer(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 7)
	tg, err := target.InProcess(stub.Config{DevMode: true, Legacy: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tg.Close() })
	_, err = bench.NewSession(t.Context(), tg.Endpoint, set, sweep.SessionOptions(testConfig()))
	require.ErrorIs(t, err, bench.ErrTokenIDsIgnored)
	for _, want := range []string{"scoring mode token_ids needs logprob_token_ids", "vLLM " + stub.LegacyVersion,
		"got none of them back", "set VETBENCH_SCORING=top_logprobs", "VETBENCH_SCORING_FALLBACK=true", "vLLM >= 0.26.0"} {
		require.ErrorContains(t, err, want)
	}

	cfg := testConfig()
	cfg.ScoringFallback = true
	sess, err := bench.NewSession(t.Context(), tg.Endpoint, set, sweep.SessionOptions(cfg))
	require.NoError(t, err)
	require.Equal(t, judgments.ModeTopLogprobs, sess.Client.Mode())
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 2})
	require.NoError(t, err)
	require.Nil(t, rec.Stopped)
	require.Equal(t, "top_logprobs", rec.Pins.ScoringMode)
	require.Equal(t, cfg.TopLogprobs, rec.Pins.TopLogprobs)
	require.Contains(t, rec.Pins.ScoringFallback, "token_ids → top_logprobs")
	require.NoError(t, rec.Validate())
}

// With --data-parallel-size 2 the receipt holds each engine's prefix-cache
// figures; they sum to the overall ones, and the overall hit rate is the
// engines' hits over their queries.
func TestDataParallelReceipt(t *testing.T) {
	s := getSuite(t)
	sess := inProcess(t, firstCases(s.set(t, "checks"), 14), testConfig(), stub.Config{DataParallel: 2})
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 4})
	require.NoError(t, err)
	srv := rec.Server
	require.Equal(t, "ok", srv.Status, srv.Problems)
	require.Len(t, srv.Engines, 2)
	var q, h, reqs float64
	for e, info := range srv.Engines {
		require.Positive(t, info.RequestSuccess, "engine %s got requests", e)
		require.NotNil(t, info.PrefixCacheHitRate)
		require.InDelta(t, info.PrefixCacheHits/info.PrefixCacheQueries, *info.PrefixCacheHitRate, 1e-15)
		q, h, reqs = q+info.PrefixCacheQueries, h+info.PrefixCacheHits, reqs+info.RequestSuccess
	}
	require.Equal(t, srv.Counters["prefix_cache_queries"], q)
	require.Equal(t, srv.Counters["prefix_cache_hits"], h)
	require.Equal(t, float64(rec.Throughput.Requests), reqs)
	require.InDelta(t, h/q, *srv.PrefixCacheHitRate, 1e-15)
	require.True(t, rec.Checks.Reconciliation.OK, rec.Checks.Reconciliation.Detail)
}

// With --enable-prompt-tokens-details the answers' cached_tokens add up to
// the prefix-cache hits /metrics counted; the receipt holds both.
func TestCachedTokensReconcile(t *testing.T) {
	s := getSuite(t)
	cfg := testConfig()
	cfg.ServerEnv = "VLLM_BATCH_INVARIANT=1"
	sess := inProcess(t, firstCases(s.set(t, "checks"), 14), cfg, stub.Config{PromptTokensDetails: true})
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 4})
	require.NoError(t, err)
	rc := rec.Checks.Reconciliation
	require.True(t, rc.OK, rc.Detail)
	require.NotNil(t, rc.ClientCachedTokens)
	require.Positive(t, *rc.ClientCachedTokens, "an item's questions share its prefix")
	require.Equal(t, float64(*rc.ClientCachedTokens), *rc.ServerCachedTokens)
	require.Equal(t, rec.Server.Counters["prefix_cache_hits"], *rc.ServerCachedTokens)
	require.Equal(t, "VLLM_BATCH_INVARIANT=1", rec.Identity.ServerEnv, "the stated server env is part of the identity")
	other := rec.Clone()
	other.Identity.ServerEnv = ""
	require.NotEqual(t, rec.IdentityDigest(), other.IdentityDigest())
	require.NotEmpty(t, receipts.IdentityUnverified(rec, other))
}
