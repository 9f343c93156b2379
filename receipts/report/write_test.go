package report

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMake writes the page and the CSV tables where Outputs says, refuses
// a second time (before writing anything) unless forced, and writes no
// CSV with "-".
func TestMake(t *testing.T) {
	t.Parallel()
	_, err := Make(nil, DefaultOptions(), Outputs{})
	require.ErrorContains(t, err, "want one run directory")
	dir := t.TempDir()
	page := filepath.Join(dir, "pair.html")
	w, err := Make([]string{filepath.Join("testdata", "base"), filepath.Join("testdata", "cand")}, DefaultOptions(), Outputs{HTML: page})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "pair_csv"), w.CSVDir)
	entries, err := os.ReadDir(w.CSVDir)
	require.NoError(t, err)
	require.Len(t, entries, w.CSVFiles)
	require.NoError(t, os.Remove(filepath.Join(w.CSVDir, "gate.csv")))
	_, err = Make([]string{filepath.Join("testdata", "base"), filepath.Join("testdata", "cand")}, DefaultOptions(), Outputs{HTML: page})
	require.ErrorContains(t, err, page+" exists")
	require.NoFileExists(t, filepath.Join(w.CSVDir, "gate.csv"), "a refused write writes nothing")
	w, err = Make([]string{filepath.Join("testdata", "base")}, DefaultOptions(), Outputs{HTML: page, CSVDir: "-", Force: true})
	require.NoError(t, err)
	require.Zero(t, w.CSVFiles)
	require.Equal(t, "run", w.Report.Sections[1].Tables[0].Header[1], "one run is labelled run")
}
