package speed_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/speed"
)

// goodputOutput is six runs of one open-loop point whose goodput (share of
// judgments within the SLO) is about g, with an unchanged judgments/s.
func goodputOutput(g float64) string {
	var b strings.Builder
	b.WriteString("Unit judgments/s better=higher\nUnit goodput better=higher\n")
	for i := range 6 {
		d := 0.001 * float64(i%3-1)
		fmt.Fprintf(&b, "BenchmarkJudgments/set=checks/rate=4/max=16-2 1 %.4f judgments/s %.4f goodput\n", 4+d, g+d)
	}
	return b.String()
}

func loadText(t *testing.T, s string) *speed.Samples {
	t.Helper()
	sm, err := speed.Load(strings.NewReader(s), "gen")
	require.NoError(t, err)
	return sm
}

// A stated goodput target is absolute: a candidate whose median goodput is
// below it fails even when the baseline was as bad (no relative change to
// see); one above it passes; a target nothing reports leaves no verdict,
// never a pass. Without the floor, the same missed target passes: the floor
// is what fails it.
func TestDecideFloors(t *testing.T) {
	p := speed.DefaultPolicy()
	p.Floors = map[string]float64{"goodput": 0.95}
	bad := loadText(t, goodputOutput(0.80))
	good := loadText(t, goodputOutput(0.99))

	rep := speed.Decide(bad, bad, p)
	require.True(t, rep.Failed(), rep.Problems)
	require.Equal(t, []string{"Judgments/set=checks/rate=4/max=16-2 goodput: candidate 0.8, below the stated target 0.95"}, rep.Failures)

	rep = speed.Decide(bad, good, p)
	require.True(t, rep.Passed, rep.Failures)

	noFloor := speed.DefaultPolicy()
	require.True(t, speed.Decide(bad, bad, noFloor).Passed, "the positive control: without the floor nothing fails")

	closed := loadText(t, lines("judgments/s", 4, 4.001, 3.999, 4, 4.002, 3.998))
	rep = speed.Decide(closed, closed, p)
	require.True(t, rep.NoVerdict())
	require.Contains(t, strings.Join(rep.Problems, "\n"), "floor on goodput: no candidate benchmark reports it")
}
