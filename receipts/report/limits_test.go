package report

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/speed"
)

// A run directory is read under the receipts' size cap: a 300 MB file (a
// sparse one: no disk) is refused by its size, unread, with the cap named.
// "Unread" is checked on the allocation counter (reading it would take
// 300 MB), so the test is not parallel.
func TestLoadHoldsTheSizeCap(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "padded.json"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(300<<20))
	require.NoError(t, f.Close())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Load(dir, "base")
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, receipts.ErrTooLarge)
	require.ErrorContains(t, err, "receipt too large: 314572800 bytes, limit 33554432 bytes")
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "the file was read")
}

// TestGatePivotSplits: a run's sixteen units go into tables of at most
// pivotUnits columns (each fits 1280 px), every metric in exactly one,
// rows named without the Judgments/ prefix and -GOMAXPROCS suffix.
func TestGatePivotSplits(t *testing.T) {
	t.Parallel()
	g := &speed.Report{}
	for _, bn := range []string{"Judgments/set=checks/c=1-2", "Judgments/set=checks/c=4-2"} {
		for u := range 16 {
			g.Metrics = append(g.Metrics, speed.Metric{Benchmark: bn, Unit: fmt.Sprintf("unit%02d", u), Verdict: speed.Same})
		}
	}
	ts := gatePivot(g)
	require.Len(t, ts, 3)
	seen := map[string]bool{}
	for i, tb := range ts {
		require.LessOrEqual(t, len(tb.Header), 1+pivotUnits)
		require.Contains(t, tb.Caption, fmt.Sprintf("(%d of 3)", i+1))
		require.Equal(t, "set=checks/c=1", tb.Rows[0][0].Text)
		require.Equal(t, "Judgments/set=checks/c=1-2", tb.Rows[0][0].Tip)
		for _, u := range tb.Header[1:] {
			require.False(t, seen[u], u)
			seen[u] = true
		}
	}
	require.Len(t, seen, 16)
	require.Len(t, gatePivot(&speed.Report{Metrics: g.Metrics[:3]}), 1, "a few units: one table")
}
