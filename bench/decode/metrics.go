package decode

import (
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// Units of the token benchmarks (BenchmarkTokens, BenchmarkMatrix), for
// b.ReportMetric. Times end in "-sec" so benchstat scales them as times.
// The ttft, tpot, itl and e2el lines and the vllm- rates are `vllm bench
// serve`'s figures by its definitions (the receipt's vllm_bench_serve
// block); output-tok/s, request-tok/s and batch-sec-per-token are the
// published receipts' (the receipt's summary).
const (
	OutputTokPerSec     = tokens.UnitOutputTokPerSec  // Σ output tokens ÷ Σ run wall time (published definition)
	RequestTokPerSec    = tokens.UnitRequestTokPerSec // output-tok/s ÷ concurrency (published definition)
	BatchSecPerToken    = tokens.UnitBatchSecPerToken // mean batch time ÷ output tokens (the published "mean_tpot_ms")
	ServeOutputTokPerS  = "vllm-output-tok/s"         // output_throughput
	ServeRequestsPerSec = "vllm-req/s"                // request_throughput
	TTFTP50Sec          = tokens.UnitTTFTP50Sec       // median_ttft_ms: send to the first chunk with choices
	TTFTP99Sec          = "ttft-p99-sec"              // p99_ttft_ms
	TPOTP50Sec          = "tpot-p50-sec"              // median_tpot_ms: per request (latency − ttft) ÷ (n − 1)
	TPOTP99Sec          = "tpot-p99-sec"              // p99_tpot_ms
	ITLP50Sec           = "itl-p50-sec"               // median_itl_ms: every chunk gap of every request
	ITLP99Sec           = "itl-p99-sec"               // p99_itl_ms
	E2ELP50Sec          = "e2el-p50-sec"              // median_e2el_ms: send to the last chunk with choices
	FailedRequests      = tokens.UnitFailedRequests   // failed plus short requests (a count)
	TBTP50Sec           = "tbt-p50-sec"               // matrix: time between tokens, p50 over requests
	AverageActive       = "avg-active"                // matrix: mean vllm:num_requests_running in the window
	QueuedCells         = "queued"                    // matrix: 1 when the cell's requests queued (a count)
)

// Units lists the token benchmarks' units with benchstat's metadata; the
// suite prints their lines once (metrics.Unit.Line).
func Units() []metrics.Unit {
	return []metrics.Unit{
		{Name: OutputTokPerSec, Better: metrics.Higher},
		{Name: RequestTokPerSec, Better: metrics.Higher},
		{Name: BatchSecPerToken, Better: metrics.Lower},
		{Name: ServeOutputTokPerS, Better: metrics.Higher},
		{Name: ServeRequestsPerSec, Better: metrics.Higher},
		{Name: TTFTP50Sec, Better: metrics.Lower},
		{Name: TTFTP99Sec, Better: metrics.Lower},
		{Name: TPOTP50Sec, Better: metrics.Lower},
		{Name: TPOTP99Sec, Better: metrics.Lower},
		{Name: ITLP50Sec, Better: metrics.Lower},
		{Name: ITLP99Sec, Better: metrics.Lower},
		{Name: E2ELP50Sec, Better: metrics.Lower},
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
			metrics.Metric{Value: s.PerRequestOutputTokS, Unit: RequestTokPerSec})
	}
	if s.MeanBatchMsPerToken > 0 {
		out = append(out, metrics.Metric{Value: s.MeanBatchMsPerToken / 1000, Unit: BatchSecPerToken})
	}
	if v := s.Serve; v != nil && v.Completed > 0 {
		out = append(out,
			metrics.Metric{Value: v.OutputThroughput, Unit: ServeOutputTokPerS},
			metrics.Metric{Value: v.RequestThroughput, Unit: ServeRequestsPerSec},
			metrics.Metric{Value: v.MedianTTFTMs / 1000, Unit: TTFTP50Sec},
			metrics.Metric{Value: v.P99TTFTMs / 1000, Unit: TTFTP99Sec},
			metrics.Metric{Value: v.MedianE2ELMs / 1000, Unit: E2ELP50Sec})
		if r.Point.OutputTokens > 1 {
			out = append(out,
				metrics.Metric{Value: v.MedianTPOTMs / 1000, Unit: TPOTP50Sec},
				metrics.Metric{Value: v.P99TPOTMs / 1000, Unit: TPOTP99Sec},
				metrics.Metric{Value: v.MedianITLMs / 1000, Unit: ITLP50Sec},
				metrics.Metric{Value: v.P99ITLMs / 1000, Unit: ITLP99Sec})
		}
	}
	if g := s.Goodput; g != nil && g.Of > 0 {
		// The judgments' unit (better=higher): the share of requests
		// within the point's TTFT/TPOT targets.
		out = append(out, metrics.Metric{Value: g.Share, Unit: metrics.Goodput})
	}
	return out
}
