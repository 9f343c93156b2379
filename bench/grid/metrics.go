package grid

import (
	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/receipts/matrix"
)

// Metrics are a measured cell's figures as benchmark metrics (units of
// bench/decode): total and per-request tok/s, TTFT and time between
// tokens (medians), average active requests, and queued = 1 for a
// Requests queued cell. A figure the cell lacks is left out.
func Metrics(c matrix.Cell) []metrics.Metric {
	var out []metrics.Metric
	add := func(v *float64, scale float64, unit string) {
		if v != nil {
			out = append(out, metrics.Metric{Value: *v * scale, Unit: unit})
		}
	}
	add(c.TotalTokS, 1, decode.OutputTokPerSec)
	add(c.PerRequestTokS, 1, decode.RequestTokPerSec)
	add(c.TTFTMs, 1e-3, decode.TTFTP50Sec)
	add(c.TimeBetweenTokensMs, 1e-3, decode.TBTP50Sec)
	add(c.AverageActive, 1, decode.AverageActive)
	if c.Status == matrix.Valid || c.Status == matrix.RequestsQueued {
		q := 0.0
		if c.Status == matrix.RequestsQueued {
			q = 1
		}
		out = append(out, metrics.Metric{Value: q, Unit: decode.QueuedCells})
	}
	return out
}
