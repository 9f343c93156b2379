package progress

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/receipts"
)

// clock is a fake clock the test moves by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func point(done, failed int, elapsed time.Duration) bench.Progress {
	return bench.Progress{Set: "checks", Concurrency: 16, Arm: receipts.ArmCold, Done: done, Failed: failed, Total: 140, Elapsed: elapsed}
}

func TestText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		label string
		p     bench.Progress
		scale float64
		want  string
	}{
		{"", point(0, 0, 0), 1, "checks c=16 cold  0/140 0%  ETA ?  0 failed"},
		{"", point(70, 2, 2*time.Second), 1, "checks c=16 cold  70/140 50%  35 judgments/s  ETA 2.0s  2 failed"},
		{"baseline 3/10", point(35, 0, 5*time.Second), 1, "baseline 3/10  checks c=16 cold  35/140 25%  7 judgments/s  ETA 15.0s  0 failed"},
		{"", point(14, 0, 2*time.Second), 10, "checks c=16 cold  14/140 10%  0.7 judgments/s (model time, twin ×10)  ETA 18.0s wall  0 failed"},
		{"", bench.Progress{Set: "faces", Concurrency: 1, Arm: receipts.ArmWarm, Done: 1, Total: 200, Elapsed: 2 * time.Second}, 1,
			"faces c=1 warm  1/200 0%  0.5 judgments/s  ETA 6m38s  0 failed"},
		{"", bench.Progress{Set: "checks", Rate: 40, Concurrency: 16, Done: 70, Total: 140, Elapsed: 2 * time.Second}, 1,
			"checks rate=40/s max=16 cold  70/140 50%  35 judgments/s  ETA 2.0s  0 failed"},
		{"", bench.Progress{Set: "checks", Rate: 2.5, Total: 140}, 1, "checks rate=2.5/s cold  0/140 0%  ETA ?  0 failed"},
	} {
		require.Equal(t, tt.want, Text(tt.label, tt.p, tt.scale))
	}
	require.Equal(t, "2h05m", Duration(2*time.Hour+5*time.Minute+10*time.Second))
}

// On a terminal: the line is drawn at once from a saved cursor position,
// redrawn in place at most every 100 ms, always at the last judgment, and
// erased by the final report, leaving the cursor where it was.
func TestRendererTerminal(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	c := &clock{t: time.Unix(0, 0)}
	r := New(&out, true, WithClock(c.now))

	r.Observe(point(0, 0, 0))
	require.Equal(t, "\x1b7\x1b[?7lchecks c=16 cold  0/140 0%  ETA ?  0 failed\x1b[K\x1b[?7h", out.String())

	out.Reset()
	c.advance(50 * time.Millisecond)
	r.Observe(point(1, 0, 50*time.Millisecond))
	require.Empty(t, out.String(), "throttled: 50 ms since the last draw")

	c.advance(50 * time.Millisecond)
	r.Observe(point(10, 1, time.Second))
	require.Equal(t, "\x1b8\x1b[?7lchecks c=16 cold  10/140 7%  10 judgments/s  ETA 13.0s  1 failed\x1b[K\x1b[?7h", out.String())

	out.Reset()
	c.advance(time.Millisecond)
	r.Observe(point(140, 1, 2*time.Second))
	require.Contains(t, out.String(), "140/140 100%", "the last judgment is always drawn")

	out.Reset()
	final := point(140, 1, 2*time.Second)
	final.Final = true
	r.Observe(final)
	require.Equal(t, "\x1b8\x1b[K", out.String())

	out.Reset()
	r.Clear()
	r.Observe(final)
	require.Empty(t, out.String(), "nothing on screen, nothing to erase")

	// The next point saves the cursor anew and carries the label.
	r.SetLabel("candidate 2/10")
	r.Observe(point(0, 0, 0))
	require.True(t, strings.HasPrefix(out.String(), "\x1b7\x1b[?7lcandidate 2/10  checks c=16 cold"), out.String())
}

// Not a terminal: no escapes, a plain line each interval a point runs and
// none for a point shorter than that; nothing on the final report.
func TestRendererPlain(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	c := &clock{t: time.Unix(0, 0)}
	r := New(&out, false, WithClock(c.now))
	r.SetTimeScale(10)

	r.Observe(point(0, 0, 0))
	for i := 1; i <= 140; i++ {
		c.advance(250 * time.Millisecond) // 35 s in all
		r.Observe(point(i, 0, time.Duration(i)*250*time.Millisecond))
	}
	final := point(140, 0, 35*time.Second)
	final.Final = true
	r.Observe(final)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Equal(t, []string{
		"[progress] checks c=16 cold  40/140 28%  0.4 judgments/s (model time, twin ×10)  ETA 25.0s wall  0 failed",
		"[progress] checks c=16 cold  80/140 57%  0.4 judgments/s (model time, twin ×10)  ETA 15.0s wall  0 failed",
		"[progress] checks c=16 cold  120/140 85%  0.4 judgments/s (model time, twin ×10)  ETA 5.0s wall  0 failed",
	}, lines, "at 10, 20 and 30 s")
	require.NotContains(t, out.String(), "\x1b")

	// A short point says nothing.
	out.Reset()
	r.Observe(point(0, 0, 0))
	c.advance(9 * time.Second)
	r.Observe(point(140, 0, 9*time.Second))
	r.Observe(final)
	require.Empty(t, out.String())
}

// A planned run shows the point of the run and a whole-run ETA beside the
// point's, wall clock, from how long the points so far took.
func TestRendererPlan(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	c := &clock{t: time.Unix(0, 0)}
	r := New(&out, false, WithClock(c.now), WithInterval(time.Second))
	r.SetLabel("pass 1/2")
	r.SetTimeScale(10)
	r.Plan(4)
	r.Next()
	r.Observe(point(0, 0, 0))
	c.advance(2 * time.Second)
	r.Observe(point(70, 0, 2*time.Second))
	// Half of point 1 of 4 took 2 s: 7 more halves, 14 s.
	require.Equal(t, "[progress] pass 1/2  point 1 of 4  checks c=16 cold  70/140 50%  3.5 judgments/s (model time, twin ×10)  ETA 2.0s wall  0 failed  run ETA 14.0s wall\n", out.String())

	require.Equal(t, "run ETA ?", RunETA(1, 4, point(0, 0, 0), 0))
	require.Equal(t, "run ETA 8.0s wall", RunETA(3, 4, point(0, 0, 0), 8*time.Second), "2 points in 8 s, 2 to go")
}
