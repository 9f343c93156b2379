package stub

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTimerfdWakerWakes: the timerfd waker wakes its waiters, in
// deadline order, and stops. (How precisely is BenchmarkWakeLateness's
// figure, not a test's.)
func TestTimerfdWakerWakes(t *testing.T) {
	w, stop, err := newWaker()
	require.NoError(t, err)
	defer stop()
	t0 := time.Now()
	late, early := w.after(t0.Add(3*time.Millisecond)), w.after(t0.Add(time.Millisecond))
	select {
	case <-early:
	case <-time.After(10 * time.Second):
		t.Fatal("the 1 ms waiter never woke")
	}
	select {
	case <-late:
	case <-time.After(10 * time.Second):
		t.Fatal("the 3 ms waiter never woke")
	}
}

// BenchmarkWakeLateness reports how late a 300 µs sleep of the clock
// wakes on an otherwise idle process (late-µs, the mean; worst-µs), on
// package time's timers and on the timerfd waker, without the clock's
// lateness correction. Go's timers wait in epoll_wait, whose timeout is
// whole milliseconds, so on an idle process a sub-millisecond sleep takes
// about one; the waker's timerfd fires within the kernel's timer slack.
func BenchmarkWakeLateness(b *testing.B) {
	for _, name := range []string{"time", "timerfd"} {
		b.Run(name, func(b *testing.B) {
			c := &clock{origin: time.Now(), scale: 1}
			if name == "timerfd" {
				w, stop, err := newWaker()
				require.NoError(b, err)
				defer stop()
				c.waker.Store(w)
			}
			var sum, worst time.Duration
			n := 0
			for b.Loop() {
				target := time.Now().Add(300 * time.Microsecond)
				require.NoError(b, c.sleep(context.Background(), target, time.Until(target)))
				late := time.Since(target)
				sum, worst, n = sum+late, max(worst, late), n+1
			}
			b.ReportMetric(float64(sum.Microseconds())/float64(n), "late-µs")
			b.ReportMetric(float64(worst.Microseconds()), "worst-µs")
		})
	}
}
