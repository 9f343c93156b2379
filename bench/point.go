package bench

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/receipts"
)

// Point is one measured point of a sweep.
type Point struct {
	// Concurrency is the closed loop's judgments in flight; in an open
	// loop (Rate > 0) the cap on them, 0 for none.
	Concurrency int
	// Rate, when > 0, makes the point an open loop: judgments arrive at
	// Rate per second (Session.Options give the burstiness and
	// the seed; see Arrivals) and wait in the client for a slot.
	Rate float64
	// Arm is cold (reset the server's caches before the window, when the
	// server allows it; also when empty) or warm (keep whatever the caches
	// hold).
	Arm receipts.Arm
	// Warmup judgments run before the window, outside every figure.
	Warmup int
}

// ReceiptPath is where a point's receipt goes: <dir>/<set>_c<N>[_warm].json,
// or for an open loop <dir>/<set>_rate<R>[_max<N>][_warm].json.
func ReceiptPath(dir, set string, p Point) string {
	name := fmt.Sprintf("%s_c%d", set, max(p.Concurrency, 1))
	if p.Rate > 0 {
		name = fmt.Sprintf("%s_rate%s", set, strconv.FormatFloat(p.Rate, 'g', -1, 64))
		if p.Concurrency > 0 {
			name += fmt.Sprintf("_max%d", p.Concurrency)
		}
	}
	if p.Arm == receipts.ArmWarm {
		name += "_warm"
	}
	return filepath.Join(dir, name+".json")
}

// Name is the point's sub-benchmark name (metrics.PointName or, for an
// open loop, metrics.RatePointName); armed adds the arm.
func (p Point) Name(set string, armed bool) string {
	if p.Rate > 0 {
		return metrics.RatePointName(set, p.Rate, p.Concurrency, p.Arm, armed)
	}
	return metrics.PointName(set, p.Concurrency, p.Arm, armed)
}

// Describe is the point for a message: "c=16 cold", "rate=2/s max=16 cold".
func (p Point) Describe() string {
	arm := p.Arm
	if arm == "" {
		arm = receipts.ArmCold
	}
	if p.Rate <= 0 {
		return fmt.Sprintf("c=%d %s", max(p.Concurrency, 1), arm)
	}
	s := "rate=" + strconv.FormatFloat(p.Rate, 'g', -1, 64) + "/s"
	if p.Concurrency > 0 {
		s += fmt.Sprintf(" max=%d", p.Concurrency)
	}
	return s + " " + string(arm)
}
