package slo_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/slo"
)

func TestCheck(t *testing.T) {
	rec := func(s *receipts.SLO) *receipts.Receipt {
		return &receipts.Receipt{Throughput: receipts.Throughput{SLO: s}}
	}
	require.NoError(t, slo.Check(nil))
	require.NoError(t, slo.Check(rec(nil)), "no SLO stated")
	require.NoError(t, slo.Check(rec(&receipts.SLO{LatencySeconds: 2, Within: 1, Of: 10, Goodput: 0.1})), "a latency target without a goodput target reports, never fails")
	require.NoError(t, slo.Check(rec(&receipts.SLO{LatencySeconds: 2, Within: 19, Of: 20, Goodput: 0.95, Target: 0.95})), "exactly on target is met")
	err := slo.Check(rec(&receipts.SLO{LatencySeconds: 2, Within: 18, Of: 20, Goodput: 0.9, Target: 0.95}))
	require.ErrorIs(t, err, slo.ErrMissed)
	require.EqualError(t, err, "SLO missed: 18 of 20 judgments (90.0%) within 2s, below the stated goodput 95.0%")
}

// Nothing finished meets no target: an empty window is not a pass.
func TestMetNeedsJudgments(t *testing.T) {
	require.False(t, slo.Met(0, 0.5, 0))
	require.True(t, slo.Met(0.5, 0.5, 2))
	require.False(t, slo.Met(0.49, 0.5, 100))
}
