package grid

import (
	"time"

	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// Serve is a cell's figures as `vllm bench serve` computes them
// (tokens.ServeFigures, the one implementation), over the cell's requests
// that completed: every stream of the cell (warm-up included, as the
// cell's own TTFT pools them) that ended cleanly by the window's end.
// Streams still running when the window closes are cut by the cell, not
// by the server: vLLM's client never records a cut request, and its
// E2EL and TPOT would be of a truncated request, so they do not count.
// The duration is the counted requests' span, first send to last end,
// as vLLM's benchmark_duration is. Nil when no request completed (a
// window shorter than one stream).
func Serve(results []*stream.Result, end time.Time, outputTokens int) *tokens.Serve {
	var done []*stream.Result
	var first, last time.Time
	for _, res := range results {
		if !res.Done || res.Err != nil || res.End.After(end) {
			continue
		}
		done = append(done, res)
		if first.IsZero() || res.Sent.Before(first) {
			first = res.Sent
		}
		if res.End.After(last) {
			last = res.End
		}
	}
	if len(done) == 0 {
		return nil
	}
	run := tokens.Run{WallSeconds: last.Sub(first).Seconds(), Requests: decode.Requests(done, outputTokens, first)}
	return tokens.ServeFigures(tokens.Point{OutputTokens: outputTokens}, []tokens.Run{run})
}
