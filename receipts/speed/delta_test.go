package speed_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/speed"
)

// unitRuns is one benchmark's runs of a unit declared better=dir.
func unitRuns(unit, dir string, vs ...float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Unit %s better=%s\n", unit, dir)
	for _, v := range vs {
		fmt.Fprintf(&b, "BenchmarkX-2 1 %g %s\n", v, unit)
	}
	return b.String()
}

// The delta is the change relative to the baseline's size, (c − b)/|b|:
// as c/b − 1 a unit that can go below 0 read a move in the bad direction
// as one in the good (−100 → −200 better=higher: "+100%, better"). A
// change of exactly the margin is not more than it: 2 → 2.1 reads
// +5.0000000000000044% in floating point, which failed.
func TestDeltaIsRelativeToTheBaselinesSize(t *testing.T) {
	t.Parallel()
	seq := func(k float64) []float64 {
		out := make([]float64, 10)
		for i := range out {
			out[i] = k * float64(100+i)
		}
		return out
	}
	plus := func(d float64) []float64 {
		out := make([]float64, 10)
		for i := range out {
			out[i] = float64(100+i) + d
		}
		return out
	}
	rep10 := func(v float64) []float64 {
		out := make([]float64, 10)
		for i := range out {
			out[i] = v
		}
		return out
	}
	cases := []struct {
		name    string
		dir     string
		base    []float64
		cand    []float64
		verdict speed.Verdict
		delta   float64
	}{
		{"below 0, higher better, lower fails", "higher", seq(-1), seq(-2), speed.Worse, -1},
		{"below 0, higher better, higher is better", "higher", seq(-2), seq(-1), speed.Better, 0.5},
		{"below 0, lower better, higher fails", "lower", seq(-2), seq(-1), speed.Worse, 0.5},
		{"below 0, lower better, lower is better", "lower", seq(-1), seq(-2), speed.Better, -1},
		{"lower better, exactly the margin passes", "lower", plus(0), plus(5.225), speed.Same, 0.05},
		{"higher better, exactly the margin passes", "higher", plus(0), plus(-5.225), speed.Same, -0.05},
		{"lower better, 2 → 2.1 is the margin and passes", "lower", rep10(2), rep10(2.1), speed.Same, 0.05},
		{"higher better, 2 → 1.9 is the margin and passes", "higher", rep10(2), rep10(1.9), speed.Same, -0.05},
		{"higher better, 2 → 1.89 fails", "higher", rep10(2), rep10(1.89), speed.Worse, -0.055},
		{"lower better, past the margin fails", "lower", plus(0), plus(5.3), speed.Worse, 5.3 / 104.5},
		{"higher better, past the margin fails", "higher", plus(0), plus(-5.3), speed.Worse, -5.3 / 104.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rep := speed.Decide(loadText(t, unitRuns("score", c.dir, c.base...)), loadText(t, unitRuns("score", c.dir, c.cand...)), speed.DefaultPolicy())
			require.Len(t, rep.Metrics, 1)
			m := rep.Metrics[0]
			require.Equal(t, c.verdict, m.Verdict, "delta %v", *m.Delta)
			require.InDelta(t, c.delta, *m.Delta, 1e-9)
			require.Equal(t, c.verdict != speed.Worse, rep.Passed, rep.Failures)
		})
	}
}
