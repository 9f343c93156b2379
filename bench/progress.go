package bench

import (
	"time"

	"github.com/vetbench/vetbench/receipts"
)

// Progress is how far one measured window has got: what a console shows
// while a point runs. The measuring library only reports it
// (Session.OnProgress); the CLI and the benchmark suite render it
// (bench/sweep/progress).
type Progress struct {
	Set string
	// Concurrency is the closed loop's level; an open loop's cap (0: none)
	// beside its arrival Rate (0 in a closed loop).
	Concurrency int
	Rate        float64
	Arm         receipts.Arm
	// Done counts the judgments finished so far, the Failed ones included;
	// Total is the set's size.
	Done, Failed, Total int
	// Elapsed is the time since the window opened, on the pool's clock.
	Elapsed time.Duration
	// Final is set once, when the window has closed.
	Final bool
}

// progress is the point's reporter, nil when nobody listens.
func (s *Session) progress(c int, rate float64, arm receipts.Arm) func(done, failed int, elapsed time.Duration, final bool) {
	if s.OnProgress == nil {
		return nil
	}
	if arm == "" {
		arm = receipts.ArmCold
	}
	return func(done, failed int, elapsed time.Duration, final bool) {
		s.OnProgress(Progress{Set: s.Set.Name, Concurrency: c, Rate: rate, Arm: arm, Done: done, Failed: failed,
			Total: len(s.Set.Cases), Elapsed: elapsed, Final: final})
	}
}
