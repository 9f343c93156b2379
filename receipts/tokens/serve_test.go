package tokens

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// goldenRun is a mini-run of five requests over 2 s, timestamps binary
// fractions so every sum is exact, with what vLLM's benchmark records for
// each (vllm/benchmarks/lib/endpoint_request_func.py @ 02cfb534,
// async_request_openai_chat_completions):
//
//	A  sent 0      ttft 0.125, gaps 0.125 0.125 0.25, last chunk 0.625, 4 tokens: success
//	B  sent 0.375  ttft 0.25, no gap, last chunk 0.625, 1 token (short): success
//	C  sent 0.625  ttft 0.25, gap 0.25 (a 2-token chunk), then an error object
//	   in the stream (data: {"error": ...}, [DONE]): vLLM skips a chunk with
//	   neither choices nor usage, so a success of 3 tokens
//	D  sent 0.75   HTTP 500: failed
//	E  sent 1      ttft 0.125, gap 0.125, then the connection reset: failed
func goldenRun() Run {
	return Run{WallSeconds: 2, Requests: []Request{
		{ID: "A", PromptTokens: 10, OutputTokens: 4, StartSeconds: 0, TTFTSeconds: f64(0.125), ITLSeconds: []float64{0.125, 0.125, 0.25}, LatencySeconds: 0.625},
		{ID: "B", PromptTokens: 10, OutputTokens: 1, StartSeconds: 0.375, TTFTSeconds: f64(0.25), LatencySeconds: 0.25, ErrorClass: ClassShort, Error: "short stream: 1 output tokens, asked 4"},
		{ID: "C", PromptTokens: 12, OutputTokens: 3, StartSeconds: 0.625, TTFTSeconds: f64(0.25), ITLSeconds: []float64{0.25}, LatencySeconds: 0.5,
			ErrorClass: "stream_error", Error: "error in stream (code 500) InternalServerError: engine dead"},
		{ID: "D", StartSeconds: 0.75, ErrorClass: "http_500", Error: "HTTP 500"},
		{ID: "E", PromptTokens: 12, OutputTokens: 2, StartSeconds: 1, TTFTSeconds: f64(0.125), ITLSeconds: []float64{0.125}, LatencySeconds: 0.25,
			ErrorClass: "cut", Error: "stream cut before [DONE] after 2 tokens: connection reset by peer"},
	}}
}

// TestServeFiguresGolden is calculate_metrics (vllm/benchmarks/serve.py @
// 009e6d4a) over goldenRun, worked by hand: A, B, C completed (C's error
// object is no failure to vLLM), D and E failed. TTFT 125 250 250 ms; TPOT
// of A (0.5 s ÷ 3) and C (0.25 s ÷ 2), B's one token none (0 for
// goodput); ITL A's three gaps and C's one, pooled; E2EL 625 250 500 ms.
// Goodput ttft:250 tpot:150: B (ttft = the limit, good as s >= r) and C;
// A's TPOT is over. Peak tokens: bucket [0, 1) holds A's 4 chunks, B's 1
// and C's first (0.875); peak concurrency 2, as A and B leave at 0.625
// before C arrives then (departures first).
func TestServeFiguresGolden(t *testing.T) {
	p := Point{Workload: WorkloadText, Concurrency: 2, OutputTokens: 4, Repeats: 1, NumPrompts: 5,
		ServeGoodput: map[string]float64{"ttft": 250, "tpot": 150}, MetricPercentiles: []float64{90, 99}}
	s := ServeFigures(p, []Run{goldenRun()})
	require.NotNil(t, s)
	require.Equal(t, 3, s.Completed, "completed")
	require.Equal(t, 2, s.Failed, "failed")
	require.Equal(t, 32, s.TotalInputTokens, "total_input_tokens: usage prompt_tokens of A, B, C")
	require.Equal(t, 8, s.TotalOutputTokens, "total_output_tokens")
	for _, c := range []struct {
		name      string
		want, got float64
	}{
		{"duration", 2, s.Duration},
		{"request_throughput", 1.5, s.RequestThroughput},
		{"output_throughput", 4, s.OutputThroughput},
		{"total_token_throughput", 20, s.TotalTokenThroughput},
		{"request_goodput", 1, *s.RequestGoodput},
		{"max_output_tokens_per_s", 6, s.MaxOutputTokensPerS},
		{"max_concurrent_requests", 2, float64(s.MaxConcurrentRequests)},
		{"mean_ttft_ms", 625.0 / 3, s.MeanTTFTMs},
		{"median_ttft_ms", 250, s.MedianTTFTMs},
		{"std_ttft_ms", 58.92556509887896, s.StdTTFTMs},
		{"p99_ttft_ms", 250, s.P99TTFTMs},
		{"mean_tpot_ms", 875.0 / 6, s.MeanTPOTMs},
		{"median_tpot_ms", 875.0 / 6, s.MedianTPOTMs},
		{"std_tpot_ms", 125.0 / 6, s.StdTPOTMs},
		{"p99_tpot_ms", 125 + 0.99*(500.0/3-125), s.P99TPOTMs},
		{"p90_tpot_ms", 162.5, s.Percentiles["p90_tpot_ms"]},
		{"mean_itl_ms", 187.5, s.MeanITLMs},
		{"median_itl_ms", 187.5, s.MedianITLMs},
		{"std_itl_ms", 62.5, s.StdITLMs},
		{"p99_itl_ms", 250, s.P99ITLMs},
		{"mean_e2el_ms", 1375.0 / 3, s.MeanE2ELMs},
		{"median_e2el_ms", 500, s.MedianE2ELMs},
		{"std_e2el_ms", 155.90239111558088, s.StdE2ELMs},
		{"p99_e2el_ms", 622.5, s.P99E2ELMs},
		{"p90_e2el_ms", 600, s.Percentiles["p90_e2el_ms"]},
	} {
		require.InDelta(t, c.want, c.got, 1e-9, c.name)
	}
}

// A completed request the server counts no token for (usage
// completion_tokens 0 after the role chunk) has output_len 0 in vLLM:
// calculate_metrics takes `not output_len` to its tokenizer, whose count
// of the empty text is 0 (the 1 is only for --skip-tokenizer-init, which
// saves no TTFT, TPOT or ITL at all). It adds nothing to
// total_output_tokens, no TPOT sample, TPOT 0 for goodput, and 0 to the
// result file's output_lens.
func TestServeFiguresZeroOutputTokens(t *testing.T) {
	p := Point{Workload: WorkloadText, Concurrency: 1, OutputTokens: 4, Repeats: 1}
	run := Run{WallSeconds: 1, Requests: []Request{
		{ID: "A", PromptTokens: 10, OutputTokens: 4, TTFTSeconds: f64(0.125), ITLSeconds: []float64{0.125, 0.125, 0.125}, LatencySeconds: 0.5},
		{ID: "Z", PromptTokens: 10, OutputTokens: 0, StartSeconds: 0.5, TTFTSeconds: f64(0.25), LatencySeconds: 0.25,
			ErrorClass: ClassShort, Error: "short stream: 0 output tokens, asked 4"},
	}}
	s := ServeFigures(p, []Run{run})
	require.Equal(t, 2, s.Completed)
	require.Equal(t, 4, s.TotalOutputTokens, "Z adds 0 output tokens")
	require.InDelta(t, 4.0, s.OutputThroughput, 1e-12)
	require.InDelta(t, 24.0, s.TotalTokenThroughput, 1e-12, "(20 input + 4 output) ÷ 1 s")
	require.InDelta(t, 125.0, s.MeanTPOTMs, 1e-9, "A's TPOT alone")
	r := &Receipt{Point: p, Runs: []Run{run}, Summary: Summary{Requests: 2, Serve: s}}
	m, err := ServeResult(r)
	require.NoError(t, err)
	require.Equal(t, []int{4, 0}, m["output_lens"])
}

// PercentileKey names percentile p as vLLM's result file does:
// str(int(p)) when whole, else Python's str(p), which writes below 1e-4
// with an exponent ("1e-05").
func TestPercentileKeyIsVLLMs(t *testing.T) {
	for p, want := range map[float64]string{
		99: "p99_itl_ms", 50: "p50_itl_ms", 100: "p100_itl_ms", 0: "p0_itl_ms",
		99.9: "p99.9_itl_ms", 12.5: "p12.5_itl_ms", 0.0001: "p0.0001_itl_ms",
		0.00001: "p1e-05_itl_ms", 0.000015: "p1.5e-05_itl_ms",
	} {
		require.Equal(t, want, PercentileKey(p, "itl"), "%v", p)
	}
}

// The result file's per-request lists hold every request, failed ones
// as vLLM's RequestFuncOutput leaves them: a failure never sets latency
// (an exception, an HTTP error, or no chunk with choices: 0.0), while a
// TTFT taken before the failure stays (E's 0.125; D, refused, has none);
// output_lens 0, the gaps that arrived, the error text.
func TestServeResultListsFailedAsVLLM(t *testing.T) {
	p := Point{Workload: WorkloadText, Concurrency: 2, OutputTokens: 4, Repeats: 1, NumPrompts: 5}
	runs := []Run{goldenRun()}
	r := &Receipt{Point: p, Runs: runs, Summary: Summary{Requests: 5, Serve: ServeFigures(p, runs)}}
	m, err := ServeResult(r)
	require.NoError(t, err)
	require.Equal(t, []float64{0.625, 0.25, 0.5, 0, 0}, m["latencies"])
	require.Equal(t, []float64{0.125, 0.25, 0.25, 0, 0.125}, m["ttfts"])
	require.Equal(t, []int{4, 1, 3, 0, 0}, m["output_lens"])
	require.Equal(t, []int{10, 10, 12, 0, 12}, m["input_lens"])
	require.Equal(t, [][]float64{{0.125, 0.125, 0.25}, {}, {0.25}, {}, {0.125}}, m["itls"])
	errs := m["errors"].([]string)
	require.Equal(t, []string{"", "", ""}, errs[:3])
	require.Equal(t, "HTTP 500", errs[3])
	require.Contains(t, errs[4], "connection reset")
}

// vllm bench serve saves the statistics of --percentile-metrics only
// (default "ttft,tpot,itl": no e2el key at all). A figure the file does
// not hold is not compared, and not shown as a baseline of 0.
func TestServeResultWithoutE2ELComparesNoE2EL(t *testing.T) {
	r := sample()
	m, err := ServeResult(r)
	require.NoError(t, err)
	for _, k := range []string{"mean_e2el_ms", "median_e2el_ms", "std_e2el_ms", "p99_e2el_ms"} {
		delete(m, k)
	}
	data, err := json.Marshal(m)
	require.NoError(t, err)
	back, err := DecodeServeResult(data, "r.json")
	require.NoError(t, err)
	pc, err := ComparePoint(back[0], r)
	require.NoError(t, err)
	_, has := pc.Figure("median_e2el_ms")
	require.False(t, has, "the file holds no median_e2el_ms")
	f, has := pc.Figure("median_itl_ms")
	require.True(t, has)
	require.InDelta(t, 0, f.Delta.Rel, 1e-12)
	pc, err = ComparePoint(r, back[0])
	require.NoError(t, err)
	_, has = pc.Figure("median_e2el_ms")
	require.False(t, has, "nor as the candidate")
}

// A result file read and written back keeps its keys: no e2el statistic
// appears as 0.
func TestServeResultWrittenBackHoldsWhatItRead(t *testing.T) {
	m, err := ServeResult(sample())
	require.NoError(t, err)
	delete(m, "median_e2el_ms")
	data, err := json.Marshal(m)
	require.NoError(t, err)
	back, err := DecodeServeResult(data, "r.json")
	require.NoError(t, err)
	out, err := ServeResult(back[0])
	require.NoError(t, err)
	require.NotContains(t, out, "median_e2el_ms")
	require.Contains(t, out, "mean_e2el_ms")
}
