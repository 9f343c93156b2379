package matrix

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

const (
	deepseekCSV = "testdata/speed-matrix-deepseek-v4-flash-4xh200.csv"
	deepseekMD  = "testdata/speed-matrix-deepseek-v4-flash-4xh200.md"
)

func TestPageTableReadsAsTheCSV(t *testing.T) {
	t.Parallel()
	fromCSV, err := ReadCSVFile(deepseekCSV)
	require.NoError(t, err)
	fromMD, err := ReadAnyFile(deepseekMD)
	require.NoError(t, err)
	require.Equal(t, fromCSV.Prefill, fromMD.Prefill)
	require.Equal(t, fromCSV.Cells, fromMD.Cells)
	require.Equal(t, fromCSV.Description, fromMD.Description)
	require.Len(t, fromMD.Prefill, 9)
	require.Len(t, fromMD.Cells, 64)

	// The sniffing reader takes the CSV and a JSON too.
	again, err := ReadAnyFile(deepseekCSV)
	require.NoError(t, err)
	require.Equal(t, fromCSV, again)
	js := filepath.Join(t.TempDir(), "m.json")
	require.NoError(t, WriteFile(js, fromCSV))
	again, err = ReadAnyFile(js)
	require.NoError(t, err)
	require.Equal(t, fromCSV.Cells, again.Cells)
}

func TestPageTableForms(t *testing.T) {
	t.Parallel()
	// The CSV's own names, a phase column, columns in another order, bold
	// statuses, "-" for missing, and a column left out.
	table := `
| status | phase | context | requests_at_once | total_tok_s | ttft | completed_requests | Measured for |
|:--|:--|--:|--:|--:|--:|--:|--:|
| **Valid** | Prefill | 8K | - | 62K | 132 ms | 1 | |
| Valid | Sustained decode | 8K | 1 | 260.3 | 71 ms | 2 | 30.0 s |
| Looped | Sustained decode | 8K | 2 | - | - | 0 | — |
`
	m, err := ReadTable([]byte(table), "t.md")
	require.NoError(t, err)
	require.Len(t, m.Prefill, 1)
	require.Equal(t, 1, m.Prefill[0].Requests, "a prefill row's requests default to 1")
	require.InDelta(t, 62000, *m.Prefill[0].TokS, 0)
	c := m.Cell("8K", 1)
	require.InDelta(t, 260.3, *c.TotalTokS, 1e-9)
	require.Nil(t, c.PerRequestTokS, "a column the table lacks is missing")
	require.Equal(t, Looped, m.Cell("8K", 2).Status)

	for name, tc := range map[string]struct{ table, want string }{
		"no table":        {"just text\n", "no markdown table"},
		"no status":       {"| context | requests |\n|---|---|\n| 8K | 1 |\n", "no status column"},
		"bad status":      {"| context | requests | status |\n|---|---|---|\n| 8K | 1 | Fast |\n", `t.md:3:12: status: unknown status "Fast"`},
		"bad figure":      {"| context | requests | status | Total tok/s |\n|---|---|---|---|\n| 8K | 1 | Valid | lots |\n", `t.md:3:20: total_tok_s: "lots"`},
		"no separator":    {"| context | status |\n| 8K | Valid |\n", "no |---| separator"},
		"twice":           {"| context | Context | status |\n|---|---|---|\n", `column "Context" twice`},
		"valid, no value": {"| context | requests | status |\n|---|---|---|\n| 8K | 1 | Valid |\n", "total_tok_s: missing"},
	} {
		_, err := ReadTable([]byte(tc.table), "t.md")
		require.ErrorContains(t, err, tc.want, name)
		var se *receipts.SchemaError
		require.ErrorAs(t, err, &se, name)
	}
}

// scaled is the published matrix with every figure of a cell (and of
// prefill 8K) multiplied by k, and statuses replaced where given.
func scaled(t *testing.T, k float64, status map[string]Status) *Matrix {
	t.Helper()
	m, err := ReadCSVFile(deepseekCSV)
	require.NoError(t, err)
	mul := func(v *float64) {
		if v != nil {
			*v *= k
		}
	}
	for i := range m.Cells {
		c := &m.Cells[i]
		for _, v := range []*float64{c.TotalTokS, c.PerRequestTokS, c.TTFTMs, c.TimeBetweenTokensMs} {
			mul(v)
		}
		if s, ok := status[cellKey{c.Context, c.Concurrency}.String()]; ok {
			c.Status = s
			if s == Valid && c.TotalTokS == nil {
				c.TotalTokS, c.PerRequestTokS, c.MeasuredSeconds = f(100), f(1), f(30)
			}
		}
	}
	mul(m.Prefill[0].TokS)
	return m
}

func TestCompareAgainstItselfIsSame(t *testing.T) {
	t.Parallel()
	base, err := ReadCSVFile(deepseekCSV)
	require.NoError(t, err)
	c, err := Compare(base, scaled(t, 1, nil), CompareOptions{})
	require.NoError(t, err)
	require.Equal(t, "SAME", c.Verdict())
	n := c.Counts()
	require.Equal(t, Counts{Compared: 73}, n)
	require.False(t, c.Worse())
	require.False(t, c.Incomplete())
}

// TestCompareNotesTwinFellBehind: a compared cell whose twin fell behind
// its model is noted, with its side, and printed; other cell warnings are
// not, and the verdict stays the figures' (SAME here).
func TestCompareNotesTwinFellBehind(t *testing.T) {
	t.Parallel()
	base, err := ReadCSVFile(deepseekCSV)
	require.NoError(t, err)
	cand := scaled(t, 1, nil)
	behind := receipts.TwinBehind + ": responses' first tokens left it 11.7 ms (model time) late on average"
	cand.Cells[3].Warnings = []string{"something else", behind}
	c, err := Compare(base, cand, CompareOptions{})
	require.NoError(t, err)
	name := fmt.Sprintf("%s c=%d", cand.Cells[3].Context, cand.Cells[3].Concurrency)
	require.Equal(t, []string{name + ": candidate: " + behind}, c.Notes)
	require.Equal(t, "SAME", c.Verdict())
	var b strings.Builder
	require.NoError(t, c.WriteText(&b))
	require.Contains(t, b.String(), "note: "+name+": candidate: "+behind+"\n")
}

func TestCompareCatchesEachChange(t *testing.T) {
	t.Parallel()
	base, err := ReadCSVFile(deepseekCSV)
	require.NoError(t, err)

	// 10 % slower everywhere: within ±15 %, beyond ±5 %.
	slow := scaled(t, 0.9, nil)
	c, err := Compare(base, slow, CompareOptions{})
	require.NoError(t, err)
	require.Equal(t, "SAME", c.Verdict())
	c, err = Compare(base, slow, CompareOptions{Tolerance: 0.05})
	require.NoError(t, err)
	require.Equal(t, "DIFFERENT", c.Verdict())
	require.Equal(t, 55, c.Counts().OverTolerance, "every measured cell (64 − 10 Looped) and prefill 8K")

	// One status change, figures equal.
	c, err = Compare(base, scaled(t, 1, map[string]Status{"8K c=64": Valid}), CompareOptions{})
	require.NoError(t, err)
	require.Equal(t, Counts{Compared: 73, StatusChanged: 1}, c.Counts())
	require.True(t, c.Worse())

	// A missing cell: incomplete, whatever else; -subset leaves it out.
	cand := scaled(t, 1, nil)
	cand.Cells = cand.Cells[1:]
	c, err = Compare(base, cand, CompareOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, c.Counts().Missing)
	require.Equal(t, "INCOMPLETE", c.Verdict())
	c, err = Compare(base, cand, CompareOptions{Subset: true})
	require.NoError(t, err)
	require.Equal(t, "SAME", c.Verdict())
	require.Equal(t, []string{"8K c=1"}, c.NotCompared)

	// A figure the candidate lacks at an equal status is not compared.
	cand = scaled(t, 1, nil)
	cand.Cell("8K", 1).TTFTMs = nil
	c, err = Compare(base, cand, CompareOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, c.Counts().Absent)
	require.Equal(t, "INCOMPLETE", c.Verdict())

	// Nothing in common is an error.
	_, err = Compare(base, &Matrix{Cells: []Cell{{Context: "2K", Concurrency: 3}}}, CompareOptions{})
	require.ErrorIs(t, err, ErrNothingInCommon)
	_, err = Compare(base, base, CompareOptions{Tolerance: -1})
	require.ErrorContains(t, err, "tolerance -1")
}

func TestComparisonText(t *testing.T) {
	t.Parallel()
	base, err := ReadCSVFile(deepseekCSV)
	require.NoError(t, err)
	cand := scaled(t, 1.2, map[string]Status{"8K c=64": Valid, "16K c=128": Valid})
	cand.Prefill = cand.Prefill[:8] // no 1024K prefill row
	cand.Cells = append(cand.Cells, Cell{Context: "2K", Concurrency: 1, Status: Failed})
	c, err := Compare(base, cand, CompareOptions{})
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, c.WriteText(&b))
	golden := "testdata/compare-deepseek.txt"
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(b.String()), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), b.String())
	require.Regexp(t, `(?m)^8K c=64 +Looped ≠ Valid `, b.String())
	require.Regexp(t, `(?m)^prefill 1024K +Valid ≠ MISSING `, b.String())
	require.Regexp(t, `(?m)^8K c=1 +Valid = +244.6 → 293.5 \(\+20.0%\) !`, b.String())
	require.Contains(t, b.String(), "not in the baseline: 2K c=1")
}

// TestCompareAStoppedMatrixNeverPasses: a matrix that stopped early (Ctrl-C,
// a server that died) never passes, also under Subset, which leaves out the
// cells it never measured: a stopped candidate is worse (as vetbench matrix
// exits 1 on a run that stops early), a stopped baseline no verdict.
func TestCompareAStoppedMatrixNeverPasses(t *testing.T) {
	t.Parallel()
	base, err := ReadCSVFile(deepseekCSV)
	require.NoError(t, err)
	stopped := func(m *Matrix) *Matrix {
		m.Cells = m.Cells[:len(m.Cells)/2]
		m.Stopped = &Stopped{Reason: "canceled", Message: "context canceled"}
		return m
	}
	for _, tc := range []struct {
		name       string
		base, cand *Matrix
		want, says string
	}{
		{"whole", base, scaled(t, 1, nil), "SAME", ""},
		{"candidate stopped", base, stopped(scaled(t, 1, nil)), "DIFFERENT", "candidate stopped early (canceled: context canceled)"},
		{"baseline stopped", stopped(scaled(t, 1, nil)), scaled(t, 1, nil), "INCOMPLETE", "baseline stopped early (canceled: context canceled)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compare(tc.base, tc.cand, CompareOptions{Subset: true})
			require.NoError(t, err)
			require.Equal(t, tc.want, c.Verdict())
			var b strings.Builder
			require.NoError(t, c.WriteText(&b))
			require.Contains(t, b.String(), tc.says)
		})
	}
}
