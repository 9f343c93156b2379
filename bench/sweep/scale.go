package sweep

import (
	"fmt"
	"strconv"
)

// Scale is the model-time view of a target's figures: a twin that runs
// Factor times faster than real time does in one wall-clock second what
// the modelled GPU does in Factor. Receipts and benchmark lines keep the
// wall clock (what was measured); every console figure goes through the
// run's Scale, which is read from the target the run measures
// (bench.Endpoint.Target.TimeScale) and nowhere else, so no reader
// converts twice or forgets to.
type Scale struct {
	// Factor is > 1 for a time-scaled twin, else 1.
	Factor float64
}

// ScaleOf is the view of a target recorded with time scale f (0 or 1: real
// time).
func ScaleOf(f float64) Scale {
	if f <= 0 || f == 1 {
		f = 1
	}
	return Scale{Factor: f}
}

// Scale is the run's model-time view, from its target.
func (r *Run) Scale() Scale { return ScaleOf(r.Target.Endpoint.Target.TimeScale) }

// Scaled says the figures differ from the wall clock's.
func (s Scale) Scaled() bool { return s.Factor != 1 }

// Rate is a wall-clock rate (per second) in model time.
func (s Scale) Rate(perWallSecond float64) float64 { return perWallSecond / s.factor() }

// Seconds is a wall-clock duration (seconds, or ms) in model time.
func (s Scale) Seconds(wall float64) float64 { return wall * s.factor() }

func (s Scale) factor() float64 {
	if s.Factor <= 0 {
		return 1
	}
	return s.Factor
}

// String is the label a scaled figure carries: "model time, twin ×10";
// "" in real time.
func (s Scale) String() string {
	if !s.Scaled() {
		return ""
	}
	return "model time, twin ×" + strconv.FormatFloat(s.Factor, 'g', -1, 64)
}

// Note is the line a console prints once under the target: what the
// figures below are.
func (s Scale) Note() string {
	if !s.Scaled() {
		return ""
	}
	return fmt.Sprintf("twin ×%g time scale: figures below in model time, converted from the wall clock", s.Factor)
}
