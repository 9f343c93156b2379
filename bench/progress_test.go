package bench_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/stub"
)

// A session tells its listener how far each window has got: labelled with
// set, level and arm, counting up to the set's size, closed by one final
// report that agrees with the receipt.
func TestMeasureReportsProgress(t *testing.T) {
	s := getSuite(t)
	sess := inProcess(t, firstCases(s.set(t, "checks"), 9), testConfig(), stub.Config{})
	var got []bench.Progress
	sess.OnProgress = func(p bench.Progress) { got = append(got, p) }
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 2, Arm: receipts.ArmWarm})
	require.NoError(t, err)
	require.Len(t, got, 1+9+1, "open, each judgment, final")
	for i, p := range got {
		require.Equal(t, "checks", p.Set)
		require.Equal(t, 2, p.Concurrency)
		require.Equal(t, receipts.ArmWarm, p.Arm)
		require.Equal(t, 9, p.Total)
		require.Equal(t, i == len(got)-1, p.Final)
		if i > 0 {
			require.GreaterOrEqual(t, p.Done, got[i-1].Done)
		}
	}
	last := got[len(got)-1]
	require.Equal(t, rec.Throughput.Judgments+rec.Throughput.Failed, last.Done)
	require.Zero(t, last.Failed)
	require.Equal(t, rec.Throughput.WallSeconds, last.Elapsed.Seconds())
}
