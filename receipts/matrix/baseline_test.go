package matrix

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTolerance(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{"15%": 0.15, "0.15": 0.15, " 0 ": 0, "250%": 2.5} {
		var tol Tolerance
		require.NoError(t, tol.Set(in), in)
		require.InDelta(t, want, float64(tol), 1e-12, in)
	}
	for _, in := range []string{"lots", "-1", "NaN", "1e7", ""} {
		var tol Tolerance
		require.EqualError(t, tol.Set(in), "want an error such as 15% or 0.15", in)
	}
	tol := Tolerance(DefaultTolerance)
	require.Equal(t, "15%", tol.String())
}

func TestBaselineLoadAndCompare(t *testing.T) {
	t.Parallel()
	const published = "testdata/speed-matrix-deepseek-v4-flash-4xh200.csv"
	b := NewBaseline()
	base, cand, err := b.Load()
	require.NoError(t, err)
	require.Nil(t, base, "no baseline asked for")
	require.Nil(t, cand)

	b.Path, b.Candidate = published, "testdata/speed-matrix-deepseek-v4-flash-4xh200.md"
	base, cand, err = b.Load()
	require.NoError(t, err)
	c, err := b.Compare(base, cand)
	require.NoError(t, err)
	require.False(t, c.Worse())

	// A figure 1% off passes at the default tolerance and fails at 0,
	// which is exact (Compare's own 0 would be the default).
	moved := *cand
	moved.Cells = append([]Cell(nil), cand.Cells...)
	for i := range moved.Cells {
		if v := moved.Cells[i].TotalTokS; v != nil {
			w := *v * 1.01
			moved.Cells[i].TotalTokS = &w
			break
		}
	}
	c, err = b.Compare(base, &moved)
	require.NoError(t, err)
	require.False(t, c.Worse())
	b.Tolerance = 0
	c, err = b.Compare(base, &moved)
	require.NoError(t, err)
	require.True(t, c.Worse())

	b.Candidate = "testdata/nope.csv"
	_, _, err = b.Load()
	require.ErrorContains(t, err, "candidate: ")
	b.Path = "testdata/nope.csv"
	_, _, err = b.Load()
	require.ErrorContains(t, err, "baseline: ")
}

func TestOutputs(t *testing.T) {
	t.Parallel()
	m, err := ReadCSVFile("testdata/speed-matrix-deepseek-v4-flash-4xh200.csv")
	require.NoError(t, err)
	require.Positive(t, m.Measured())
	dir := t.TempDir()
	o := Outputs{JSON: filepath.Join(dir, "m.json"), CSV: filepath.Join(dir, "m.csv")}
	require.NoError(t, o.Refuse())
	guarded := 0
	guard := func(w func() error) error { guarded++; return w() }
	require.NoError(t, o.Write(m, guard))
	require.Equal(t, 2, guarded, "every file is written under the guard")
	require.ErrorContains(t, o.Refuse(), "exists: give another file, or -force to replace it")
	require.Error(t, o.Write(m, guard), "an existing file is never replaced without Force")
	o.Force = true
	require.NoError(t, o.Refuse())
	require.NoError(t, o.Write(m, guard))
	back, err := ReadAnyFile(o.JSON)
	require.NoError(t, err)
	require.Equal(t, m.Measured(), back.Measured())
	_, err = os.Stat(o.CSV)
	require.NoError(t, err)
}
