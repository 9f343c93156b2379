package speed_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/speed"
)

// failedItemsOutput is ten runs of one point with n failed items each,
// ending as go test ends it: end is "PASS" or "FAIL".
func failedItemsOutput(n int, end string) string {
	var b strings.Builder
	b.WriteString("Unit failed-items better=lower assume=exact\nUnit judgments/s better=higher\npkg: github.com/vetbench/vetbench/bench\n")
	for i := range 10 {
		fmt.Fprintf(&b, "BenchmarkJudgments/set=checks/c=1-2 1 %d failed-items %d judgments/s\n", n, 100+i)
	}
	return b.String() + end + "\n"
}

// An output that ends FAIL is a run with a point that did not pass, read
// from a file as gate -run reads it measured (Report.AddRuns): a baseline
// leaves no verdict, a candidate fails whatever its figures. Equal failed
// items on both sides passed (exit 0), where gate -run of the same runs
// said 2.
func TestOutputThatEndsFailIsAFailedRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		base, cand string
		outcome    speed.Outcome
		line       string
	}{
		{"both failed alike", failedItemsOutput(2, "FAIL"), failedItemsOutput(2, "FAIL"), speed.NoVerdict, "baseline: the output ends FAIL"},
		{"the baseline failed", failedItemsOutput(2, "FAIL"), failedItemsOutput(0, "PASS"), speed.NoVerdict, "baseline: the output ends FAIL"},
		{"the candidate failed", failedItemsOutput(0, "PASS"), failedItemsOutput(0, "FAIL"), speed.Slower, "candidate: the output ends FAIL"},
		{"go test's FAIL line", failedItemsOutput(0, "PASS"), failedItemsOutput(0, "FAIL\tgithub.com/vetbench/vetbench/bench\t3.1s"), speed.Slower, "candidate: the output ends FAIL"},
		{"both passed", failedItemsOutput(0, "PASS"), failedItemsOutput(0, "ok  \tgithub.com/vetbench/vetbench/bench\t60.1s"), speed.Pass, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rep := speed.Decide(loadText(t, c.base), loadText(t, c.cand), speed.DefaultPolicy())
			require.Equal(t, c.outcome, rep.Outcome(), "%v %v", rep.Failures, rep.Problems)
			if c.line != "" {
				require.Contains(t, strings.Join(append(rep.Problems, rep.Failures...), "\n"), c.line)
			}
		})
	}
}
