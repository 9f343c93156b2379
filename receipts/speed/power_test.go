package speed_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchmath"

	"github.com/vetbench/vetbench/receipts/speed"
)

// separated writes metrics benchmarks of one unit (judgments/s,
// better=higher), n runs each, values from..from+n−1: two such outputs
// whose ranges do not overlap are as far apart as a U test can see.
func separated(t *testing.T, metrics, n int, from float64) *speed.Samples {
	t.Helper()
	var b strings.Builder
	b.WriteString("Unit judgments/s better=higher\n")
	for r := range n {
		for i := range metrics {
			fmt.Fprintf(&b, "BenchmarkJudgments/set=checks/c=%d-2 1 %g judgments/s\n", i+1, from+float64(r))
		}
	}
	s, err := speed.Load(strings.NewReader(b.String()), "gen")
	require.NoError(t, err)
	return s
}

// The p a U test can reach at best, asked of benchmath, is the closed form
// 2/C(n1+n2, n1) at every size it tests exactly; exact units need no runs
// and a t test none but two.
func TestMinPIsBenchmaths(t *testing.T) {
	t.Parallel()
	for n1 := 1; n1 <= 12; n1++ {
		for n2 := 1; n2 <= 12; n2++ {
			require.InDelta(t, speed.MinUTestP(n1, n2), speed.MinP(benchmath.AssumeNothing, n1, n2), 1e-12*speed.MinUTestP(n1, n2), "%d vs %d", n1, n2)
		}
	}
	require.InDelta(t, 0.007936507936507936, speed.MinP(benchmath.AssumeNothing, 5, 5), 1e-15)
	require.Equal(t, 1.0, speed.MinP(benchmath.AssumeNothing, 0, 5))
	require.Equal(t, 0.0, speed.MinP(benchmath.AssumeExact, 1, 1))
	require.Equal(t, 1.0, speed.MinP(benchmath.AssumeNormal, 1, 5), "Welch's t test needs two runs a side")
	require.Less(t, speed.MinP(benchmath.AssumeNormal, 2, 2), 1e-6)
}

// A table over run counts, metric counts and Holm on or off: whether the
// gate can decide, and the least -count it says suffices. Each case is
// decided on a candidate fully separated below the baseline (20% and more
// slower): where the runs suffice it fails, every metric worse; where they
// cannot it has no verdict, every metric too_few_runs, and the problem
// names the threshold, the best p and the count — never a pass.
func TestPowerTable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		nb, nc, metrics int
		holm            bool
		comparable      bool
		minCount        int
		threshold       float64
	}{
		{5, 5, 48, true, false, 7, 0.05 / 48},   // the reported bug: best p 0.0079
		{6, 6, 54, true, false, 7, 0.05 / 54},   // best p 0.0022 against 0.00093
		{7, 7, 48, true, true, 7, 0.05 / 48},    // 0.00058
		{7, 7, 85, true, true, 7, 0.05 / 85},    // 7 suffices up to 85 metrics
		{7, 7, 86, true, false, 8, 0.05 / 86},   // … and not beyond
		{5, 5, 48, false, true, 4, 0.05},        // per metric: 0.0079 < 0.05
		{5, 5, 6, true, true, 5, 0.05 / 6},      // 0.0079 < 0.0083
		{5, 5, 7, true, false, 6, 0.05 / 7},     // 0.0079 ≥ 0.0071
		{3, 3, 1, true, false, 4, 0.05},         // 0.1
		{4, 4, 1, true, true, 4, 0.05},          // 0.029
		{4, 4, 2, true, false, 5, 0.025},        // 0.029 ≥ 0.025
		{2, 2, 1, false, false, 4, 0.05},        // 0.33
		{10, 5, 48, true, true, 7, 0.05 / 48},   // 2/C(15,5) = 0.00067
		{10, 4, 48, true, false, 7, 0.05 / 48},  // 2/C(14,4) = 0.0020
		{10, 10, 4000, true, true, 10, 1.25e-5}, // 1.08e-5
		{10, 10, 5000, true, false, 11, 1e-5},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%dv%d_m%d_holm=%v", c.nb, c.nc, c.metrics, c.holm)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := speed.DefaultPolicy()
			p.Holm = c.holm
			rep := speed.Decide(separated(t, c.metrics, c.nb, 1000), separated(t, c.metrics, c.nc, 500), p)
			pw := rep.Power
			require.Equal(t, c.metrics, pw.Tested)
			require.InDelta(t, c.threshold, pw.Threshold, 1e-12)
			require.Equal(t, c.minCount, pw.MinCount)
			best := speed.MinUTestP(c.nb, c.nc)
			for _, m := range rep.Metrics {
				require.InDelta(t, best, *m.MinP, 1e-12*best)
				require.InDelta(t, best, *m.P, 1e-12*best, "fully separated: the test's p is its best")
			}
			if c.comparable {
				require.True(t, rep.Failed(), "%v", rep.Problems)
				require.Equal(t, c.metrics, rep.Worse)
				require.Zero(t, pw.TooFewRuns)
				return
			}
			require.True(t, rep.NoVerdict())
			require.False(t, rep.Passed)
			require.Equal(t, c.metrics, pw.TooFewRuns)
			require.Zero(t, rep.Worse)
			require.Len(t, rep.Problems, 1)
			require.Contains(t, rep.Problems[0], fmt.Sprintf("too few runs: "))
			require.Contains(t, rep.Problems[0], fmt.Sprintf("%d vs %d runs reach at best p = %.2g; use -count %d or more", c.nb, c.nc, best, c.minCount))
			for _, m := range rep.Metrics {
				require.Equal(t, speed.FewRuns, m.Verdict)
			}
		})
	}
}

// The message the reported case gets, whole: the numbers and every fix.
func TestTooFewRunsMessage(t *testing.T) {
	t.Parallel()
	rep := speed.Decide(separated(t, 48, 5, 1000), separated(t, 48, 5, 500), speed.DefaultPolicy())
	require.Equal(t, []string{"too few runs: with 48 tested metrics Holm needs p < 0.00104; 5 vs 5 runs reach at best p = 0.0079; use -count 7 or more (or gate at most 6 metrics, or -holm=false)"}, rep.Problems)
	var b strings.Builder
	require.NoError(t, rep.WriteText(&b))
	require.Contains(t, b.String(), "NO VERDICT (1):\n  too few runs: with 48 tested metrics")
	require.Contains(t, b.String(), "TOO_FEW_RUNS")

	p := speed.DefaultPolicy()
	p.Holm = false
	rep = speed.Decide(separated(t, 2, 3, 1000), separated(t, 2, 3, 500), p)
	require.Equal(t, []string{"too few runs: p < 0.05 is needed; 3 vs 3 runs reach at best p = 0.1; use -count 4 or more"}, rep.Problems)
}

// mixed is 48 metrics of 10 runs a side and one of 5 (a benchmark whose
// later runs lack it): the 5-run one cannot reach 0.05/49 by itself.
func mixed(t *testing.T, from float64, spread bool) *speed.Samples {
	t.Helper()
	var b strings.Builder
	b.WriteString("Unit judgments/s better=higher\n")
	for r := range 10 {
		v := from + float64(r)
		if spread && r%2 == 1 {
			v = from + 1000 - float64(r) // overlaps the other side
		}
		for i := range 48 {
			fmt.Fprintf(&b, "BenchmarkJudgments/set=checks/c=%d-2 1 %g judgments/s\n", i+1, v)
		}
		if r < 5 {
			fmt.Fprintf(&b, "BenchmarkJudgments/set=faces/c=1-2 1 %g judgments/s\n", v)
		}
	}
	s, err := speed.Load(strings.NewReader(b.String()), "gen")
	require.NoError(t, err)
	return s
}

// Some metrics underpowered: undecided ones leave no verdict unless
// AllowFewRuns, which decides on the rest and still counts them; one that
// Holm's later steps found significant anyway is decided.
func TestPowerMixed(t *testing.T) {
	t.Parallel()
	// Unchanged (overlapping) candidate: the 5-run metric is undecided.
	base, same := mixed(t, 1000, true), mixed(t, 1003, true)
	rep := speed.Decide(base, same, speed.DefaultPolicy())
	require.True(t, rep.NoVerdict(), "one metric undecided: no verdict")
	require.Equal(t, 1, rep.Power.TooFewRuns)
	require.Equal(t, speed.FewRuns, verdicts(rep)["Judgments/set=faces/c=1-2 judgments/s"])
	require.Equal(t, []string{"too few runs on 1 of 49 tested metrics (Judgments/set=faces/c=1-2 judgments/s): with 49 tested metrics Holm needs p < 0.00102; 5 vs 5 runs reach at best p = 0.0079; use -count 7 or more (or gate at most 6 metrics, or -holm=false, or -allow-few-runs to gate the other 48)"}, rep.Problems)

	allow := speed.DefaultPolicy()
	allow.AllowFewRuns = true
	rep = speed.Decide(base, same, allow)
	require.True(t, rep.Passed, "%v", rep.Problems)
	require.Equal(t, 1, rep.Power.TooFewRuns)
	require.True(t, rep.Power.Allowed)
	var b strings.Builder
	require.NoError(t, rep.WriteText(&b))
	require.Contains(t, b.String(), "too few runs (allowed: not decided): 1 of 49 tested metrics cannot reach p < 0.00102; -count 7 or more decides them")
	require.Contains(t, b.String(), "PASS: 48 of 49 gated metrics decided, none worse by more than 5.0%; 1 too few runs (allowed)")

	// A slowed, fully separated candidate: the 48 go first and Holm's last
	// step (p < 0.05) decides the 5-run one too: worse, and a verdict.
	rep = speed.Decide(mixed(t, 1000, false), mixed(t, 500, false), speed.DefaultPolicy())
	require.True(t, rep.Failed(), "%v", rep.Problems)
	require.Equal(t, 49, rep.Worse)
	require.Zero(t, rep.Power.TooFewRuns)

	// Allowed, but nothing decidable: still no verdict.
	rep = speed.Decide(separated(t, 48, 5, 1000), separated(t, 48, 5, 500), allow)
	require.True(t, rep.NoVerdict())
	require.Contains(t, rep.Problems[0], "too few runs: with 48 tested metrics")
}

// Before measuring, FewRunsAhead says what Decide will say of the runs
// once measured (here: fully separated, the best a U test can see): no
// line where they decide, and where they cannot the same line, its tested
// count "at least". With a side read from a file, the count it names is
// the least that decides against that file's runs (one fewer does not).
func TestFewRunsAhead(t *testing.T) {
	t.Parallel()
	cases := []struct {
		metrics, nb, nc int
		holm            bool
		fixed           [2]bool
		want            string // "" when the runs can decide
	}{
		{6, 3, 3, true, [2]bool{}, "too few runs: with at least 6 tested metrics Holm needs p < 0.00833; 3 vs 3 runs reach at best p = 0.1; use -count 5 or more"},
		{6, 5, 5, true, [2]bool{}, ""}, // 0.0079 < 0.0083
		{7, 5, 5, true, [2]bool{}, "too few runs: with at least 7 tested metrics Holm needs p < 0.00714; 5 vs 5 runs reach at best p = 0.0079; use -count 6 or more (or gate at most 6 metrics, or -holm=false)"},
		{1, 4, 4, true, [2]bool{}, ""}, // 0.029 < 0.05
		{2, 4, 4, true, [2]bool{}, "too few runs: with at least 2 tested metrics Holm needs p < 0.025; 4 vs 4 runs reach at best p = 0.029; use -count 5 or more (or gate at most 1 metric, or -holm=false)"},
		{1, 3, 3, false, [2]bool{}, "too few runs: p < 0.05 is needed; 3 vs 3 runs reach at best p = 0.1; use -count 4 or more"},
		{5, 10, 2, true, [2]bool{true, false}, "too few runs: with at least 5 tested metrics Holm needs p < 0.01; 10 vs 2 runs reach at best p = 0.03; use -count 3 or more (or gate at most 1 metric, or -holm=false)"},
		{5, 10, 3, true, [2]bool{true, false}, ""}, // 2/C(13,3) = 0.007
		{5, 2, 10, true, [2]bool{false, true}, "too few runs: with at least 5 tested metrics Holm needs p < 0.01; 2 vs 10 runs reach at best p = 0.03; use -count 3 or more (or gate at most 1 metric, or -holm=false)"},
		{0, 3, 3, true, [2]bool{}, ""}, // nothing tested
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%dv%d_m%d_holm=%v_fixed=%v", c.nb, c.nc, c.metrics, c.holm, c.fixed), func(t *testing.T) {
			t.Parallel()
			p := speed.DefaultPolicy()
			p.Holm = c.holm
			got := speed.FewRunsAhead(p, c.metrics, c.nb, c.nc, c.fixed)
			require.Equal(t, c.want, got)
			if c.metrics == 0 {
				return
			}
			rep := speed.Decide(separated(t, c.metrics, c.nb, 1000), separated(t, c.metrics, c.nc, 500), p)
			if got == "" {
				require.True(t, rep.Failed(), "%v", rep.Problems)
				return
			}
			require.True(t, rep.NoVerdict())
			if c.fixed == [2]bool{} {
				require.Equal(t, []string{strings.Replace(got, "with at least ", "with ", 1)}, rep.Problems)
				return
			}
			// The count named against the file's runs decides; one fewer does not.
			var k int
			_, err := fmt.Sscanf(got[strings.Index(got, "use -count "):], "use -count %d", &k)
			require.NoError(t, err)
			n := func(live int) (int, int) {
				if c.fixed[0] {
					return c.nb, live
				}
				return live, c.nc
			}
			nb, nc := n(k)
			require.True(t, speed.Decide(separated(t, c.metrics, nb, 1000), separated(t, c.metrics, nc, 500), p).Failed(), "-count %d", k)
			nb, nc = n(k - 1)
			require.True(t, speed.Decide(separated(t, c.metrics, nb, 1000), separated(t, c.metrics, nc, 500), p).NoVerdict(), "-count %d", k-1)
		})
	}
}
