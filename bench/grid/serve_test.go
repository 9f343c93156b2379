package grid_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/decode/tokenstest"
	"github.com/vetbench/vetbench/bench/grid"
	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/receipts/matrix"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// chunked is a completed stream as vLLM's client records it: sent at
// sent, first chunk with choices at first, then one chunk after each gap.
func chunked(sent, first time.Time, n int, gaps ...time.Duration) *stream.Result {
	r := &stream.Result{Sent: sent, FirstToken: first, FirstChunk: first, OutputTokens: n,
		TokensFrom: stream.FromContinuous, Done: true, ChunkGaps: gaps}
	t := first
	for _, g := range gaps {
		t = t.Add(g)
	}
	r.LastChunk, r.LastToken, r.End = t, t, t
	return r
}

// A cell's vllm_bench_serve block is receipts/tokens' ServeFigures over
// the cell's completed requests, and only those: a stream cut at the
// window's end or ending after it does not count.
func TestCellServeFiguresAreTokensServeFigures(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	a := chunked(at(1), at(1.05), 4, 10*ms, 10*ms, 80*ms)
	b := chunked(at(1.5), at(1.52), 3, 20*ms, 30*ms)
	cut := chunked(at(2), at(2.01), 3, 10*ms, 10*ms)
	cut.Done = false
	late := chunked(at(2.5), at(2.6), 3, 10*ms, 10*ms) // ends at 2.62 s, after the window
	got := grid.Serve([]*stream.Result{a, cut, b, late}, at(2.55), 4)
	require.NotNil(t, got)

	// The same records, written by hand as vetbench tokens keeps them.
	f := func(v float64) *float64 { return &v }
	recs := []tokens.Request{
		{PromptTokens: 0, OutputTokens: 4, StartSeconds: 0, TTFTSeconds: f(0.05), ITLSeconds: []float64{0.01, 0.01, 0.08}, LatencySeconds: 0.15},
		{PromptTokens: 0, OutputTokens: 3, StartSeconds: 0.5, TTFTSeconds: f(0.02), ITLSeconds: []float64{0.02, 0.03}, LatencySeconds: 0.07,
			Error: "short", ErrorClass: tokens.ClassShort}, // 3 of 4 tokens: still completed for vLLM
	}
	want := tokens.ServeFigures(tokens.Point{OutputTokens: 4}, []tokens.Run{{WallSeconds: 0.57, Requests: recs}})
	requireSameServe(t, want, got)
	require.Equal(t, 2, got.Completed)
	require.InDelta(t, 80, got.P99ITLMs, 3, "the stall is at the pooled ITL's tail")
	require.InDelta(t, 20, got.MedianITLMs, 1e-6, "median of 10, 10, 80, 20, 30 ms")

	// Positive control: a mutated record changes the figures.
	b.ChunkGaps = []time.Duration{20 * ms, 90 * ms}
	b.LastChunk, b.End = b.LastChunk.Add(60*ms), b.End.Add(60*ms)
	mutated := grid.Serve([]*stream.Result{a, cut, b, late}, at(2.55), 4)
	require.NotEqual(t, want.MeanITLMs, mutated.MeanITLMs)
	require.NotEqual(t, want.MeanTPOTMs, mutated.MeanTPOTMs)
	require.NotEqual(t, want.MeanE2ELMs, mutated.MeanE2ELMs)

	require.Nil(t, grid.Serve([]*stream.Result{cut, late}, at(2.55), 4), "no completed request, no block")
}

func requireSameServe(t *testing.T, want, got *tokens.Serve) {
	t.Helper()
	for name, pair := range map[string][2]float64{
		"duration": {want.Duration, got.Duration}, "mean_ttft_ms": {want.MeanTTFTMs, got.MeanTTFTMs},
		"median_ttft_ms": {want.MedianTTFTMs, got.MedianTTFTMs}, "p99_ttft_ms": {want.P99TTFTMs, got.P99TTFTMs},
		"mean_tpot_ms": {want.MeanTPOTMs, got.MeanTPOTMs}, "median_tpot_ms": {want.MedianTPOTMs, got.MedianTPOTMs},
		"p99_tpot_ms": {want.P99TPOTMs, got.P99TPOTMs}, "mean_itl_ms": {want.MeanITLMs, got.MeanITLMs},
		"median_itl_ms": {want.MedianITLMs, got.MedianITLMs}, "p99_itl_ms": {want.P99ITLMs, got.P99ITLMs},
		"std_itl_ms": {want.StdITLMs, got.StdITLMs}, "mean_e2el_ms": {want.MeanE2ELMs, got.MeanE2ELMs},
		"median_e2el_ms": {want.MedianE2ELMs, got.MedianE2ELMs}, "p99_e2el_ms": {want.P99E2ELMs, got.P99E2ELMs},
		"output_throughput": {want.OutputThroughput, got.OutputThroughput},
	} {
		require.InDelta(t, pair[0], pair[1], 1e-9, name)
	}
	require.Equal(t, want.Completed, got.Completed)
	require.Equal(t, want.TotalOutputTokens, got.TotalOutputTokens)
	require.Equal(t, want.MaxConcurrentRequests, got.MaxConcurrentRequests)
}

// On the fake twin, a cell of short streams carries the block; it
// survives the JSON, and the published CSV stays as it was.
func TestDecodeCellCarriesServeFigures(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond, GPUBlocks: 100000, BlockSize: 16})
	o := quick([]int{1000}, []int{2})
	o.OutputTokens, o.Duration = 20, 500*time.Millisecond // 25 streams' length at 2 ms a token
	m, err := runner(t, srv).Run(t.Context(), o)
	require.NoError(t, err)
	c := m.Cell("1000", 2)
	// Streams this short end and restart between readings: the fake may
	// read as queued; the block is there either way.
	require.Contains(t, []matrix.Status{matrix.Valid, matrix.RequestsQueued}, c.Status, c.Reason)
	require.NotNil(t, c.Serve, "streams of 20 tokens complete inside the window")
	s := c.Serve
	require.Equal(t, tokens.DefinitionsServe, s.Definitions)
	require.GreaterOrEqual(t, s.Completed, c.CompletedRequests)
	require.Zero(t, s.Failed)
	require.Equal(t, 20*s.Completed, s.TotalOutputTokens)
	require.Positive(t, s.MedianITLMs)
	require.Positive(t, s.MeanTPOTMs)
	require.GreaterOrEqual(t, s.MeanE2ELMs, s.MeanTTFTMs)

	data, err := matrix.Marshal(m)
	require.NoError(t, err)
	require.Contains(t, string(data), `"vllm_bench_serve"`)
	require.Contains(t, string(data), `"p99_itl_ms"`)
	back, err := matrix.Decode(data, "m.json")
	require.NoError(t, err)
	require.Equal(t, s.P99ITLMs, back.Cell("1000", 2).Serve.P99ITLMs)

	var csv bytes.Buffer
	require.NoError(t, matrix.WriteCSV(&csv, m))
	require.NotContains(t, csv.String(), "itl")
	fromCSV, err := matrix.ReadCSV(&csv, "m.csv")
	require.NoError(t, err, "a cell without the block validates")
	require.Nil(t, fromCSV.Cell("1000", 2).Serve)

	// Positive control: a block that is not vLLM's is refused.
	c.Serve.Definitions = tokens.DefinitionsReceipt
	_, err = matrix.Marshal(m)
	require.ErrorContains(t, err, "vllm_bench_serve.definitions")
}
