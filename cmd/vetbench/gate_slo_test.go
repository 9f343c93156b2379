package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sloOutput is six passes of an open-loop point with the SLO's goodput
// near g, as the suite prints them.
func sloOutput(g float64) string {
	var b strings.Builder
	b.WriteString("Unit judgments/s better=higher\nUnit goodput better=higher\n")
	for i := range 6 {
		d := 0.001 * float64(i%3-1)
		fmt.Fprintf(&b, "BenchmarkJudgments/set=checks/rate=40/max=16-2 1 %.4f judgments/s %.4f goodput\n", 40+d, g+d)
	}
	return b.String()
}

// -min-goodput holds the candidate to a stated SLO whatever the baseline
// did: the same outputs pass without it and fail with it (exit 1) when
// goodput is below; a candidate above it passes; a candidate without the
// goodput metric cannot be decided (exit 2).
func TestGateMinGoodput(t *testing.T) {
	dir := t.TempDir()
	missed := writeFile(t, dir, "missed.txt", sloOutput(0.80))
	met := writeFile(t, dir, "met.txt", sloOutput(0.99))

	_, _, code := run(t, "gate", "-benchstat=false", missed, missed)
	require.Equal(t, exitPass, code, "no floor: unchanged passes")

	stdout, _, code := run(t, "gate", "-benchstat=false", "-min-goodput", "0.95", missed, missed)
	require.Equal(t, exitFail, code, stdout)
	require.Contains(t, stdout, "goodput: candidate 0.8, below the stated target 0.95")

	stdout, _, code = run(t, "gate", "-benchstat=false", "-min-goodput", "0.95", missed, met)
	require.Equal(t, exitPass, code, stdout)

	plain := writeFile(t, dir, "plain.txt", "Unit judgments/s better=higher\n"+strings.Repeat("BenchmarkJudgments/set=checks/c=16-2 1 40 judgments/s\n", 6))
	_, _, code = run(t, "gate", "-benchstat=false", "-min-goodput", "0.95", plain, plain)
	require.Equal(t, exitNoVerdict, code)

	_, stderr, code := run(t, "gate", "-benchstat=false", "-min-goodput", "1.5", missed, met)
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, "-min-goodput 1.5: want a share from 0 to 1")
}
