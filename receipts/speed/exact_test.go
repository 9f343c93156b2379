package speed_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/speed"
)

// exactRuns is one benchmark's runs of an exact better=lower count.
func exactRuns(unit string, vs ...int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Unit %s better=lower assume=exact\n", unit)
	for _, v := range vs {
		fmt.Fprintf(&b, "BenchmarkX-2 1 %d %s\n", v, unit)
	}
	return b.String()
}

// An exact count (failed-items, preemptions) that varies between runs is
// compared by its mean, not by benchmath's mode: a candidate with failed
// items in fewer than half of its runs has a mode of 0 and passed.
func TestExactCountsThatVaryAreComparedByTheirMean(t *testing.T) {
	t.Parallel()
	zeros := []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	cases := []struct {
		name    string
		base    string
		cand    string
		verdict speed.Verdict
		passed  bool
	}{
		{"failures in 3 of 10 runs fail", exactRuns("failed-items", zeros...), exactRuns("failed-items", 0, 0, 0, 0, 0, 0, 0, 1, 2, 0), speed.Worse, false},
		{"one failure in 10 runs fails", exactRuns("failed-items", zeros...), exactRuns("failed-items", 0, 0, 0, 0, 0, 0, 0, 0, 0, 1), speed.Worse, false},
		{"none on both sides passes", exactRuns("failed-items", zeros...), exactRuns("failed-items", zeros...), speed.Same, true},
		{"the same count, other runs, passes", exactRuns("preemptions", 0, 0, 0, 4, 0), exactRuns("preemptions", 4, 0, 0, 0, 0), speed.Same, true},
		{"fewer than the baseline is better", exactRuns("preemptions", 0, 0, 3, 3, 0), exactRuns("preemptions", 0, 0, 0, 3, 0), speed.Better, true},
		{"a mode held, more in the others, fails", exactRuns("preemptions", 2, 2, 2, 2, 2), exactRuns("preemptions", 2, 2, 2, 9, 9), speed.Worse, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rep := speed.Decide(loadText(t, c.base), loadText(t, c.cand), speed.DefaultPolicy())
			require.Len(t, rep.Metrics, 1)
			require.Equal(t, c.verdict, rep.Metrics[0].Verdict)
			require.Equal(t, c.passed, rep.Passed, rep.Failures)
			require.False(t, rep.NoVerdict(), rep.Problems)
		})
	}
}

// A new exact count of bad events fails when any run has one, not only
// when most do.
func TestNewExactCountInSomeRunsFails(t *testing.T) {
	t.Parallel()
	base := loadText(t, lines("ops/s", 100, 101, 102, 103, 104, 105))
	cand := loadText(t, lines("ops/s", 100, 101, 102, 103, 104, 105)+exactRuns("failed-items", 0, 0, 0, 0, 3, 0))
	rep := speed.Decide(base, cand, speed.DefaultPolicy())
	require.True(t, rep.Failed(), "%v %v", rep.Failures, rep.Problems)
	require.Contains(t, strings.Join(rep.Failures, "\n"), "X-2 failed-items: 0.5 in the candidate, not recorded in the baseline")
}

// assume= declared by one side only holds for both, as better= does: a
// baseline without the Unit line read the candidate's exact failed-items
// with a U test, and one failed run in ten passed (p = 1).
func TestAssumptionDeclaredBySideOnlyHolds(t *testing.T) {
	t.Parallel()
	bare := func(vs ...int) string {
		return strings.SplitN(exactRuns("failed-items", vs...), "\n", 2)[1]
	}
	zeros := []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	oneFailed := []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	cases := []struct {
		name       string
		base, cand string
	}{
		{"the candidate declares it", bare(zeros...), exactRuns("failed-items", oneFailed...)},
		{"the baseline declares it", exactRuns("failed-items", zeros...), bare(oneFailed...)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rep := speed.Decide(loadText(t, c.base), loadText(t, c.cand), speed.DefaultPolicy())
			require.Len(t, rep.Metrics, 1)
			require.Equal(t, speed.Worse, rep.Metrics[0].Verdict)
			require.True(t, rep.Failed(), "%v %v", rep.Failures, rep.Problems)
		})
	}
}
