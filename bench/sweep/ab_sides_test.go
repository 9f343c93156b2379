package sweep_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/sweep"
)

func TestParseSidesAndCheckFiles(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "bench.txt")
	require.NoError(t, os.WriteFile(file, []byte("BenchmarkX 1 1 ns/op\n"), 0o644))
	sides, err := sweep.ParseSides(file, "inprocess")
	require.NoError(t, err)
	require.False(t, sides[0].Live())
	require.True(t, sides[1].Live())
	_, err = sweep.ParseSides(file, "ftp://host")
	require.ErrorContains(t, err, "candidate: ")

	require.NoError(t, sweep.CheckFiles([]string{file, file}))
	err = sweep.CheckFiles([]string{file, "http://user:secret@host:8000"})
	require.ErrorContains(t, err, "candidate: ")
	require.ErrorContains(t, err, "is a URL")
	require.NotContains(t, err.Error(), "secret", "credentials are never echoed")
}
