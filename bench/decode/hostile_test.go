package decode_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/decode/tokenstest"
	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// A server whose streams never go quiet and never end (issue 24, item 4)
// fails the point, every request with its class in the receipt: the
// stream's own bounds stop each (bench/stream's hostile tests prove them
// on fake time, with positive controls); here the point records them.
// The stall timeout (1 min) never fires; the deadline is 200 ms + 8 × 10 ms.
func TestHostileStreamsFailThePointWithTheirClass(t *testing.T) {
	t.Parallel()
	for mode, class := range map[string]string{"endless": "long", "ping": "deadline", "flood": "long"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv := start(t, tokenstest.Config{TokenDelay: time.Millisecond, Hostile: func(tokenstest.Request) string { return mode }})
			r := runner(t, srv, decode.WithStallTimeout(time.Minute),
				decode.WithBudget(stream.Budget{TTFT: 200 * time.Millisecond, TPOT: 10 * time.Millisecond}))
			rec, err := r.Measure(t.Context(), point(tokens.WorkloadText, 2, 8, 1, 0))
			require.ErrorIs(t, err, decode.ErrStopped, "every request failed")
			require.NotNil(t, rec)
			require.Len(t, rec.Runs, 1)
			for _, q := range rec.Runs[0].Requests {
				require.Equal(t, class, q.ErrorClass, q.Error)
			}
			require.Equal(t, 2, rec.Failures())
		})
	}
}

// A repeat's prompts are built before its clock starts, so a batch too
// large to hold (-num-prompts 100000000 died out of memory) is refused
// before anything is built or sent, naming the flags; a large batch that
// fits is measured (the control).
func TestBatchTooLargeToHoldIsRefused(t *testing.T) {
	t.Parallel()
	for _, w := range []string{tokens.WorkloadText, tokens.WorkloadOneImage} {
		b, err := decode.BatchBytes(w, 100_000_000, 128)
		require.NoError(t, err)
		require.Greater(t, b, int64(decode.MaxBatchBytes), w)
	}
	srv := start(t, tokenstest.Config{TokenDelay: time.Millisecond})
	r := runner(t, srv)
	p := point(tokens.WorkloadText, 4, 2, 1, 0)
	p.NumPrompts = 100_000_000
	_, err := r.Measure(t.Context(), p)
	require.ErrorContains(t, err, "100000000 text requests a repeat hold about")
	require.ErrorContains(t, err, "send fewer (-num-prompts, -levels)")
	require.Empty(t, srv.Requests(), "nothing was sent")

	p.NumPrompts = 64
	rec, err := r.Measure(t.Context(), p)
	require.NoError(t, err)
	require.Len(t, rec.Runs[0].Requests, 64)
}
