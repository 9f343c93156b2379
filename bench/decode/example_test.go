package decode_test

import (
	"context"
	"fmt"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/decode/tokenstest"
	"github.com/vetbench/vetbench/receipts"
)

// One point: 4 requests at once, 32 tokens each, twice after a warm-up;
// every request verified against the server's own count.
func ExampleRunner_Measure() {
	srv := tokenstest.Start(tokenstest.Config{})
	defer srv.Close()
	ctx := context.Background()
	ep := bench.Endpoint{BaseURL: srv.URL, Target: receipts.Target{Kind: receipts.TargetLive}}
	r, err := decode.NewRunner(ctx, ep)
	if err != nil {
		panic(err)
	}
	rec, err := r.Measure(ctx, decode.Point{Workload: "text", Concurrency: 4, OutputTokens: 32, Repeats: 2, Warmup: 1})
	fmt.Println(err, rec.Key(), rec.Summary.TotalVerifiedOutputTokens, "verified tokens,", rec.Summary.Short, "short")
	fmt.Println("cache isolation:", rec.Identity.CacheIsolation, "- Little's law checked:", rec.Runs[0].LittlesLaw != nil)
	// Output:
	// <nil> workload=text/c=4/output=32 256 verified tokens, 0 short
	// cache isolation: unique_prompts - Little's law checked: true
}
