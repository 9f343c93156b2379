package report

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/speed"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// tokenCurve is the run's points on the chart whose title starts with
// prefix, by concurrency.
func tokenCurve(t *testing.T, rep *Report, prefix, label string) map[int]Point {
	t.Helper()
	out := map[int]Point{}
	for _, s := range rep.Sections {
		for _, ch := range s.Charts {
			lc, ok := ch.(LineChart)
			if !ok || s.ID != "tokens" || !strings.HasPrefix(lc.Title, prefix) {
				continue
			}
			for _, ser := range lc.Series {
				if ser.Name == label {
					for _, p := range ser.Points {
						out[int(p.X)] = p
					}
				}
			}
		}
	}
	require.NotEmpty(t, out, prefix)
	return out
}

// copyTree copies testdata/tokenpasses into a temporary directory.
func copyTokenPasses(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("testdata", "tokenpasses")
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}

// TestTokenCurvesOverPasses: a make tokens -count 3 run (testdata/
// tokenpasses: text c=1 and c=4, three passes, each first pass off its
// median) draws each token point at the speed gate's median of its
// bench.txt lines, bars their min–max; without bench.txt, at the median
// of the three passes' receipts. The control: the first pass's receipt —
// all the report drew before — is not that median.
func TestTokenCurvesOverPasses(t *testing.T) {
	t.Parallel()
	dir := copyTokenPasses(t)
	run, err := Load(dir, "run")
	require.NoError(t, err)
	require.Len(t, run.Tokens, 2)
	require.Len(t, run.TokenPasses, 2, "pass2 and pass3")
	rep := build(t, run, nil)
	agg := tokenCurve(t, rep, "aggregate output tok/s", "run")
	batch := tokenCurve(t, rep, "batch ms per token", "run")
	for _, e := range run.Tokens {
		c := e.Receipt.Point.Concurrency
		name := "Tokens/workload=text/c=" + map[int]string{1: "1", 4: "4"}[c] + "-2"
		vs := run.Bench.Values(name, tokens.UnitOutputTokPerSec)
		require.Len(t, vs, 3, name)
		gate := run.Bench.Summary(name, tokens.UnitOutputTokPerSec, DefaultOptions().Speed)
		require.Equal(t, gate.Center, agg[c].Y, name)
		require.Equal(t, slices.Min(vs), agg[c].Lo)
		require.Equal(t, slices.Max(vs), agg[c].Hi)
		require.Contains(t, agg[c].Tip, "over 3 passes (bench.txt)")
		require.NotEqual(t, e.Receipt.Summary.AggregateOutputTokS, agg[c].Y, "control: the first pass alone is not the median")
		bt := run.Bench.Summary(name, tokens.UnitBatchSecPerToken, DefaultOptions().Speed)
		require.InDelta(t, 1000*bt.Center, batch[c].Y, 1e-9, "batch ms per token: the gate's median, in ms")
	}
	rows := csvs(t, rep)["tokens.csv"]
	require.Equal(t, "passes", rows[0][5])
	require.Equal(t, []string{"3", "3"}, []string{rows[1][5], rows[2][5]})
	pageHas(t, html(t, rep), "3 -count passes in bench.txt, the medians vetbench gate compares")

	require.NoError(t, os.Remove(filepath.Join(dir, BenchName)))
	run, err = Load(dir, "run")
	require.NoError(t, err)
	agg = tokenCurve(t, build(t, run, nil), "aggregate output tok/s", "run")
	for _, e := range run.Tokens {
		var vs []float64
		for _, p := range run.tokenPasses(e.Receipt) {
			vs = append(vs, p.Summary.AggregateOutputTokS)
		}
		require.Len(t, vs, 3)
		c := e.Receipt.Point.Concurrency
		require.Equal(t, speed.SummarizeValues(vs, DefaultOptions().Speed).Center, agg[c].Y, "without bench.txt: the receipts' median")
		require.Contains(t, agg[c].Tip, "over 3 passes (receipts)")
		require.NotEqual(t, e.Receipt.Summary.AggregateOutputTokS, agg[c].Y, "control")
	}
}

// TestTokenPassesStoppedAndFailed: the points table counts the requests,
// failures and stops of every pass, naming the pass that stopped.
func TestTokenPassesStoppedAndFailed(t *testing.T) {
	t.Parallel()
	dir := copyTokenPasses(t)
	path := filepath.Join(dir, "receipts", "pass3", "tokens_text_c4.json")
	r, err := tokens.ReadFile(path)
	require.NoError(t, err)
	// The third pass stopped after its first repeat, one request failed.
	r.Runs = r.Runs[:1]
	run0 := &r.Runs[0]
	q := &run0.Requests[0]
	q.Error, q.ErrorClass = "HTTP 500", "http_500"
	run0.Failed, run0.VerifiedTokens = 1, run0.VerifiedTokens-q.OutputTokens
	r.Summary = tokens.Summarize(r.Point, r.Runs)
	r.Stopped = &tokens.Stopped{Reason: "canceled", Runs: 1, Message: "interrupted"}
	require.NoError(t, os.Remove(path))
	require.NoError(t, tokens.WriteFile(path, r))
	run, err := Load(dir, "run")
	require.NoError(t, err)
	rows := csvs(t, build(t, run, nil))["tokens.csv"]
	var c4 []string
	for _, row := range rows[1:] {
		if row[3] == "4" {
			c4 = row
		}
	}
	require.Equal(t, "1", c4[11], "the third pass's failure")
	require.Equal(t, "pass 3: canceled after 1 of 2 repeats: interrupted", c4[13])
	require.Equal(t, "20", c4[10], "requests of every pass: 4 + 4 + 4 + 4 + 4")
}

func TestTokenBenchPoints(t *testing.T) {
	t.Parallel()
	got := tokenBenchPoints([]string{"Tokens/workload=text/c=4-2", "Tokens/workload=one_image/c=16", "Judgments/set=checks/c=4-2",
		"Tokens/workload=text/c=x-2", "Tokens/c=4", "Matrix/ctx=1K/c=16-2", "Tokens/workload=/c=1"})
	require.Equal(t, map[tokenKey]string{
		{"text", 4}:       "Tokens/workload=text/c=4-2",
		{"one_image", 16}: "Tokens/workload=one_image/c=16",
	}, got)
}
