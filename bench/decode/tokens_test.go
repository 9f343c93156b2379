package decode_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/decode/tokenstest"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// tick is a clock that moves 1 ms on every reading: every figure is then
// a count of clock readings, the same on every machine and every load.
type tick struct {
	mu sync.Mutex
	t  time.Time
}

func newTick() *tick { return &tick{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *tick) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func (c *tick) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func start(t *testing.T, cfg tokenstest.Config) *tokenstest.Server {
	t.Helper()
	s := tokenstest.Start(cfg)
	t.Cleanup(s.Close)
	return s
}

func runner(t *testing.T, srv *tokenstest.Server, opts ...decode.Option) *decode.Runner {
	t.Helper()
	ep := bench.Endpoint{BaseURL: srv.URL, Target: receipts.Target{Kind: receipts.TargetLive}}
	r, err := decode.NewRunner(t.Context(), ep, opts...)
	require.NoError(t, err)
	return r
}

func point(workload string, c, out, repeats, warmup int) decode.Point {
	return decode.Point{Workload: workload, Concurrency: c, OutputTokens: out, Repeats: repeats, Warmup: warmup}
}

func TestMeasureVerifiesEveryRequest(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{GPUBlocks: 1000, BlockSize: 16})
	r := runner(t, srv)
	rec, err := r.Measure(t.Context(), point(tokens.WorkloadText, 4, 16, 2, 1))
	require.NoError(t, err)

	s := rec.Summary
	require.Equal(t, 8, s.Requests)
	require.Equal(t, 4*16*2, s.TotalVerifiedOutputTokens, "every measured request verified")
	require.Zero(t, s.Failed)
	require.Zero(t, s.Short)
	require.Len(t, rec.Runs, 2, "the warm-up is not a run")
	for _, run := range rec.Runs {
		require.Len(t, run.Requests, 4)
		require.NotNil(t, run.LittlesLaw)
		for _, q := range run.Requests {
			require.Equal(t, 16, q.OutputTokens)
			require.Empty(t, q.Error)
			require.Equal(t, "length", q.FinishReason)
			require.NotNil(t, q.TTFTSeconds)
			require.NotNil(t, q.FirstTextSeconds)
			require.NotNil(t, q.TimeBetweenTokensSeconds)
			require.Len(t, q.ITLSeconds, 16, "the role chunk, then one chunk per token: 16 gaps")
			require.Positive(t, q.PromptTokens)
		}
	}
	require.NotNil(t, s.FirstTextMs)
	require.NotNil(t, s.Serve)
	require.Equal(t, 8, s.Serve.Completed)
	require.Nil(t, rec.Stopped)
	require.Equal(t, tokens.CacheUniquePrompts, rec.Identity.CacheIsolation)
	require.Equal(t, "org/fake", rec.Identity.Model, "the served root names the weights")
	require.Equal(t, "0.0.0-fake", rec.Identity.ServerBuild)
	require.Equal(t, "1000", rec.Identity.Profile["num_gpu_blocks"])
	require.Equal(t, decode.Sampling, rec.Identity.Sampling)
	require.Equal(t, decode.Digest(tokens.WorkloadText), rec.Identity.PromptDigest)
	_, err = tokens.Marshal(rec)
	require.NoError(t, err, "the receipt validates (figures recomputed)")

	// On the wire: 12 requests (4 warm-up, 8 measured), each greedy,
	// ignore_eos, max_tokens 16, with a tag of its own at the very start.
	reqs := srv.Requests()
	require.Len(t, reqs, 12)
	tags := map[string]bool{}
	for _, q := range reqs {
		require.True(t, q.IgnoreEOS)
		require.NotNil(t, q.Temperature)
		require.Zero(t, *q.Temperature)
		require.Equal(t, 16, q.MaxTokens)
		require.True(t, strings.HasPrefix(q.Text, "[vb-"+r.RunID+"-"), q.Text)
		tag := q.Text[:strings.Index(q.Text, "]")+1]
		require.False(t, tags[tag], "tag %s sent twice", tag)
		tags[tag] = true
	}
	// A second point of the same run shares no tag with the first.
	_, err = r.Measure(t.Context(), point(tokens.WorkloadText, 2, 4, 1, 0))
	require.NoError(t, err)
	for _, q := range srv.Requests()[12:] {
		require.False(t, tags[q.Text[:strings.Index(q.Text, "]")+1]])
	}
}

func TestOneImageRequestsCarryAnImageOfTheirOwn(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{})
	rec, err := runner(t, srv).Measure(t.Context(), point(tokens.WorkloadOneImage, 3, 4, 1, 0))
	require.NoError(t, err)
	require.Equal(t, 12, rec.Summary.TotalVerifiedOutputTokens)
	seen := map[string]bool{}
	for _, q := range srv.Requests() {
		require.Len(t, q.Images, 1)
		require.True(t, strings.HasPrefix(q.Images[0], "data:image/png;base64,"))
		_, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(q.Images[0], "data:image/png;base64,"))
		require.NoError(t, err)
		require.False(t, seen[q.Images[0]], "an image sent twice would hit the multimodal cache")
		seen[q.Images[0]] = true
		require.Equal(t, 10+(len(q.Text)+3)/4+256, q.Prompt)
	}
	require.NotEqual(t, decode.Digest(tokens.WorkloadText), rec.Identity.PromptDigest)
}

func TestShortStreamIsCountedAndFailsThePoint(t *testing.T) {
	t.Parallel()
	short := func(q tokenstest.Request) int {
		if q.Seq == 3 {
			return q.MaxTokens - 5 // EOS came early: finish_reason stop
		}
		return q.MaxTokens
	}
	srv := start(t, tokenstest.Config{Tokens: short})
	rec, err := runner(t, srv).Measure(t.Context(), point(tokens.WorkloadText, 4, 12, 2, 0))
	require.ErrorIs(t, err, decode.ErrFailures)
	require.ErrorContains(t, err, "1 of 8 requests failed or came back short (1 short)")
	require.NotNil(t, rec)
	require.Equal(t, 1, rec.Summary.Short)
	require.Equal(t, 7*12, rec.Summary.TotalVerifiedOutputTokens, "the short request's tokens are not verified")
	var classes []string
	for _, q := range rec.Runs[0].Requests {
		classes = append(classes, q.ErrorClass)
	}
	require.Contains(t, classes, "short")
	_, err = tokens.Marshal(rec)
	require.NoError(t, err, "a failed point still has a valid receipt")

	// Accepted: 1 of 8 is within 0.2.
	p := point(tokens.WorkloadText, 4, 12, 2, 0)
	p.MaxFailed = 0.2
	srv2 := start(t, tokenstest.Config{Tokens: short})
	rec, err = runner(t, srv2).Measure(t.Context(), p)
	require.NoError(t, err)
	require.Equal(t, 1, rec.Summary.Short)
	require.Contains(t, strings.Join(rec.Warnings, "\n"), "within the accepted share 0.2")

	// Positive control: the same server without the short stream passes.
	srv3 := start(t, tokenstest.Config{})
	rec, err = runner(t, srv3).Measure(t.Context(), point(tokens.WorkloadText, 4, 12, 2, 0))
	require.NoError(t, err)
	require.Zero(t, rec.Summary.Short)
}

func TestFailedRequestsAreKept(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{Fail: func(q tokenstest.Request) int {
		switch q.Seq {
		case 2:
			return 500
		case 3:
			return -1 // error object after the first token
		}
		return 0
	}})
	rec, err := runner(t, srv).Measure(t.Context(), point(tokens.WorkloadText, 4, 8, 1, 0))
	require.ErrorIs(t, err, decode.ErrFailures)
	require.Equal(t, 2, rec.Summary.Failed)
	classes := map[string]int{}
	for _, q := range rec.Runs[0].Requests {
		classes[q.ErrorClass]++
	}
	require.Equal(t, map[string]int{"": 2, "http_500": 1, "stream_error": 1}, classes)
}

func TestEveryRequestFailingStopsThePoint(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{Fail: func(tokenstest.Request) int { return 503 }})
	rec, err := runner(t, srv).Measure(t.Context(), point(tokens.WorkloadText, 2, 8, 3, 1))
	require.ErrorIs(t, err, decode.ErrStopped)
	require.NotNil(t, rec.Stopped)
	require.Equal(t, "error", rec.Stopped.Reason)
	require.Contains(t, rec.Stopped.Message, "warm-up 1")
	require.Empty(t, rec.Runs)
	_, err = tokens.Marshal(rec)
	require.NoError(t, err)
}

func TestCancelKeepsFinishedRepeats(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	srv := start(t, tokenstest.Config{Tokens: func(q tokenstest.Request) int {
		if q.Seq > 2 { // the second repeat: Ctrl-C while it streams
			cancel()
		}
		return q.MaxTokens
	}, TokenDelay: time.Millisecond})
	rec, err := runner(t, srv).Measure(ctx, point(tokens.WorkloadText, 2, 50, 3, 0))
	require.ErrorIs(t, err, decode.ErrStopped)
	require.Equal(t, "canceled", rec.Stopped.Reason)
	require.Len(t, rec.Runs, 1)
	require.Equal(t, 1, rec.Stopped.Runs)
	require.Equal(t, 100, rec.Summary.TotalVerifiedOutputTokens)
	_, err = tokens.Marshal(rec)
	require.NoError(t, err)
}

func TestLittlesLawOnATokenRun(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{})
	clk := newTick()
	r := runner(t, srv, decode.WithClock(clk.Now))
	// One request at a time: on a clock that ticks per reading, other
	// streams' readings would count as time too (so they do in real time,
	// by microseconds, not by whole ticks).
	rec, err := r.Measure(t.Context(), point(tokens.WorkloadText, 1, 200, 2, 0))
	require.NoError(t, err)
	ll := rec.Runs[0].LittlesLaw
	require.True(t, ll.OK, "%v", ll.Problems)
	require.Less(t, ll.RelError, 0.02)
	require.InDelta(t, 1, ll.MeanInFlight, 0.02)
	require.Equal(t, 2, ll.Samples)

	// Positive control: time a request holds its slot after its latency
	// clock stopped (a blocked hand-off) breaks L = λW, and the receipt
	// says so.
	clk2 := newTick()
	r2 := runner(t, srv, decode.WithClock(clk2.Now))
	r2.SetAfterDo(func() { clk2.Add(2 * time.Second) })
	rec, err = r2.Measure(t.Context(), point(tokens.WorkloadText, 1, 200, 1, 0))
	require.NoError(t, err)
	ll = rec.Runs[0].LittlesLaw
	require.False(t, ll.OK)
	require.Greater(t, ll.MeanInFlight, ll.Predicted)
	require.Contains(t, strings.Join(ll.Problems, "\n"), "throughput × mean latency")
	require.Contains(t, strings.Join(rec.Warnings, "\n"), "repeat 1: Little's law: mean in flight")
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{})
	rec, err := runner(t, srv, decode.WithClock(newTick().Now)).Measure(t.Context(), point(tokens.WorkloadText, 2, 10, 1, 0))
	require.NoError(t, err)
	got := map[string]float64{}
	for _, m := range decode.Metrics(rec) {
		got[m.Unit] = m.Value
	}
	s := rec.Summary
	require.Equal(t, s.AggregateOutputTokS, got[decode.OutputTokPerSec])
	require.Equal(t, s.AggregateOutputTokS/2, got[decode.RequestTokPerSec])
	require.Equal(t, s.MeanBatchMsPerToken/1000, got[decode.BatchSecPerToken])
	require.Equal(t, s.Serve.MedianTTFTMs/1000, got[decode.TTFTP50Sec], "ttft lines are vllm bench serve's TTFT")
	require.Equal(t, s.Serve.P99TPOTMs/1000, got[decode.TPOTP99Sec])
	require.Equal(t, s.Serve.P99ITLMs/1000, got[decode.ITLP99Sec])
	require.Equal(t, s.Serve.OutputThroughput, got[decode.ServeOutputTokPerS])
	require.Equal(t, 0.0, got[decode.FailedRequests])
	units := map[string]bool{}
	for _, u := range decode.Units() {
		units[u.Name] = true
		require.NotContains(t, u.Name, " ")
	}
	for u := range got {
		require.True(t, units[u], "unit %s has no Unit line", u)
	}
}

func TestPointValidation(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{})
	_, err := runner(t, srv).Measure(t.Context(), decode.Point{Workload: "text"})
	require.ErrorContains(t, err, "concurrency 0")
	require.ErrorContains(t, err, "repeats 0")
	_, err = runner(t, srv).Measure(t.Context(), point("video", 1, 1, 1, 0))
	require.ErrorContains(t, err, `workload "video"`)
	require.False(t, errors.Is(err, decode.ErrFailures))
}
