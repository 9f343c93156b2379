package decode

import (
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// Units of the token benchmarks (BenchmarkTokens, BenchmarkMatrix), for
// b.ReportMetric. Times end in "-sec" so benchstat scales them as times.
const (
	OutputTokPerSec  = "output-tok/s"  // Σ output tokens ÷ Σ batch wall time
	RequestTokPerSec = "request-tok/s" // output-tok/s ÷ concurrency (the published definition)
	MeanTPOTSec      = "mean-tpot-sec" // mean batch time ÷ output tokens (the published definition)
	TPOTP50Sec       = "tpot-p50-sec"  // per request (e2e − ttft) ÷ (n − 1), vllm bench serve's TPOT
	TPOTP99Sec       = "tpot-p99-sec"
	TTFTP50Sec       = "ttft-p50-sec"
	TTFTP90Sec       = "ttft-p90-sec"
	TTFTP99Sec       = "ttft-p99-sec"
	FailedRequests   = "failed-requests" // failed plus short requests (a count)
	TBTP50Sec        = "tbt-p50-sec"     // matrix: time between tokens, p50 over requests
	AverageActive    = "avg-active"      // matrix: mean vllm:num_requests_running in the window
	QueuedCells      = "queued"          // matrix: 1 when the cell's requests queued (a count)
)

// Units lists the token benchmarks' units with benchstat's metadata; the
// suite prints their lines once (metrics.Unit.Line).
func Units() []metrics.Unit {
	return []metrics.Unit{
		{Name: OutputTokPerSec, Better: metrics.Higher},
		{Name: RequestTokPerSec, Better: metrics.Higher},
		{Name: MeanTPOTSec, Better: metrics.Lower},
		{Name: TPOTP50Sec, Better: metrics.Lower},
		{Name: TPOTP99Sec, Better: metrics.Lower},
		{Name: TTFTP50Sec, Better: metrics.Lower},
		{Name: TTFTP90Sec, Better: metrics.Lower},
		{Name: TTFTP99Sec, Better: metrics.Lower},
		{Name: FailedRequests, Better: metrics.Lower, Exact: true},
		{Name: TBTP50Sec, Better: metrics.Lower},
		{Name: AverageActive, Better: metrics.Higher},
		{Name: QueuedCells, Better: metrics.Lower, Exact: true},
	}
}

// Metrics are a token receipt's figures as benchmark metrics. A figure the
// receipt lacks (no request samples) is left out, never reported as 0.
func Metrics(r *tokens.Receipt) []metrics.Metric {
	if r == nil {
		return nil
	}
	s := r.Summary
	out := []metrics.Metric{{Value: float64(s.Failed + s.Short), Unit: FailedRequests}}
	if s.AggregateOutputTokS > 0 {
		out = append(out,
			metrics.Metric{Value: s.AggregateOutputTokS, Unit: OutputTokPerSec},
			metrics.Metric{Value: s.PerRequestOutputTokS, Unit: RequestTokPerSec},
			metrics.Metric{Value: s.MeanTPOTMs / 1000, Unit: MeanTPOTSec})
	}
	if d := s.TPOTMs; d != nil {
		out = append(out, metrics.Metric{Value: d.P50 / 1000, Unit: TPOTP50Sec}, metrics.Metric{Value: d.P99 / 1000, Unit: TPOTP99Sec})
	}
	if d := s.TTFTMs; d != nil {
		out = append(out, metrics.Metric{Value: d.P50 / 1000, Unit: TTFTP50Sec},
			metrics.Metric{Value: d.P90 / 1000, Unit: TTFTP90Sec}, metrics.Metric{Value: d.P99 / 1000, Unit: TTFTP99Sec})
	}
	if g := s.Goodput; g != nil && g.Of > 0 {
		// The judgments' unit (better=higher): the share of requests
		// within the point's TTFT/TPOT targets.
		out = append(out, metrics.Metric{Value: g.Share, Unit: metrics.Goodput})
	}
	return out
}
