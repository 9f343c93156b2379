// Package slo decides whether a run met its stated service-level
// objective: a per-judgment latency target and the share of judgments
// (goodput) that must be within it. receipts/tally counts the judgments
// within the target; this package says what a count means. A missed
// target fails the point (bench.Measure wraps ErrMissed), and the speed
// gate holds the benchmark line's goodput metric to the same target
// (receipts/speed Policy.Floors).
package slo

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/vetbench/vetbench/receipts"
)

// ErrMissed: the run's goodput is below its stated target.
var ErrMissed = errors.New("SLO missed")

// Met says whether goodput reaches the target: at least target of the of
// finished judgments within the latency target. A window where nothing
// finished meets no target.
func Met(goodput, target float64, of int) bool {
	return of > 0 && goodput >= target
}

// Check is the receipt's verdict: nil when no goodput target was stated or
// it was met, else an error wrapping ErrMissed that says by how much.
func Check(r *receipts.Receipt) error {
	if r == nil || r.Throughput.SLO == nil {
		return nil
	}
	s := r.Throughput.SLO
	if s.Target <= 0 || Met(s.Goodput, s.Target, s.Of) {
		return nil
	}
	return fmt.Errorf("%w: %d of %d judgments (%s) within %ss, below the stated goodput %s",
		ErrMissed, s.Within, s.Of, pct(s.Goodput), strconv.FormatFloat(s.LatencySeconds, 'g', 4, 64), pct(s.Target))
}

func pct(share float64) string { return strconv.FormatFloat(100*share, 'f', 1, 64) + "%" }
