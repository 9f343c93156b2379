package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/matrix"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// Published baselines kept by receipts/tokens and receipts/matrix.
const (
	tokensFile = "../tokens/testdata/token-throughput-rtx3090.json"
	matrixFile = "../matrix/testdata/speed-matrix-deepseek-v4-flash-4xh200.csv"
)

func streamRun(t *testing.T, label string) *Run {
	t.Helper()
	ts, err := tokens.ReadBaseline(tokensFile)
	require.NoError(t, err)
	m, err := matrix.ReadCSVFile(matrixFile)
	require.NoError(t, err)
	r := &Run{Label: label, Dir: label, ReceiptDir: label}
	for _, x := range ts {
		r.Tokens = append(r.Tokens, TokensEntry{File: tokensFile, Receipt: x})
	}
	r.Matrices = []MatrixEntry{{File: matrixFile, Matrix: m}}
	return r
}

// TestTokensAndMatrix: token points become curves per workload and a
// comparison table from receipts/tokens; a matrix becomes a heat map with
// one cell per context × concurrency and its statuses.
func TestTokensAndMatrix(t *testing.T) {
	t.Parallel()
	base := streamRun(t, "baseline")
	cand := streamRun(t, "candidate")
	slowed := 0
	for _, e := range cand.Tokens {
		if e.Receipt.Point.Concurrency == 4 {
			e.Receipt.Summary.AggregateOutputTokS *= 0.8
			slowed++
		}
	}
	require.Positive(t, slowed)
	rep := build(t, base, cand)
	page := html(t, rep)
	c := csvs(t, rep)

	var sec Section
	for _, s := range rep.Sections {
		if s.ID == "tokens" {
			sec = s
		}
	}
	require.NotEmpty(t, sec.Charts, "a token-throughput section")
	for _, ch := range sec.Charts {
		root := parseSVG(t, ch.SVG())
		series := root.all(class("series"))
		require.Len(t, series, 2, "baseline and candidate")
		require.Equal(t, len(series[0].all(class("point"))), len(series[1].all(class("point"))))
	}
	require.Len(t, c["tokens.csv"], 1+2*len(base.Tokens))
	cmpRows := c["tokens_compare.csv"]
	require.Len(t, cmpRows, 1+len(base.Tokens))
	var moved int
	for _, row := range cmpRows[1:] {
		if strings.Contains(row[0], "/c=4/") {
			require.Contains(t, row[1], "(-20.0%)")
			moved++
		} else {
			require.Contains(t, row[1], "(+0.0%)")
		}
		require.Equal(t, "no difference recorded", row[5])
	}
	require.Equal(t, slowed, moved)
	pageHas(t, page, "aggregate output tok/s: text, 128 output tokens")

	m := base.Matrices[0].Matrix
	hm := parseSVG(t, MatrixHeatMap("m", m).SVG())
	cells := hm.all(class("cell"))
	require.Len(t, cells, len(m.Contexts())*len(m.Concurrencies()))
	for i, cell := range cells {
		ctx, conc := m.Contexts()[i/len(m.Concurrencies())], m.Concurrencies()[i%len(m.Concurrencies())]
		want := "not run"
		if mc := m.Cell(ctx, conc); mc != nil {
			want = mc.Status.Label()
		}
		require.Equal(t, want, strings.TrimSpace(cell.all(class("status"))[0].Text), "%s c=%d", ctx, conc)
	}
	require.Equal(t, 2, strings.Count(page, "<title>speed matrix, "), "a heat map per run")
	require.Len(t, c["matrix_baseline.csv"], 1+len(cells))
	require.Len(t, c["prefill_candidate.csv"], 1+len(m.Prefill))
	require.Equal(t, [][]string{{"check", "result", "detail"},
		{"baseline: token-throughput points", "clean", "10 points; 0 failed requests, 0 short, 0 points stopped early"},
		{"baseline: speed matrix", "trouble", "64 cells: 38 Valid, 16 Requests queued, 10 Looped"},
		{"candidate: token-throughput points", "clean", "10 points; 0 failed requests, 0 short, 0 points stopped early"},
		{"candidate: speed matrix", "trouble", "64 cells: 38 Valid, 16 Requests queued, 10 Looped"}}, c["summary.csv"])
	pageLacks(t, page, "Identity mismatch")

	// A token point of another model: the identity banner names it.
	for i, e := range cand.Tokens {
		e.Receipt.Identity.Model = "other/model"
		base.Tokens[i].Receipt.Identity.Model = "some/model"
	}
	page = html(t, build(t, base, cand))
	pageHas(t, page, "Identity mismatch")
	pageHas(t, page, "<li>token throughput workload=text/c=1/output=128: model: some/model → other/model</li>")
}

// TestLoadSortsDocuments: one directory may hold judgment receipts,
// token-throughput receipts and speed matrices; Load tells them apart by
// schema and a malformed one still names its file.
func TestLoadSortsDocuments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "base", "receipts", "checks_c1.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "checks_c1.json"), src, 0o644))
	ts, err := tokens.ReadBaseline(tokensFile)
	require.NoError(t, err)
	for i, x := range ts[:2] {
		require.NoError(t, tokens.WriteFile(filepath.Join(dir, "tokens_"+string(rune('a'+i))+".json"), x))
	}
	m, err := matrix.ReadCSVFile(matrixFile)
	require.NoError(t, err)
	require.NoError(t, matrix.WriteFile(filepath.Join(dir, "matrix.json"), m))
	run, err := Load(dir, "run")
	require.NoError(t, err)
	require.Len(t, run.Entries, 1)
	require.Len(t, run.Tokens, 2)
	require.Len(t, run.Matrices, 1)
	page := html(t, build(t, run, nil))
	pageHas(t, page, "in "+dir+": 1 judgment receipts; 2 token-throughput points; 1 speed matrices")

	data, err := os.ReadFile(filepath.Join(dir, "matrix.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "matrix.json"), []byte(strings.Replace(string(data), `"cells": [`, `"cells": 7, "x": [`, 1)), 0o644))
	_, err = Load(dir, "run")
	require.ErrorContains(t, err, "matrix.json")
}

// TestTokenRunWhatRan: a token run (make tokens: token receipts and a
// speed matrix, no judgment receipts) fills "What ran" from its documents'
// target and identity — not "—" — and lists its token points; the
// per-set identity table, of judgment sets, is left out. The control: the
// same run with those records blanked shows "—".
func TestTokenRunWhatRan(t *testing.T) {
	t.Parallel()
	run := load(t, "tokens", "run")
	require.Empty(t, run.Entries)
	require.Len(t, run.Tokens, 3)
	require.Len(t, run.Matrices, 1)
	field := func(rep *Report) map[string]string {
		out := map[string]string{}
		for _, row := range csvs(t, rep)["runs.csv"][1:] {
			out[row[0]] = row[1]
		}
		return out
	}
	got := field(build(t, run, nil))
	require.Equal(t, "container", got["target kind"])
	require.Equal(t, "fast", got["twin profile"])
	require.Equal(t, "google/gemma-4-31B-it", got["model"])
	require.Equal(t, "0.30.0+vetbench.twin", got["server build"])
	require.Equal(t, "vetbench/0.1", got["harness"])
	require.Equal(t, "vetbench", got["source"])
	require.Equal(t, "one_image ×128 tokens c=1; text ×128 tokens c=1,4", got["token points"])
	require.NotContains(t, csvs(t, build(t, run, nil)), "identity.csv")

	for _, e := range run.Tokens {
		e.Receipt.Identity.Model, e.Receipt.Identity.ServerBuild, e.Receipt.Target.Kind = "", "", ""
	}
	m := run.Matrices[0].Matrix
	m.Identity.Model, m.Identity.ServerBuild, m.Target.Kind = "", "", ""
	blank := field(build(t, run, nil))
	for _, f := range []string{"target kind", "model", "server build"} {
		require.Equal(t, "—", blank[f], "control: %s comes from the documents", f)
	}
}
