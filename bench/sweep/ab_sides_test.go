package sweep_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/receipts"
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

// TestOutcomeProblem: the console's word for each outcome, interrupted
// first (a failure seen after Ctrl-C is the interrupt's).
func TestOutcomeProblem(t *testing.T) {
	t.Parallel()
	rec := &receipts.Receipt{}
	failures := fmt.Errorf("%w: 5 of 7", bench.ErrFailures)
	down := fmt.Errorf("%w: engine dead", bench.ErrServerDown)
	for _, c := range []struct {
		o           sweep.Outcome
		interrupted bool
		want        string
	}{
		{sweep.Outcome{Receipt: rec}, false, ""},
		{sweep.Outcome{Receipt: rec}, true, ""},
		{sweep.Outcome{Receipt: rec, Err: failures}, false, "FAILED: " + failures.Error()},
		{sweep.Outcome{Receipt: rec, Err: failures}, true, "interrupted: " + failures.Error()},
		{sweep.Outcome{Receipt: rec, Err: down}, false, down.Error()},
		{sweep.Outcome{Receipt: rec, Err: errors.New("reset caches: 404")}, false, ""},
	} {
		require.Equal(t, c.want, c.o.Problem(c.interrupted))
	}
}
