package roofline

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRooflineUtilise: each measured point's share of its own ceiling
// (decode at its batch and context, or the prefill of its prompt), the
// per-step residual the ceiling does not explain, and the flag for a
// point faster than the hardware allows.
func TestRooflineUtilise(t *testing.T) {
	t.Parallel()
	s := shapeOf(t, "qwen3-0.6b.json", Dtypes{})
	h, err := LookupGPU("rtx3090")
	require.NoError(t, err)
	dec, err := s.Decode(8, 1000)
	require.NoError(t, err)
	ceil := h.Ceiling(dec)
	pre, err := s.Prefill(8192)
	require.NoError(t, err)
	pceil := h.Ceiling(pre)

	rep, err := Utilise(s, h, []Observed{
		{Label: "half", Phase: PhaseDecode, Batch: 8, Context: 1000, TokS: ceil.TokS / 2},
		{Label: "cache", Phase: PhaseDecode, Batch: 8, Context: 1000, TokS: ceil.TokS * 1.25},
		{Label: "prefill", Phase: PhasePrefill, Context: 8192, TokS: pceil.TokS * 0.8},
	})
	require.NoError(t, err)
	require.Equal(t, UtilisationSchema, rep.Schema)
	require.Len(t, rep.Points, 3)
	half, cache, prefill := rep.Points[0], rep.Points[1], rep.Points[2]

	require.InDelta(t, 0.5, half.Share, 1e-4)
	require.InDelta(t, ceil.StepSeconds*1e3, half.CeilingStepMS, 1e-4)
	require.InDelta(t, 2*ceil.StepSeconds*1e3, half.MeasuredStepMS, 1e-4, "8 tokens per step at half the rate: twice the step")
	require.InDelta(t, ceil.StepSeconds*1e3, half.ResidualMS, 1e-4, "the other half is unexplained per-step cost")
	require.Equal(t, BandwidthBound, half.Bound, "decode of a small batch is bandwidth bound")
	require.False(t, half.AboveCeiling)

	require.True(t, cache.AboveCeiling, "faster than the GPU allows: a cache was measured")
	require.InDelta(t, 1.25, cache.Share, 1e-4)
	require.Less(t, cache.ResidualMS, 0.0)
	require.Equal(t, 1, rep.AboveCeiling)

	require.Equal(t, ComputeBound, prefill.Bound, "a long prefill is compute bound")
	require.InDelta(t, 0.8, prefill.Share, 1e-4)
	require.InDelta(t, pceil.StepSeconds*1e3*(1/0.8-1), prefill.ResidualMS, 1e-3)

	// Positive control: the same rate at a larger batch is a smaller share
	// (the ceiling grows with the batch).
	big, err := Utilise(s, h, []Observed{{Label: "big", Phase: PhaseDecode, Batch: 64, Context: 1000, TokS: ceil.TokS / 2}})
	require.NoError(t, err)
	require.Less(t, big.Points[0].Share, 0.5)

	for _, bad := range []Observed{
		{Label: "zero", Phase: PhaseDecode, Batch: 1, TokS: 0},
		{Label: "nobatch", Phase: PhaseDecode, Batch: 0, TokS: 10},
		{Label: "phase", Phase: "train", Batch: 1, TokS: 10},
	} {
		_, err := Utilise(s, h, []Observed{bad})
		require.ErrorContains(t, err, bad.Label)
	}
}
