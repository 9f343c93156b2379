package audit

import (
	"fmt"
	"math"

	"github.com/vetbench/vetbench/receipts"
)

// CostOf prices a run: seconds of the server per 1,000 judgments (wall ÷
// judgments × 1000, at the run's concurrency) and what they cost at
// hourlyUSD. Only the kept judgments count, since those are what the run
// delivered.
func CostOf(hourlyUSD float64, t receipts.Throughput) (receipts.Cost, error) {
	if math.IsNaN(hourlyUSD) || math.IsInf(hourlyUSD, 0) || hourlyUSD <= 0 {
		return receipts.Cost{}, fmt.Errorf("cost: hourly price %v: want a positive, finite number", hourlyUSD)
	}
	if t.Judgments <= 0 || t.WallSeconds <= 0 {
		return receipts.Cost{}, fmt.Errorf("cost: %d judgments in %.3gs: nothing to price", t.Judgments, t.WallSeconds)
	}
	secs := t.WallSeconds / float64(t.Judgments) * 1000
	return receipts.Cost{
		GPUHourlyUSD:   hourlyUSD,
		SecondsPer1000: secs,
		USDPer1000:     hourlyUSD * secs / 3600,
	}, nil
}
