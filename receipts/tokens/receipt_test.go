package tokens

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

func f64(v float64) *float64 { return &v }

// ok is a clean request of n one-token chunks: the first at ttft, the
// last at e2e, evenly apart (vLLM's record and the receipt's own agree).
func ok(id string, ttft, itl, e2e float64, n int) Request {
	return Request{ID: id, PromptTokens: 20, OutputTokens: n, FirstTextSeconds: f64(ttft), TimeBetweenTokensSeconds: f64(itl), E2ESeconds: e2e,
		TTFTSeconds: f64(ttft), ITLSeconds: gaps(n-1, (e2e-ttft)/float64(max(n-1, 1))), LatencySeconds: e2e, FinishReason: "length"}
}

func gaps(n int, g float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = g
	}
	return out
}

var samplePoint = Point{Workload: WorkloadText, Concurrency: 2, OutputTokens: 4, Repeats: 2}

func sample() *Receipt {
	pt := samplePoint
	cut := Request{ID: "r2-1", PromptTokens: 20, OutputTokens: 2, FirstTextSeconds: f64(0.2), TimeBetweenTokensSeconds: f64(0.1), E2ESeconds: 0.6,
		TTFTSeconds: f64(0.2), ITLSeconds: []float64{0.1}, LatencySeconds: 0.3,
		Error: "stream cut before [DONE] after 2 tokens: unexpected EOF", ErrorClass: "cut"}
	runs := []Run{
		NewRun(pt, 1.0, []Request{ok("r1-0", 0.1, 0.1, 0.4, 4), ok("r1-1", 0.2, 0.1, 0.5, 4)}),
		NewRun(pt, 2.0, []Request{ok("r2-0", 0.3, 0.2, 1.0, 4), cut}),
	}
	runs[0].GPUMemoryMiBAfter = f64(1000)
	runs[1].GPUMemoryMiBAfter = f64(1200)
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	return &Receipt{
		Schema: Schema, Source: SourceVetbench, RunID: "run-1",
		Started: start, Finished: start.Add(4 * time.Second),
		Target: receipts.Target{Kind: receipts.TargetInProcess, Endpoint: "http://127.0.0.1:8000", Profile: "rtx3090"},
		Identity: Identity{
			Model: "google/gemma-4-E2B-it", ServerBuild: "vetbench-twin", GPU: "twin rtx3090",
			Sampling: "temperature=0 ignore_eos=true", CacheIsolation: "unique_prompts",
			PromptDigest: strings.Repeat("ab", 32),
		},
		Point: pt, Runs: runs, Summary: Summarize(pt, runs),
	}
}

func TestSummarizeByHand(t *testing.T) {
	t.Parallel()
	s := sample().Summary
	require.Equal(t, 4, s.Requests)
	require.Equal(t, 1, s.Failed)
	require.Equal(t, 0, s.Short)
	require.Equal(t, 12, s.TotalVerifiedOutputTokens, "the cut request's 2 tokens are generated, not verified")
	require.InDelta(t, 14.0/3, s.AggregateOutputTokS, 1e-12, "14 generated tokens over 3 s of batches")
	require.InDelta(t, 7.0/3, s.PerRequestOutputTokS, 1e-12)
	require.InDelta(t, 1.5, s.MeanCompletionSeconds, 1e-12)
	require.InDelta(t, 375, s.MeanBatchMsPerToken, 1e-9)
	require.Equal(t, 1200.0, *s.PeakGPUMemoryMiB)
	// First text over the three clean requests: 100, 200, 300 ms.
	require.Equal(t, 3, s.FirstTextMs.N)
	require.InDelta(t, 200, s.FirstTextMs.Mean, 1e-9)
	require.InDelta(t, 280, s.FirstTextMs.P90, 1e-9)
	require.InDelta(t, 298, s.FirstTextMs.P99, 1e-9)
	require.InDelta(t, 300, s.FirstTextMs.Max, 1e-9)
	// vllm bench serve's TPOT: (latency − ttft) ÷ (n − 1) → 100, 100,
	// 233.3 ms; the cut request is a failure for vLLM too.
	v := s.Serve
	require.Equal(t, 3, v.Completed)
	require.Equal(t, 1, v.Failed)
	require.InDelta(t, 100, v.MedianTPOTMs, 1e-9)
	require.InDelta(t, (100+100+700.0/3)/3, v.MeanTPOTMs, 1e-9)
	require.InDelta(t, 12.0/3, v.OutputThroughput, 1e-12, "12 tokens of completed requests over 3 s")
	require.InDelta(t, 4/0.4, s.RequestOutputTokS.Max, 1e-9)
	require.Equal(t, 3, s.E2EMs.N)
}

func TestPercentileIsNumpyLinear(t *testing.T) {
	t.Parallel()
	xs := []float64{1, 2, 3, 4}
	require.InDelta(t, 2.5, Percentile(xs, 50), 1e-12)
	require.InDelta(t, 3.7, Percentile(xs, 90), 1e-12)
	require.InDelta(t, 3.97, Percentile(xs, 99), 1e-12)
	require.InDelta(t, 4, Percentile(xs, 100), 1e-12)
	require.Equal(t, 7.0, Percentile([]float64{7}, 99))
	require.True(t, math.IsNaN(Percentile(nil, 50)))
}

func TestNewRunCountsShortAndFailed(t *testing.T) {
	t.Parallel()
	pt := Point{Workload: WorkloadText, Concurrency: 4, OutputTokens: 8, Repeats: 1}
	r := NewRun(pt, 2, []Request{
		ok("a", 0.1, 0.01, 0.2, 8),
		{ID: "b", OutputTokens: 5, Error: "short stream: 5 output tokens, asked 8", ErrorClass: ClassShort},
		{ID: "c", OutputTokens: 6}, // no error recorded, count not checked: still short
		{ID: "d", OutputTokens: 0, Error: "HTTP 500", ErrorClass: "http_500"},
	})
	require.Equal(t, Run{GeneratedTokens: 19, VerifiedTokens: 8, WallSeconds: 2, OutputTokS: 9.5, Failed: 1, Short: 2, Requests: r.Requests}, r)
}

func TestReceiptRoundTrip(t *testing.T) {
	t.Parallel()
	r := sample()
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, r))
	require.NotEmpty(t, r.Identity.Digest)
	got, err := Read(bytes.NewReader(buf.Bytes()), "p.json")
	require.NoError(t, err)
	require.Equal(t, r, got)
	again, err := Marshal(got)
	require.NoError(t, err)
	require.Equal(t, buf.Bytes(), again, "equal receipts give equal bytes")
}

func TestWriteFileNeverOverwrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "p.json")
	require.NoError(t, WriteFile(path, sample()))
	before, _ := os.ReadFile(path)

	other := sample()
	other.RunID = "run-2"
	require.ErrorIs(t, WriteFile(path, other), fs.ErrExist)
	after, _ := os.ReadFile(path)
	require.Equal(t, before, after)

	bad := sample()
	bad.Point.Concurrency = 0
	var se *receipts.SchemaError
	require.ErrorAs(t, ReplaceFile(path, bad), &se, "an invalid receipt writes nothing, even when replacing")
	after, _ = os.ReadFile(path)
	require.Equal(t, before, after)

	require.NoError(t, ReplaceFile(path, other))
	got, err := ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "run-2", got.RunID)
	entries, _ := os.ReadDir(dir)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

func TestEditedReceiptsAreRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(*Receipt)
		path string
	}{
		{"summary_edited", func(r *Receipt) { r.Summary.AggregateOutputTokS *= 1.1 }, "summary.aggregate_output_tok_s"},
		{"first_text_edited", func(r *Receipt) { r.Summary.FirstTextMs.P50 = 1 }, "summary.first_text_ms"},
		{"vllm_itl_edited", func(r *Receipt) { r.Summary.Serve.P99ITLMs = 1 }, "summary.vllm_bench_serve.p99_itl_ms"},
		{"vllm_gap_negative", func(r *Receipt) { r.Runs[0].Requests[0].ITLSeconds[1] = -1 }, "runs[0].requests[0].itl_seconds[1]"},
		{"failure_hidden", func(r *Receipt) { r.Runs[1].Failed = 0 }, "runs[1].failed"},
		{"error_without_class", func(r *Receipt) { r.Runs[1].Requests[1].ErrorClass = "" }, "runs[1].requests[1].error_class"},
		{"request_dropped", func(r *Receipt) { r.Runs[0].Requests = r.Runs[0].Requests[:1] }, "runs[0].requests"},
		{"run_missing", func(r *Receipt) { r.Runs = r.Runs[:1] }, "runs"},
		{"ttft_after_end", func(r *Receipt) { r.Runs[0].Requests[0].FirstTextSeconds = f64(9) }, "runs[0].requests[0].first_text_seconds"},
		{"vllm_ttft_after_latency", func(r *Receipt) { r.Runs[0].Requests[0].TTFTSeconds = f64(9) }, "runs[0].requests[0].ttft_seconds"},
		{"identity_edited", func(r *Receipt) { r.Identity.Digest = r.IdentityDigest(); r.Identity.GPU = "H100" }, "identity.digest"},
		{"credentials", func(r *Receipt) { r.Target.Endpoint = "http://user:pw@host:8000" }, "target.endpoint"},
		{"unknown_workload", func(r *Receipt) { r.Point.Workload = "video" }, "point.workload"},
		{"bad_schema", func(r *Receipt) { r.Schema = "vetbench.tokens/v0" }, "schema"},
		{"nan", func(r *Receipt) { r.Runs[0].WallSeconds = math.NaN() }, "runs[0].wall_seconds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := sample()
			tc.edit(r)
			err := r.Validate()
			var se *receipts.SchemaError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.path, se.Path, "%v", err)
		})
	}
	require.NoError(t, sample().Validate(), "positive control")
}

func TestStoppedPointKeepsItsRuns(t *testing.T) {
	t.Parallel()
	r := sample()
	r.Runs = r.Runs[:1]
	r.Summary = Summarize(r.Point, r.Runs)
	r.Stopped = &Stopped{Reason: "canceled", Message: "interrupt", Runs: 1}
	data, err := Marshal(r)
	require.NoError(t, err)
	got, err := Decode(data, "stopped.json")
	require.NoError(t, err)
	require.Equal(t, r, got)
	r.Stopped.Runs = 2
	require.Error(t, r.Validate())
}

func TestDecodeNamesFileLineAndField(t *testing.T) {
	t.Parallel()
	data, err := Marshal(sample())
	require.NoError(t, err)
	tests := []struct {
		name, from, to, path, msg string
	}{
		{"type", `"concurrency": 2`, `"concurrency": "2"`, "point.concurrency", "want an integer"},
		{"unknown", `"repeats": 2`, `"repeats": 2, "extra": 1`, "point.extra", "unknown field"},
		{"missing", `"workload": "text",`, ``, "point.workload", "missing"},
		{"null", `"runs": [`, `"runs": null, "x": [`, "x", "unknown field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bad := bytes.Replace(data, []byte(tc.from), []byte(tc.to), 1)
			require.NotEqual(t, data, bad, "the mutation applies")
			_, err := Decode(bad, "p.json")
			var se *receipts.SchemaError
			require.True(t, errors.As(err, &se), "%v", err)
			require.Equal(t, tc.path, se.Path, "%v", err)
			require.Contains(t, err.Error(), "p.json")
			require.Contains(t, err.Error(), tc.msg)
		})
	}
	_, err = Decode(data[:len(data)-20], "p.json")
	var se *receipts.SchemaError
	require.ErrorAs(t, err, &se)
	require.Positive(t, se.Line, "a syntax error has a line")
}

// A hand-edited receipt can quote megabytes back in its error: the message
// is clipped as a judgments receipt's is (receipts.Problems).
func TestValidationMessagesAreClipped(t *testing.T) {
	t.Parallel()
	r := sample()
	r.Source = strings.Repeat("x", 1<<20)
	err := r.Validate()
	var se *receipts.SchemaError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "source", se.Path)
	require.Less(t, len(err.Error()), 4096, "a 1 MiB value is not echoed whole")

}
