package audit

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/receipts"
)

// GPUHourlyEnv names the stated price of the serving machine per hour, in US
// dollars (all its GPUs: the figure prices what the window occupied).
const GPUHourlyEnv = "VETBENCH_GPU_HOURLY_USD"

// GPUHourly reads GPUHourlyEnv through getenv (os.Getenv in the runner). ok
// is false when it is unset or blank; a value that is not a positive, finite
// number is an error naming the variable and the value.
func GPUHourly(getenv func(string) string) (usd float64, ok bool, err error) {
	raw := strings.TrimSpace(getenv(GPUHourlyEnv))
	if raw == "" {
		return 0, false, nil
	}
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s=%q: not a number (want US dollars per hour, e.g. 2.49): %w", GPUHourlyEnv, raw, err)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0, false, fmt.Errorf("%s=%q: want a positive, finite price in US dollars per hour", GPUHourlyEnv, raw)
	}
	return v, true, nil
}

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
