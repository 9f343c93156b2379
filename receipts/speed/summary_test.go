package speed_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/speed"
)

// TestSummaryIsDecides: Samples.Summary, what the report draws, is the
// very summary Decide puts in each side of every metric; SummarizeValues
// is the median of values of a unit without assume=. An absent benchmark
// or unit has none.
func TestSummaryIsDecides(t *testing.T) {
	t.Parallel()
	const text = "Unit judgments/s better=higher\nUnit moved-items better=lower assume=exact\n" +
		"BenchmarkJudgments/set=checks/c=1-2 1 14.46 judgments/s 0 moved-items\n" +
		"BenchmarkJudgments/set=checks/c=1-2 1 14.37 judgments/s 0 moved-items\n" +
		"BenchmarkJudgments/set=checks/c=1-2 1 14.61 judgments/s 0 moved-items\n" +
		"BenchmarkJudgments/set=checks/c=4-2 1 30 judgments/s 1 moved-items\n"
	base, err := speed.Load(strings.NewReader(text), "base")
	require.NoError(t, err)
	cand, err := speed.Load(strings.NewReader(strings.ReplaceAll(text, "14.", "13.")), "cand")
	require.NoError(t, err)
	p := speed.DefaultPolicy()
	rep := speed.Decide(base, cand, p)
	require.NotEmpty(t, rep.Metrics)
	for _, m := range rep.Metrics {
		require.Equal(t, m.Baseline, base.Summary(m.Benchmark, m.Unit, p), "%s %s", m.Benchmark, m.Unit)
		require.Equal(t, m.Candidate, cand.Summary(m.Benchmark, m.Unit, p), "%s %s", m.Benchmark, m.Unit)
	}
	require.Equal(t, 14.46, base.Summary("Judgments/set=checks/c=1-2", "judgments/s", p).Center)
	require.Equal(t, 14.46, speed.SummarizeValues([]float64{14.37, 14.61, 14.46}, p).Center)
	require.Nil(t, base.Summary("Judgments/set=checks/c=1-2", "p95-sec", p))
	require.Nil(t, base.Summary("Judgments/set=faces/c=1-2", "judgments/s", p))
	require.Nil(t, speed.SummarizeValues(nil, p))
}
