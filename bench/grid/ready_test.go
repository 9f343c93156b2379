package grid_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/grid"
	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/receipts/matrix"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestReadinessHoldsForHoldWithoutABreak(t *testing.T) {
	t.Parallel()
	r := grid.Readiness{C: 4, Hold: 3 * time.Second}
	steps := []struct {
		at               float64
		running, waiting float64
		streaming        int
		ready            bool
		why              string
	}{
		{0, 4, 0, 3, false, "3 of 4 streams have tokens"},
		{1, 3, 1, 4, false, "1 requests waiting"},
		{2, 3, 0, 4, false, "3 of 4 requests running"},
		{3, 4, 0, 4, false, "ready for 0s of 3s"},
		{5, 4, 0, 4, false, "ready for 2s of 3s"},
		{5.5, 4, 1, 4, false, "1 requests waiting"}, // a break: start over
		{6, 5, 0, 4, false, "ready for 0s of 3s"},
		{9, 4, 0, 4, true, ""},
	}
	for _, s := range steps {
		ok, why := r.Observe(grid.Gauges{At: at(s.at), Running: s.running, Waiting: s.waiting, OK: true}, s.streaming)
		require.Equal(t, s.ready, ok, "t=%v", s.at)
		require.Equal(t, s.why, why, "t=%v", s.at)
	}
	// Without metrics only the client streams count.
	r = grid.Readiness{C: 2}
	ok, _ := r.Observe(grid.Gauges{At: at(0)}, 2)
	require.True(t, ok)
	ok, why := r.Observe(grid.Gauges{At: at(1)}, 1)
	require.False(t, ok)
	require.Equal(t, "1 of 2 streams have tokens", why)
}

func TestClassify(t *testing.T) {
	t.Parallel()
	full := grid.Occupy([]grid.Gauges{{Running: 8, OK: true}, {Running: 8, OK: true}, {Running: 7.8, OK: true}})
	cases := []struct {
		name   string
		o      grid.Outcome
		status matrix.Status
		reason string
	}{
		{"valid", grid.Outcome{C: 8, Occupancy: full}, matrix.Valid, ""},
		{"valid_without_metrics", grid.Outcome{C: 8}, matrix.Valid, ""},
		{"waiting", grid.Outcome{C: 8, Occupancy: grid.Occupy([]grid.Gauges{{Running: 8, OK: true}, {Running: 8, Waiting: 2, OK: true}})},
			matrix.RequestsQueued, "requests waited in 1 of 2 readings (up to 2)"},
		{"underfilled", grid.Outcome{C: 8, Occupancy: grid.Occupy([]grid.Gauges{{Running: 8, OK: true}, {Running: 7, OK: true}})},
			matrix.RequestsQueued, "7.50 of 8 requests running on average (below 0.95·C)"},
		{"one_stream_between_requests", grid.Outcome{C: 1, Occupancy: grid.Occupy([]grid.Gauges{{Running: 1, OK: true}, {Running: 0, OK: true}})}, matrix.Valid, ""},
		{"just_full_enough", grid.Outcome{C: 20, Occupancy: grid.Occupy([]grid.Gauges{{Running: 20, OK: true}, {Running: 18, OK: true}})}, matrix.Valid, ""},
		{"never_full", grid.Outcome{C: 20, Occupancy: grid.Occupy([]grid.Gauges{{Running: 19, OK: true}, {Running: 19, OK: true}})},
			matrix.RequestsQueued, "never all 20 requests running: at most 19 in 2 readings"},
		{"one_stream_never_counted", grid.Outcome{C: 1, Occupancy: grid.Occupy([]grid.Gauges{{Running: 0, OK: true}})}, matrix.Valid, ""},
		{"never_ready", grid.Outcome{C: 8, NotReady: "2 requests waiting after 60s", Occupancy: full},
			matrix.RequestsQueued, "never ready: 2 requests waiting after 60s"},
		{"failed_beats_queued", grid.Outcome{C: 8, Failures: []string{"cut", "cut"}, NotReady: "x"}, matrix.Failed, "2 request(s) failed: cut (and others)"},
		{"loop_beats_all", grid.Outcome{C: 8, Loop: errors.New("loop detected"), Failures: []string{"cut"}}, matrix.Looped, "loop detected"},
	}
	for _, c := range cases {
		s, why := grid.Classify(c.o)
		require.Equal(t, c.status, s, c.name)
		require.Equal(t, c.reason, why, c.name)
	}
	// A failed reading is not a sample.
	require.Equal(t, 1, grid.Occupy([]grid.Gauges{{Running: 3, OK: true}, {}}).Samples)
}

func TestSkipRuleAndKVCapacity(t *testing.T) {
	t.Parallel()
	kv, ok := grid.KVCapacity(map[string]string{"num_gpu_blocks": "23456", "block_size": "16"})
	require.True(t, ok)
	require.Equal(t, 375296, kv)
	for _, cc := range []map[string]string{nil, {"num_gpu_blocks": "engine 0: 1; engine 1: 2", "block_size": "16"}, {"num_gpu_blocks": "0", "block_size": "16"}} {
		_, ok := grid.KVCapacity(cc)
		require.False(t, ok, "%v", cc)
	}
	require.Empty(t, grid.SkipReason(91, 0, 4096, kv, 0), "91 × 4096 = 372736 fits")
	require.Contains(t, grid.SkipReason(92, 0, 4096, kv, 0), "exceeds the KV cache of 375296 tokens")
	require.Empty(t, grid.SkipReason(128, 126912, 4096, 0, 0), "unknown capacity skips nothing")
	require.Equal(t, "context 131072 + output 4096 exceeds max_model_len 131072", grid.SkipReason(1, 131072, 4096, 0, 131072))
	// A cell's streams share its cached prompt: context + C × output.
	require.Empty(t, grid.CellSkipReason(32, 126912, 4096, kv, 0, true), "126912 + 32 × 4096 = 257984 fits when shared")
	require.Contains(t, grid.CellSkipReason(32, 126912, 4096, kv, 0, false), "exceeds the KV cache", "unshared: the peer's rule")
	require.Contains(t, grid.CellSkipReason(90, 8192, 4096, kv, 0, true), "8192 + 90 × 4096 = 376832 tokens", "shared, and still over")
	require.Equal(t, grid.SkipReason(1, 131072, 4096, 0, 131072), grid.CellSkipReason(1, 131072, 4096, 0, 131072, true))
	require.Equal(t, 60*time.Second, grid.ReadyTimeout(32768))
	require.Equal(t, 120*time.Second, grid.ReadyTimeout(65536))
	require.Equal(t, 180*time.Second, grid.ReadyTimeout(131072))
}

// timeline is a stream whose k-th token's usage arrives at first + (k−1)·gap.
func timeline(sent, first time.Time, gap time.Duration, n int, done bool) *stream.Result {
	r := &stream.Result{Sent: sent, FirstToken: first, OutputTokens: n, TokensFrom: stream.FromContinuous, Done: done}
	for k := 1; k <= n; k++ {
		r.Timeline = append(r.Timeline, stream.Point{T: first.Add(time.Duration(k-1) * gap), Tokens: k})
	}
	r.LastToken = r.Timeline[n-1].T
	r.End = r.LastToken
	return r
}

// The window counts only tokens whose usage arrived inside it, and times
// them to the last update, not to the cancel.
func TestWindowFigures(t *testing.T) {
	t.Parallel()
	// Window (10 s, 20 s]. Stream a started at 0 and runs past the end
	// (1 token every 100 ms from 1 s): tokens at 10.1 … 20.0 s count, 100.
	// Stream b starts inside at 12 s, 20 tokens every 100 ms, ends at
	// 13.9 s: all 20 count, and it completed inside. Stream c ended before
	// the window: nothing.
	a := timeline(at(0), at(1), 100*time.Millisecond, 300, false)
	b := timeline(at(12), at(12), 100*time.Millisecond, 20, true)
	c := timeline(at(0), at(0.5), 10*time.Millisecond, 50, true)
	cell := matrix.Cell{Concurrency: 2}
	occ := grid.Occupy([]grid.Gauges{{Running: 2, OK: true}, {Running: 1, OK: true}})
	require.True(t, grid.Figures(&cell, []*stream.Result{a, b, c}, at(10), at(20), occ))
	require.Equal(t, 120, *cell.OutputTokens)
	require.InDelta(t, 10.0, *cell.MeasuredSeconds, 1e-9, "to the last update at 20.0 s")
	require.InDelta(t, 12.0, *cell.TotalTokS, 1e-9)
	require.InDelta(t, 6.0, *cell.PerRequestTokS, 1e-9)
	require.Equal(t, 1, cell.CompletedRequests)
	require.Equal(t, 1.5, *cell.AverageActive)
	require.InDelta(t, 500, *cell.TTFTMs, 1e-6, "median of 1000, 0, 500 ms")
	require.InDelta(t, 100, *cell.TimeBetweenTokensMs, 1e-6)

	// Positive control: a window past every update counts nothing.
	empty := matrix.Cell{Concurrency: 2}
	require.False(t, grid.Figures(&empty, []*stream.Result{a, b, c}, at(40), at(50), occ))
	require.Nil(t, empty.TotalTokS)
}

// At max_tokens ≤ 512 streams end and restart between readings, so the
// peer takes C completed requests for C running: without the rule a
// 16-stream cell of short streams was never ready (Requests queued after
// its timeout), with it the hold runs.
func TestReadinessShortOutputCountsCompleted(t *testing.T) {
	t.Parallel()
	long := grid.Readiness{C: 16, Hold: time.Second}
	short := grid.Readiness{C: 16, Hold: time.Second, ShortOutput: true}
	g := func(s float64) grid.Gauges { return grid.Gauges{At: at(s), Running: 15, OK: true} }
	ok, why := short.ObserveDone(g(0), 16, 3)
	require.False(t, ok)
	require.Equal(t, "15 of 16 requests running and 3 of 16 completed", why)
	for _, s := range []float64{1, 2, 3} {
		ok, why = long.ObserveDone(g(s), 16, 40)
		require.False(t, ok)
		require.Equal(t, "15 of 16 requests running", why, "the rule is for short outputs only")
	}
	ok, _ = short.ObserveDone(g(1), 16, 16)
	require.False(t, ok)
	ok, _ = short.ObserveDone(g(2), 16, 20)
	require.True(t, ok, "16 completed, held for 1 s")
	require.Equal(t, 512, grid.ShortOutputTokens)
}
