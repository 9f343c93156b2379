package answers_test

import (
	"fmt"

	"github.com/vetbench/vetbench/receipts/answers"
	"github.com/vetbench/vetbench/receipts/typevet"
)

// Compare typevet's signatures run at c=16 with the same launch at c=32:
// batching moved three verdicts, each a near tie in the baseline, so the
// default policy passes and the strict one fails.
func ExampleCompare() {
	base, err := typevet.ReadFile("../typevet/testdata/signature_match_vllm_throughput_full_c16.json")
	if err != nil {
		panic(err)
	}
	cand, err := typevet.ReadFile("../typevet/testdata/signature_match_vllm_throughput_full_c32.json")
	if err != nil {
		panic(err)
	}
	rep, err := answers.Compare(base, cand, answers.DefaultPolicy())
	if err != nil {
		panic(err) // receipts.ErrIdentityMismatch: not the same experiment
	}
	fmt.Printf("items %d, moved %d (%d near-tie), passed %v\n",
		rep.ItemsCompared, rep.VerdictsMoved.Total(), rep.VerdictsMoved.NearTie, rep.Passed)

	strict, err := answers.Compare(base, cand, answers.StrictPolicy())
	if err != nil {
		panic(err)
	}
	fmt.Printf("strict: passed %v, %d failures\n", strict.Passed, len(strict.Failures()))
	// Output:
	// items 180, moved 3 (3 near-tie), passed true
	// strict: passed false, 3 failures
}
