package tokens

// Units of a receipt's figures as benchmark lines name them in a run's
// bench.txt (BenchmarkTokens reports them; bench/decode lists them all):
// here so that a reader of bench.txt (the report) and its writer share
// one spelling. Times are in seconds.
const (
	UnitOutputTokPerSec  = "output-tok/s"        // Summary.AggregateOutputTokS
	UnitRequestTokPerSec = "request-tok/s"       // Summary.PerRequestOutputTokS
	UnitBatchSecPerToken = "batch-sec-per-token" // Summary.MeanBatchMsPerToken ÷ 1000
	UnitTTFTP50Sec       = "ttft-p50-sec"        // Serve.MedianTTFTMs ÷ 1000
	UnitFailedRequests   = "failed-requests"     // Summary.Failed + Summary.Short
)
