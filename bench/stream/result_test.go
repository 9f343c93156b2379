package stream

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// steady is a request whose k-th token (k = 1..n) arrives at start + k·gap.
func steady(start time.Time, n int, gap time.Duration) *Result {
	r := &Result{Sent: start}
	for k := 1; k <= n; k++ {
		r.Timeline = append(r.Timeline, Point{T: start.Add(time.Duration(k) * gap), Tokens: k})
	}
	return r
}

func TestMeasureCountsTheWindowOnly(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	early := steady(t0, 100, 10*ms)            // tokens at 10ms … 1000ms
	late := steady(t0.Add(500*ms), 100, 20*ms) // tokens at 520ms … 2500ms
	idle := steady(t0.Add(5*time.Second), 3, ms)
	from, to := t0.Add(400*ms), t0.Add(900*ms)
	w := Measure([]*Result{early, late, idle}, from, to)
	// early: tokens 41..90 (50); late: tokens at 520..900 → 1..20 (20).
	require.Equal(t, 70, w.Tokens)
	require.Equal(t, 2, w.Requests)
	require.Equal(t, t0.Add(900*ms), w.Last)
	require.InDelta(t, 0.5, w.Seconds(), 1e-12)
	require.InDelta(t, 140, w.TokS(), 1e-9)

	// The denominator ends at the last update, not at the window's end.
	w = Measure([]*Result{early}, t0.Add(950*ms), t0.Add(2*time.Second))
	require.Equal(t, 5, w.Tokens)
	require.InDelta(t, 0.05, w.Seconds(), 1e-12)

	empty := Measure([]*Result{idle}, from, to)
	require.Zero(t, empty.Tokens)
	require.Zero(t, empty.TokS())
}
