package speed_test

import (
	"fmt"
	"strings"

	"github.com/vetbench/vetbench/receipts/speed"
)

// Gate a candidate 20% slower than its baseline: read both go test -bench
// outputs, decide, print why.
func ExampleDecide() {
	const baseline = `Unit judgments/s better=higher
BenchmarkJudgments/set=checks-2 1 10.1 judgments/s
BenchmarkJudgments/set=checks-2 1 10.3 judgments/s
BenchmarkJudgments/set=checks-2 1 9.9 judgments/s
BenchmarkJudgments/set=checks-2 1 10.0 judgments/s
BenchmarkJudgments/set=checks-2 1 10.2 judgments/s
BenchmarkJudgments/set=checks-2 1 9.8 judgments/s
`
	const candidate = `Unit judgments/s better=higher
BenchmarkJudgments/set=checks-2 1 8.1 judgments/s
BenchmarkJudgments/set=checks-2 1 8.2 judgments/s
BenchmarkJudgments/set=checks-2 1 7.9 judgments/s
BenchmarkJudgments/set=checks-2 1 8.0 judgments/s
BenchmarkJudgments/set=checks-2 1 7.8 judgments/s
BenchmarkJudgments/set=checks-2 1 8.3 judgments/s
`
	base, err := speed.Load(strings.NewReader(baseline), "baseline.txt")
	if err != nil {
		panic(err)
	}
	cand, err := speed.Load(strings.NewReader(candidate), "candidate.txt")
	if err != nil {
		panic(err)
	}
	rep := speed.Decide(base, cand, speed.DefaultPolicy())
	fmt.Println("failed:", rep.Failed())
	for _, f := range rep.Failures {
		fmt.Println(f)
	}
	// Output:
	// failed: true
	// Judgments/set=checks-2 judgments/s: candidate -19.90% worse (10.05 → 8.05, p=0.002)
}
