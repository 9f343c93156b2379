package stub_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/grid"
	"github.com/vetbench/vetbench/receipts/matrix"
	"github.com/vetbench/vetbench/stub"
)

// The DeepSeek-V4-Flash profile against the published matrix
// (testdata/speed-matrix-deepseek-v4-flash-4xh200.csv, a copy of the
// reference page's CSV). The full grid — 9 contexts × 8 levels, 30 s a
// cell, 4096-token streams — takes minutes of CPU even on fake time, so it
// runs when VETBENCH_DEEPSEEK_GRID names a directory to write the twin's
// matrix and the comparison table into (make deepseek-grid); make test
// runs one corner of it.

const deepseekCSV = "testdata/speed-matrix-deepseek-v4-flash-4xh200.csv"

// publishedGrid is the published matrix's grid and method.
func publishedGrid(contexts, levels []int) grid.Options {
	return grid.Options{Contexts: contexts, Levels: levels, Duration: 30 * time.Second, OutputTokens: 4096,
		LoopDetection: true}
}

// deepseekGrid runs the profile on fake time over o.
func deepseekGrid(t *testing.T, o grid.Options) *matrix.Matrix {
	t.Helper()
	var m *matrix.Matrix
	synctest.Test(t, func(t *testing.T) {
		m = gridOn(t, stub.ProfileDeepSeekV4Flash(), o, "twin-test-key")
	})
	return m
}

// The corner that runs in make test: the profile serves the published
// method end to end — reasoning counted, several tokens per chunk, TP=4
// timing — and every cell is a status the published matrix uses.
func TestDeepSeekCorner(t *testing.T) {
	o := publishedGrid([]int{8192}, []int{1, 2})
	o.Duration = 10 * time.Second
	m := deepseekGrid(t, o)
	for _, c := range m.Cells {
		require.Contains(t, []matrix.Status{matrix.Valid, matrix.RequestsQueued, matrix.Looped}, c.Status, "%s c=%d: %s", c.Context, c.Concurrency, c.Reason)
	}
	// the served twin and its simulation run the same engine: both count
	// every token a verify step yields (1 + the accepted drafts)
	sim, _ := stub.SimulateMatrix(stub.ProfileDeepSeekV4Flash(), stub.MatrixRun{Contexts: []int{8192}, Levels: []int{1, 2},
		MaxTokens: 4096, Duration: o.Duration.Seconds()})
	for _, c := range m.Cells {
		if c.Status != matrix.Valid || c.Context != "8K" {
			continue
		}
		s := sim[[2]int{8192, c.Concurrency}]
		t.Logf("8K c=%d: served %.1f tok/s, %.3f ms between tokens; simulated %.1f, %.3f", c.Concurrency, *c.TotalTokS, *c.TimeBetweenTokensMs, s.TotalTokS, 1e3*s.ITL)
		require.InEpsilon(t, s.TotalTokS, *c.TotalTokS, 0.05, "c=%d total tok/s: served vs simulated", c.Concurrency)
		require.InEpsilon(t, 1e3*s.ITL, *c.TimeBetweenTokensMs, 0.05, "c=%d time between tokens: served vs simulated", c.Concurrency)
	}
	require.Equal(t, "fp8", m.Identity.CacheConfig["cache_dtype"])
	require.Equal(t, "256", m.Identity.CacheConfig["block_size"])
	require.Contains(t, m.Identity.ServerBuild, stub.DeepSeekVLLMVersion)
}

func TestDeepSeekPublishedGrid(t *testing.T) {
	dir := os.Getenv("VETBENCH_DEEPSEEK_GRID")
	if dir == "" {
		t.Skip("set VETBENCH_DEEPSEEK_GRID=DIR to run the published grid (minutes of CPU)")
	}
	pub, err := matrix.ReadCSVFile(deepseekCSV)
	require.NoError(t, err)
	var contexts []int
	for i := range 8 {
		contexts = append(contexts, 8192<<i)
	}
	o := publishedGrid(append(contexts, 1<<20), []int{1, 2, 4, 8, 16, 32, 64, 128})
	m := deepseekGrid(t, o)
	require.NoError(t, matrix.WriteFile(filepath.Join(dir, "deepseek-twin.json"), m))
	require.NoError(t, matrix.WriteCSVFile(filepath.Join(dir, "deepseek-twin.csv"), m))
	cmp, err := matrix.Compare(pub, m, matrix.CompareOptions{})
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, cmp.WriteText(&b))
	b.WriteString(summary(cmp))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deepseek-compare.txt"), []byte(b.String()), 0o644))
	t.Log("\n" + b.String())
}

// summary counts the decode cells whose statuses agree and, of those with
// a total tok/s on both sides, the ones within the tolerance.
func summary(c *matrix.Comparison) string {
	same, decode, within, both := 0, 0, 0, 0
	for _, d := range c.Diffs {
		if d.Phase == matrix.PhasePrefill || d.Missing {
			continue
		}
		decode++
		if !d.StatusChanged() {
			same++
		}
		for _, f := range d.Figures {
			if f.Name == matrix.FigTotal && f.Err != nil {
				both++
				if math.Abs(*f.Err) <= c.Tolerance {
					within++
				}
			}
		}
	}
	return fmt.Sprintf("\ndecode cells: statuses equal in %d of %d; total tok/s within ±%.0f%% in %d of %d with a figure on both sides\n",
		same, decode, 100*c.Tolerance, within, both)
}
