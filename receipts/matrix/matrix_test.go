package matrix

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

var update = flag.Bool("update", false, "rewrite the text goldens in testdata")

var published = []string{
	"testdata/speed-matrix-gemma-4-E2B-h200nvl.csv",
	"testdata/speed-matrix-deepseek-v4-flash-4xh200.csv",
}

func TestPublishedCSVRoundTripsByteForByte(t *testing.T) {
	t.Parallel()
	for _, path := range published {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(path)
			require.NoError(t, err)
			m, err := ReadCSVFile(path)
			require.NoError(t, err)
			var out bytes.Buffer
			require.NoError(t, WriteCSV(&out, m))
			require.Equal(t, string(raw), out.String(), "CSV → matrix → CSV gives the same bytes")

			// And through the JSON: matrix → JSON → matrix → CSV.
			js := filepath.Join(t.TempDir(), "m.json")
			require.NoError(t, WriteFile(js, m))
			back, err := ReadFile(js)
			require.NoError(t, err)
			require.Equal(t, m, back)
			out.Reset()
			require.NoError(t, WriteCSV(&out, back))
			require.Equal(t, string(raw), out.String())

			// Every data row of the file became a row or a cell.
			rows := strings.Count(string(raw), "\n") - 2
			require.Equal(t, rows, len(m.Prefill)+len(m.Cells))
			require.Equal(t, strings.Count(string(raw), "\nPrefill,"), len(m.Prefill))
			for s, label := range labels {
				require.Equal(t, countStatus(string(raw), label), m.Counts()[s], "cells %s", label)
			}
		})
	}
}

// countStatus counts sustained rows with a status, reading the text
// without the package's parser.
func countStatus(raw, label string) int {
	n := 0
	for _, line := range strings.Split(raw, "\n") {
		f := strings.SplitN(line, ",", 5)
		if len(f) == 5 && f[0] == PhaseSustained && f[3] == label {
			n++
		}
	}
	return n
}

func f(v float64) *float64 { return &v }
func i(v int) *int         { return &v }

func TestPublishedFigures(t *testing.T) {
	t.Parallel()
	g, err := ReadCSVFile(published[0])
	require.NoError(t, err)
	require.Equal(t, SourcePublished, g.Source)
	require.True(t, strings.HasPrefix(g.Description, "gemma-4-E2B-it (RedHatAI/gemma-4-E2B-it) BF16 on one H200 NVL"))
	require.Equal(t, Prefill{Context: "8K", Requests: 1, Status: Valid, TTFTMs: f(132), TokS: f(62000), Samples: 1}, g.Prefill[0])
	require.Equal(t, f(1571), g.Prefill[3].TTFTMs)
	require.Equal(t, f(56800), g.Prefill[1].TokS)
	require.Equal(t, &Cell{
		Context: "8K", Concurrency: 4, Status: Valid, TotalTokS: f(1001.5), PerRequestTokS: f(256.7),
		TTFTMs: f(113), TimeBetweenTokensMs: f(3.9), AverageActive: f(4), CompletedRequests: 8,
		OutputTokens: i(30043), MeasuredSeconds: f(30),
	}, g.Cell("8K", 4))
	require.InDelta(t, 13100, *g.Cell("8K", 128).TotalTokS, 1e-9)
	require.Equal(t, []string{"8K", "16K", "32K", "64K", "123K"}, g.Contexts())
	require.Equal(t, []int{1, 2, 4, 8, 16, 32, 64, 128}, g.Concurrencies())
	require.Equal(t, map[Status]int{Valid: 40}, g.Counts())

	d, err := ReadCSVFile(published[1])
	require.NoError(t, err)
	require.Equal(t, &Cell{Context: "8K", Concurrency: 64, Status: Looped, CompletedRequests: 0, OutputTokens: i(0)}, d.Cell("8K", 64))
	q := d.Cell("16K", 128)
	require.Equal(t, RequestsQueued, q.Status)
	require.Equal(t, f(111.7), q.AverageActive)
	require.Equal(t, f(8773), d.Prefill[7].TokS)
	require.Equal(t, "1019K", d.Prefill[7].Context)
	require.Equal(t, f(29.9), d.Cell("16K", 1).MeasuredSeconds)
}

func TestContextLabels(t *testing.T) {
	t.Parallel()
	for tokens, label := range map[int]string{8192: "8K", 126912: "123K", 1044416: "1019K", 1048576: "1024K", 512: "512", 131072: "128K"} {
		require.Equal(t, label, ContextLabel(tokens))
		size, ok := ContextSize(label)
		require.True(t, ok)
		require.LessOrEqual(t, size, tokens)
	}
	for _, bad := range []string{"", "K", "8k", "8.5K", "-8K", "08K", "8KB"} {
		_, ok := ContextSize(bad)
		require.False(t, ok, bad)
	}
	size, ok := ContextSize("1M")
	require.True(t, ok)
	require.Equal(t, 1<<20, size)
}

func TestNumberFormats(t *testing.T) {
	t.Parallel()
	require.Equal(t, "62K", fmtTokS(f(62000)))
	require.Equal(t, "56.8K", fmtTokS(f(56800)))
	require.Equal(t, "13.1K", fmtTokS(f(13084)))
	require.Equal(t, "9,049.3", fmtTokS(f(9049.31)))
	require.Equal(t, "260.3", fmtTokS(f(260.26)))
	require.Equal(t, "1,571 ms", fmtMs0(f(1570.6)))
	require.Equal(t, "71 ms", fmtMs0(f(71)))
	require.Equal(t, "3.8 ms", fmtMs1(f(3.84)))
	require.Equal(t, "30.0 s", fmtSeconds(f(30)))
	require.Equal(t, "393,466", fmtInt(i(393466)))
	require.Equal(t, "1,234,567", commas("1234567"))
	require.Equal(t, "—", fmtTokS(nil))
	for in, want := range map[string]float64{"62K": 62000, "19.3K": 19300, "1,001.5": 1001.5, "8,773.0": 8773, "0": 0} {
		got, err := parseNumber(in)
		require.NoError(t, err, in)
		require.InDelta(t, want, got, 1e-9, in)
	}
	for _, in := range []string{"", "abc", "1e5", "NaN", "-3", "+3", "1.2.3", "K"} {
		_, err := parseNumber(in)
		require.Error(t, err, in)
	}
}

func TestMalformedCSVNamesLineAndColumn(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(published[0])
	require.NoError(t, err)
	text := string(raw)
	lineOf := func(s string) int { return strings.Count(text[:strings.Index(text, s)], "\n") + 1 }
	tests := []struct {
		name, from, to, column, msg string
		line                        int
	}{
		{"tok_s", "Prefill,8K,1,Valid,62K,", "Prefill,8K,1,Valid,62Q,", "total_tok_s", "want tok/s", lineOf("Prefill,8K,1,")},
		{"ttft_unit", `"1,571 ms"`, `"1,571 s"`, "ttft", `does not end in " ms"`, lineOf(`"1,571 ms"`)},
		{"tbt", "71 ms,3.8 ms,", "71 ms,3.8ms,", "time_between_tokens", `does not end in " ms"`, lineOf("71 ms,3.8 ms,")},
		{"status", "Sustained decode,8K,2,Valid", "Sustained decode,8K,2,Vaild", "status", `unknown status "Vaild"`, lineOf("Sustained decode,8K,2,Valid")},
		{"phase", "Sustained decode,16K,1,", "Sustained decoding,16K,1,", "phase", "neither", lineOf("Sustained decode,16K,1,")},
		{"context", "Sustained decode,32K,4,", "Sustained decode,32KB,4,", "context", "not a context label", lineOf("Sustained decode,32K,4,")},
		{"requests", "Sustained decode,64K,8,", "Sustained decode,64K,eight,", "requests_at_once", "not a whole number", lineOf("Sustained decode,64K,8,")},
		{"output", `"30,043"`, `"30,04x"`, "output_tokens", "not a whole number", lineOf(`"30,043"`)},
		{"prefill_extra", "Prefill,16K,1,Valid,56.8K,—", "Prefill,16K,1,Valid,56.8K,3", "per_request_tok_s", "in a prefill row", lineOf("Prefill,16K,1,")},
		{"header", "phase,context,", "phase,ctx,", "context", `want "context"`, 2},
		{"quote", `"1,001.5"`, `"1,001.5`, "", "quote", lineOf(`"1,001.5"`)},
		{"fields", "30.0 s\nSustained decode,8K,2,", "30.0 s,extra\nSustained decode,8K,2,", "", "13 fields, want 12", lineOf("Sustained decode,8K,1,")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bad := strings.Replace(text, tc.from, tc.to, 1)
			require.NotEqual(t, text, bad, "the mutation applies")
			_, err := ReadCSV(strings.NewReader(bad), "gemma.csv")
			var se *receipts.SchemaError
			require.True(t, errors.As(err, &se), "%T %v", err, err)
			require.Equal(t, "gemma.csv", se.File)
			require.Equal(t, tc.column, se.Path, "%v", err)
			require.Equal(t, tc.line, se.Line, "%v", err)
			require.Positive(t, se.Column)
			require.Contains(t, err.Error(), tc.msg)
		})
	}
	t.Run("duplicate_cell", func(t *testing.T) {
		t.Parallel()
		dup := text + "Sustained decode,8K,1,Valid,260.3,263.9,71 ms,3.8 ms,1.0,2,\"7,809\",30.0 s\n"
		_, err := ReadCSV(strings.NewReader(dup), "gemma.csv")
		var se *receipts.SchemaError
		require.ErrorAs(t, err, &se)
		require.Equal(t, "cells[40]", se.Path)
		require.Contains(t, err.Error(), "cell 8K c=1 again (also cells[0])")
	})
	_, err = ReadCSV(strings.NewReader(""), "empty.csv")
	require.ErrorContains(t, err, "no header row")
}

func vetbenchMatrix() *Matrix {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	return &Matrix{
		Schema: Schema, Source: SourceVetbench, RunID: "m-1", Started: start, Finished: start.Add(time.Hour),
		Target:          receipts.Target{Kind: receipts.TargetInProcess, Profile: "e2b-h200"},
		Identity:        Identity{Model: "RedHatAI/gemma-4-E2B-it", ServerBuild: "vetbench-twin", Tool: "vetbench", CacheConfig: map[string]string{"block_size": "16", "num_gpu_blocks": "1000"}},
		DurationSeconds: 30, MaxOutputTokens: 4096,
		Prefill: []Prefill{{Context: "8K", ContextTokens: 8192, Requests: 1, Status: Valid, PromptTokens: i(8201), TTFTMs: f(132.4), TokS: f(61941.1), Samples: 1}},
		Cells: []Cell{
			{Context: "8K", ContextTokens: 8192, Concurrency: 1, Status: Valid, TotalTokS: f(260.31), PerRequestTokS: f(263.9), TTFTMs: f(70.6),
				TimeBetweenTokensMs: f(3.79), AverageActive: f(1), CompletedRequests: 2, OutputTokens: i(7809), MeasuredSeconds: f(29.99)},
			{Context: "8K", ContextTokens: 8192, Concurrency: 128, Status: RequestsQueued, Reason: "waiting 12 on average; running 91.2 < 0.95·128",
				TotalTokS: f(9001), TTFTMs: f(4000), MeasuredSeconds: f(30), AverageActive: f(91.2)},
			{Context: "123K", ContextTokens: 126912, Concurrency: 1, Status: Looped, Reason: "content looped: a 4-character cycle repeated 1024 times"},
			{Context: "123K", ContextTokens: 126912, Concurrency: 128, Status: Skipped, Reason: "128 × (126912 + 4096) tokens exceed the KV capacity of 16000"},
		},
	}
}

func TestMatrixJSONRoundTripAndNoOverwrite(t *testing.T) {
	t.Parallel()
	m := vetbenchMatrix()
	dir := t.TempDir()
	path := filepath.Join(dir, "matrix.json")
	require.NoError(t, WriteFile(path, m))
	got, err := ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, m, got)
	require.ErrorIs(t, WriteFile(path, m), fs.ErrExist)
	require.NoError(t, ReplaceFile(path, m))

	csvPath := filepath.Join(dir, "matrix.csv")
	require.NoError(t, WriteCSVFile(csvPath, m))
	require.ErrorIs(t, WriteCSVFile(csvPath, m), fs.ErrExist)
	back, err := ReadCSVFile(csvPath)
	require.NoError(t, err)
	require.Equal(t, "260.3", fmtTokS(back.Cell("8K", 1).TotalTokS), "the CSV keeps the pages' precision")
	require.Equal(t, Skipped, back.Cell("123K", 128).Status)
	require.Empty(t, back.Cell("123K", 128).Reason, "the published layout has no reason column")
}

func TestMatrixValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(*Matrix)
		path string
	}{
		{"reason_missing", func(m *Matrix) { m.Cells[2].Reason = "" }, "cells[2].reason"},
		{"valid_without_figure", func(m *Matrix) { m.Cells[0].TotalTokS = nil }, "cells[0].total_tok_s"},
		{"label_mismatch", func(m *Matrix) { m.Cells[2].Context = "124K" }, "cells[2].context"},
		{"duplicate", func(m *Matrix) { m.Cells[1].Concurrency = 1 }, "cells[1]"},
		{"unknown_status", func(m *Matrix) { m.Cells[0].Status = "ok" }, "cells[0].status"},
		{"negative", func(m *Matrix) { m.Cells[0].TTFTMs = f(-1) }, "cells[0].ttft_ms"},
		{"prefill_missing_ttft", func(m *Matrix) { m.Prefill[0].TTFTMs = nil }, "prefill[0].ttft_ms"},
		{"newline", func(m *Matrix) { m.Description = "a\nb" }, "description"},
		{"edited_identity", func(m *Matrix) { m.Identity.Digest = m.IdentityDigest(); m.Identity.GPU = "H100" }, "identity.digest"},
		{"secret", func(m *Matrix) { m.Target.Endpoint = "http://h:1/?token=x" }, "target.endpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := vetbenchMatrix()
			tc.edit(m)
			var se *receipts.SchemaError
			require.ErrorAs(t, m.Validate(), &se)
			require.Equal(t, tc.path, se.Path, "%v", m.Validate())
			require.Error(t, WriteFile(filepath.Join(t.TempDir(), "m.json"), m), "an invalid matrix writes nothing")
		})
	}
	require.NoError(t, vetbenchMatrix().Validate(), "positive control")

	data, err := Marshal(vetbenchMatrix())
	require.NoError(t, err)
	_, err = Decode(bytes.Replace(data, []byte(`"requests_at_once": 128`), []byte(`"requests_at_once": 128.5`), 1), "m.json")
	var se *receipts.SchemaError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "cells[1].requests_at_once", se.Path)
	_, err = Decode(bytes.Replace(data, []byte(`"status": "valid",`), []byte(``), 1), "m.json")
	require.ErrorAs(t, err, &se)
	require.Equal(t, "prefill[0].status", se.Path)
	require.Equal(t, "missing", se.Msg)
}

func TestSortOrdersAsThePages(t *testing.T) {
	t.Parallel()
	m := vetbenchMatrix()
	m.Cells[0], m.Cells[3] = m.Cells[3], m.Cells[0]
	m.Sort()
	var got []string
	for _, c := range m.Cells {
		got = append(got, cellKey{c.Context, c.Concurrency}.String())
	}
	require.Equal(t, []string{"8K c=1", "8K c=128", "123K c=1", "123K c=128"}, got)
}

func TestTextAsTheSeedPagesShowIt(t *testing.T) {
	t.Parallel()
	for _, path := range append(published, "vetbench") {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := vetbenchMatrix()
			if path != "vetbench" {
				var err error
				m, err = ReadCSVFile(path)
				require.NoError(t, err)
			}
			got := Text(m)
			golden := filepath.Join("testdata", strings.TrimSuffix(name, ".csv")+".txt")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run with -update to create %s", golden)
			require.Equal(t, string(want), got)
		})
	}
	g, err := ReadCSVFile(published[0])
	require.NoError(t, err)
	text := Text(g)
	require.Contains(t, text, "13.1K · 1,051 ms")
	require.Contains(t, text, "8K       62K            132 ms")
	d, err := ReadCSVFile(published[1])
	require.NoError(t, err)
	text = Text(d)
	require.Contains(t, text, "1,474.8 · 42,686 ms · Requests queued")
	require.Contains(t, text, "Looped")
	v := Text(vetbenchMatrix())
	require.Contains(t, v, "123K c=128: Skipped: 128 × (126912 + 4096) tokens exceed the KV capacity of 16000")
}

// TestStoppedBy: why a matrix ended early becomes its stopped block, by the
// one rule vetbench matrix and BenchmarkMatrix share; nothing ended it, no
// block.
func TestStoppedBy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want *Stopped
	}{
		{"none", nil, nil},
		{"Ctrl-C", fmt.Errorf("cell 1K c=4: %w", context.Canceled), &Stopped{Reason: "canceled", Message: "cell 1K c=4: context canceled"}},
		{"deadline", context.DeadlineExceeded, &Stopped{Reason: "timeout", Message: "context deadline exceeded"}},
		{"server", errors.New("connection refused"), &Stopped{Reason: "error", Message: "connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, StoppedBy(tc.err))
		})
	}
}
