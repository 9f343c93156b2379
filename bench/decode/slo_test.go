package decode_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/decode/tokenstest"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/receipts/slo"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// A token run's SLO: on a clock that moves 1 ms per reading every TTFT and
// TPOT is a count of readings, far below an hour and far above a
// microsecond. Generous targets are met (goodput 1, the point passes);
// a TTFT target no request meets misses the stated goodput, and the point
// fails with slo.ErrMissed, its receipt and goodput kept — the positive
// control. No targets: no goodput block.
func TestMeasureTokenSLO(t *testing.T) {
	srv := start(t, tokenstest.Config{GPUBlocks: 1000, BlockSize: 16})
	for _, tc := range []struct {
		slo    config.SLO
		within int
		err    error
	}{
		{config.SLO{TTFT: time.Hour, TPOT: time.Hour, Goodput: 0.95}, 8, nil},
		{config.SLO{TTFT: time.Microsecond, Goodput: 0.95}, 0, slo.ErrMissed},
		{config.SLO{TPOT: time.Microsecond}, 0, nil}, // reported, no target stated
	} {
		t.Run(fmt.Sprintf("ttft=%s/tpot=%s", tc.slo.TTFT, tc.slo.TPOT), func(t *testing.T) {
			r := runner(t, srv, decode.WithClock(newTick().Now))
			p := point(tokens.WorkloadText, 4, 8, 2, 0).WithSLO(tc.slo.TTFT, tc.slo.TPOT, tc.slo.Goodput)
			rec, err := r.Measure(t.Context(), p)
			require.NotNil(t, rec)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
			} else {
				require.NoError(t, err)
			}
			g := rec.Summary.Goodput
			require.NotNil(t, g)
			require.Equal(t, tc.within, g.Within)
			require.Equal(t, 8, g.Of)
			require.NoError(t, rec.Validate(), "Validate recomputes the goodput from the requests")
			var found bool
			for _, m := range decode.Metrics(rec) {
				if m.Unit == "goodput" {
					found = true
					require.InDelta(t, float64(tc.within)/8, m.Value, 1e-12)
				}
			}
			require.True(t, found, "goodput is a metric of the line")
		})
	}
	p := point(tokens.WorkloadText, 4, 8, 1, 0).WithSLO(0, 0, 0)
	require.Nil(t, p.SLO, "a judgment latency target is no token target")
}
