package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/tokens"
)

const publishedMatrix = "../../receipts/matrix/testdata/speed-matrix-gemma-4-E2B-h200nvl.csv"

// TestRooflineUtilisationGolden: the published receipts read against the
// ceilings of a shipped config (not the models they measured: no such
// config ships; the figures show the method, testdata/*.stdout the output).
func TestRooflineUtilisationGolden(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"roofline_receipt_tokens", []string{"roofline", "-config", rl("qwen3-0.6b.json"), "-gpu", "rtx3090", "-receipt", published, "-context", "40"}, exitPass},
		{"roofline_receipt_matrix", []string{"roofline", "-config", rl("gemma-3-270m-it.json"), "-gpu", "h200-nvl", "-receipt", publishedMatrix}, exitPass},
		{"roofline_receipt_missing", []string{"roofline", "-config", rl("qwen3-0.6b.json"), "-gpu", "rtx3090", "-receipt", "testdata/nope.json"}, exitNoVerdict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := run(t, c.args...)
			require.Equal(t, c.code, code, "stderr: %s", stderr)
			checkGolden(t, filepath.Join("testdata", c.name+".stdout"), stdout)
			checkGolden(t, filepath.Join("testdata", c.name+".stderr"), stderr)
		})
	}
}

// A token run faster than the GPU allows is flagged: it measured a cache
// (here: a receipt made up to be impossible), not the GPU.
func TestRooflineUtilisationFlagsAboveTheCeiling(t *testing.T) {
	t.Parallel()
	p := tokens.Point{Workload: tokens.WorkloadText, Concurrency: 1, OutputTokens: 128, Repeats: 1}
	ttft, itl := 0.001, 0.00005
	reqs := []tokens.Request{{ID: "r1", PromptTokens: 30, OutputTokens: 128, FirstTextSeconds: &ttft, TimeBetweenTokensSeconds: &itl, E2ESeconds: 0.0074,
		TTFTSeconds: &ttft, ITLSeconds: []float64{itl}, LatencySeconds: 0.0074, FinishReason: "length"}}
	one := tokens.NewRun(p, 0.0075, reqs)
	rec := &tokens.Receipt{Schema: tokens.Schema, Source: tokens.SourceVetbench, Started: time.Unix(0, 0).UTC(),
		Target: receipts.Target{Kind: receipts.TargetLive}, Point: p, Runs: []tokens.Run{one}, Summary: tokens.Summarize(p, []tokens.Run{one})}
	dir := t.TempDir()
	require.NoError(t, tokens.WriteFile(filepath.Join(dir, "text_c1.json"), rec))

	stdout, stderr, code := run(t, "roofline", "-config", rl("qwen3-0.6b.json"), "-gpu", "rtx3090", "-receipt", dir)
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stdout, "ABOVE CEILING")
	require.Contains(t, stdout, "1 point(s) beat the ceiling: the run measured a cache, not the GPU")

	stdout, _, code = run(t, "roofline", "-config", rl("qwen3-0.6b.json"), "-gpu", "rtx3090", "-receipt", dir, "-json")
	require.Equal(t, exitPass, code)
	var u map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &u))
	require.Equal(t, "vetbench.utilisation/v1", u["schema"])
	require.Equal(t, 1.0, u["above_ceiling"])
	pt := u["points"].([]any)[0].(map[string]any)
	for _, k := range []string{"label", "phase", "batch", "context", "measured_tok_s", "ceiling_tok_s", "bound", "share", "ceiling_step_ms", "measured_step_ms", "residual_ms", "above_ceiling"} {
		require.Contains(t, pt, k)
	}
	require.Equal(t, 30.0+64, pt["context"], "mean prompt + half the output")
	require.Greater(t, pt["share"].(float64), 1.0)
	require.Less(t, pt["residual_ms"].(float64), 0.0)

	// A malformed receipt names its field.
	data, err := os.ReadFile(filepath.Join(dir, "text_c1.json"))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	doc["summary"].(map[string]any)["aggregate_output_tok_s"] = 1e9
	bad, _ := json.Marshal(doc)
	badPath := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(badPath, bad, 0o644))
	_, stderr, code = run(t, "roofline", "-config", rl("qwen3-0.6b.json"), "-gpu", "rtx3090", "-receipt", badPath)
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, "summary.aggregate_output_tok_s")
}
