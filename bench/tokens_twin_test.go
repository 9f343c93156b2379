package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/grid"
	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/bench/sweep/target"
	"github.com/vetbench/vetbench/receipts/matrix"
	"github.com/vetbench/vetbench/receipts/tokens"
	"github.com/vetbench/vetbench/stub"
)

// twinStreams starts the in-process twin and skips the test when it does
// not stream yet (it answers stream=true with a 400).
func twinStreams(t *testing.T) *target.Target {
	t.Helper()
	tg, err := target.InProcess(stub.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tg.Close() })
	res := stream.New(tg.Endpoint.BaseURL).Do(t.Context(), stream.Text("hello", 2), nil)
	if res.Err != nil && strings.Contains(res.Err.Error(), "does not stream") {
		t.Skip("the twin does not stream yet")
	}
	require.NoError(t, res.Err)
	return tg
}

// End to end on the embedded twin, kept short: a token point verified,
// and a tiny matrix whose cells all measured.
func TestTokensOnTheTwin(t *testing.T) {
	tg := twinStreams(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	r, err := decode.NewRunner(ctx, tg.Endpoint)
	require.NoError(t, err)
	for _, w := range []string{tokens.WorkloadText, tokens.WorkloadOneImage} {
		rec, err := r.Measure(ctx, decode.Point{Workload: w, Concurrency: 4, OutputTokens: 16, Repeats: 1, Warmup: 1})
		require.NoError(t, err, w)
		require.Equal(t, 4*16, rec.Summary.TotalVerifiedOutputTokens, w)
		_, err = tokens.Marshal(rec)
		require.NoError(t, err)
	}

	mr, err := grid.NewRunner(ctx, tg.Endpoint)
	require.NoError(t, err)
	m, err := mr.Run(ctx, grid.Options{Contexts: []int{1024}, Levels: []int{1, 2}, Duration: 500 * time.Millisecond,
		OutputTokens: 256, LoopDetection: true, ScrapeInterval: 50 * time.Millisecond, Hold: 100 * time.Millisecond,
		Pause: -1, ReadyTimeout: 30 * time.Second})
	require.NoError(t, err)
	for _, c := range m.Cells {
		require.NotEqual(t, matrix.Failed, c.Status, "%s c=%d: %s", c.Context, c.Concurrency, c.Reason)
		require.NotEqual(t, matrix.Looped, c.Status, "%s c=%d: %s", c.Context, c.Concurrency, c.Reason)
	}
	_, err = matrix.Marshal(m)
	require.NoError(t, err)
}
