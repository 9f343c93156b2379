package grid

import (
	"context"
	"time"
)

// The time scale is applied here and nowhere else: a twin at ×S runs S
// times faster than real time, so the run reads a model clock that
// advances S times faster than the wall and sleeps 1/S of every model
// wait. Every option (window, hold, timeouts, budget) is then model time,
// and so is every figure, which comes from timestamps of this clock (the
// stream client's too).

// now is the model clock: the wall clock at time scale 1.
func (r *Runner) now() time.Time {
	w := r.wall()
	if s := r.TimeScale; s > 0 && s != 1 {
		return r.epoch.Add(time.Duration(float64(w.Sub(r.epoch)) * s))
	}
	return w
}

// sleep waits d of model time, or until ctx ends.
func (r *Runner) sleep(ctx context.Context, d time.Duration) error {
	if s := r.TimeScale; s > 0 && s != 1 {
		d = time.Duration(float64(d) / s)
	}
	return sleep(ctx, d)
}
