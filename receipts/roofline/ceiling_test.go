package roofline

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExpertsReadFormula: the routed experts a step reads grow with the
// batch as E·(1 − (1 − k/E)^B), k at batch 1, saturating at E; the
// weight bytes read follow, one expert's bytes per expected expert per MoE
// layer.
func TestRooflineExpertsReadFormula(t *testing.T) {
	t.Parallel()
	s := shapeOf(t, "deepseek-v2-lite.json", Dtypes{})
	const e, k, moeLayers = 64.0, 6.0, 26
	expertBytes := float64(3*2048*1408) * 2
	require.Equal(t, moeLayers, s.MoELayers())
	require.Equal(t, expertBytes, s.ExpertBytes)
	prev := 0.0
	for _, b := range []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 1024} {
		want := e * (1 - math.Pow(1-k/e, float64(b)))
		got := s.ExpertsRead(b)
		require.InDelta(t, want, got, 1e-9, "batch %d", b)
		require.Greater(t, got, prev, "batch %d: experts read must grow", b)
		require.LessOrEqual(t, got, e)
		cost, err := s.Decode(b, 1024)
		require.NoError(t, err)
		require.InDelta(t, want, cost.ExpertsRead, 1e-9)
		require.InDelta(t, s.StreamBytes+moeLayers*want*expertBytes, cost.WeightBytes, 1)
		prev = got
	}
	require.Equal(t, k, s.ExpertsRead(1), "one token reads exactly its k experts")
	require.InDelta(t, e, s.ExpertsRead(1024), 1e-9, "a large batch reads every expert")
	// Saturated, the step reads all weights but the input embedding.
	full, err := s.Decode(4096, 0)
	require.NoError(t, err)
	require.InDelta(t, s.WeightBytes-float64(s.EmbeddingParams)*2, full.WeightBytes, 1)

	// A dense model has no experts to count.
	d := shapeOf(t, "llama-3.3-70b-instruct.json", Dtypes{})
	require.Zero(t, d.ExpertsRead(64))

	// The report carries experts_read for MoE only.
	h, err := LookupGPU("h100-sxm")
	require.NoError(t, err)
	moe, err := Analyse(s, h, []int{1, 64}, 1024)
	require.NoError(t, err)
	require.InDelta(t, k, *moe.Points[0].ExpertsRead, 5e-4) // the report rounds to 3 decimals
	require.InDelta(t, s.ExpertsRead(64), *moe.Points[1].ExpertsRead, 5e-4)
	dense, err := Analyse(d, h, []int{1}, 1024)
	require.NoError(t, err)
	b, err := json.Marshal(dense.Points[0])
	require.NoError(t, err)
	require.NotContains(t, string(b), "experts_read")
}

// TestMeasuredPeaksWin: a measured figure replaces the spec value, the
// report says which was used, and the ceilings follow the measured value.
func TestRooflineMeasuredPeaksWin(t *testing.T) {
	t.Parallel()
	spec, err := LookupGPU("H100-SXM")
	require.NoError(t, err)
	require.Equal(t, Peak{3.35e12, Spec}, spec.Bandwidth)
	require.Equal(t, Peak{989e12, Spec}, spec.FLOPs)

	bwOnly := spec.WithMeasured(2.9e12, 0)
	require.Equal(t, Peak{2.9e12, Measured}, bwOnly.Bandwidth)
	require.Equal(t, Peak{989e12, Spec}, bwOnly.FLOPs, "an unmeasured peak keeps its spec value")
	both := spec.WithMeasured(2.9e12, 700e12)
	require.Equal(t, Measured, both.FLOPs.Source)
	require.InDelta(t, 700e12/2.9e12, both.Ridge(), 1e-9)

	s := shapeOf(t, "llama-3.3-70b-instruct.json", Dtypes{})
	cost, err := s.Decode(1, 4096)
	require.NoError(t, err)
	a, b := spec.Ceiling(cost), bwOnly.Ceiling(cost)
	require.Equal(t, BandwidthBound, a.Bound)
	require.InDelta(t, a.TokS*2.9/3.35, b.TokS, 1e-9)

	rep, err := Analyse(s, bwOnly, []int{1}, 4096)
	require.NoError(t, err)
	require.Equal(t, Measured, rep.GPU.BandwidthSource)
	require.Equal(t, Spec, rep.GPU.FLOPsSource)
	require.Equal(t, 2.9e12, rep.GPU.BandwidthBytesPerS)

	c, err := Custom("lab", 1e12, 50e12)
	require.NoError(t, err)
	require.Equal(t, Measured, c.Bandwidth.Source)
	_, err = Custom("lab", 0, 50e12)
	require.Error(t, err)
	_, err = LookupGPU("a100")
	require.ErrorContains(t, err, `unknown gpu "a100" (known: h100-sxm, h200-sxm, h200-nvl, rtx3090`)
}

// TestBoundFlipsWhereTheArithmeticSays: a dense decode step does
// B·f FLOPs over S + B·k bytes (S weights streamed once, f FLOPs and k KV
// bytes per sequence), so it turns compute bound past
// B* = R·S / (f − R·k), R the ridge. Worked by hand for Llama 3.3 70B at
// 128 tokens of context on an H100's spec peaks (B* ≈ 323).
func TestRooflineBoundFlipsWhereTheArithmeticSays(t *testing.T) {
	t.Parallel()
	s := shapeOf(t, "llama-3.3-70b-instruct.json", Dtypes{})
	h, err := LookupGPU("h100-sxm")
	require.NoError(t, err)
	const ctx = 128
	params := float64(s.Params)
	embed := float64(128256 * 8192)
	stream := 2 * (params - embed)                       // bf16, untied: all but the input embedding
	f := 2*(params-embed) + ctx*4*64*128*80              // matmuls + QKᵀ/PV over 64 heads × 128 in 80 layers
	k := float64(ctx * 2 * 80 * 8 * 128 * 2)             // KV per sequence
	r := 989e12 / 3.35e12                                // ridge
	bStar := r * stream / (f - r*k)                      // batch where intensity = ridge
	require.InDelta(t, 323, bStar, 1, "hand arithmetic") // sanity of the hand figures
	below, above := int(math.Floor(bStar)), int(math.Ceil(bStar))
	for _, c := range []struct {
		batch int
		bound Bound
	}{{1, BandwidthBound}, {below, BandwidthBound}, {above, ComputeBound}, {4096, ComputeBound}} {
		cost, err := s.Decode(c.batch, ctx)
		require.NoError(t, err)
		ce := h.Ceiling(cost)
		require.Equal(t, c.bound, ce.Bound, "batch %d: intensity %.1f, ridge %.1f", c.batch, cost.Intensity(), h.Ridge())
		require.Equal(t, cost.Intensity() > h.Ridge(), ce.Bound == ComputeBound, "bound agrees with intensity vs ridge")
		require.InDelta(t, float64(c.batch)*f, cost.FLOPs, 1e-6*cost.FLOPs)
		require.InDelta(t, stream+float64(c.batch)*k, cost.Bytes, 1)
	}

	// At 8192 tokens of context the KV read grows with the batch as fast
	// as the FLOPs: GQA decode never reaches the ridge (intensity tends to
	// f/k ≈ 60 FLOP/byte).
	cost, err := s.Decode(1<<16, 8192)
	require.NoError(t, err)
	require.Equal(t, BandwidthBound, h.Ceiling(cost).Bound)

	// A long prefill is compute bound.
	pre, err := s.Prefill(8192)
	require.NoError(t, err)
	require.Equal(t, ComputeBound, h.Ceiling(pre).Bound)
	require.Greater(t, pre.Intensity(), h.Ridge())
}

// TestCausalPairs counts (query, key) pairs of causal attention.
func TestRooflineCausalPairs(t *testing.T) {
	t.Parallel()
	require.Equal(t, 10.0, causalPairs(4, 0)) // 1+2+3+4
	require.Equal(t, 10.0, causalPairs(4, 8)) // window wider than the prompt
	require.Equal(t, 1+2+3+3+3.0, causalPairs(5, 3))
}

// TestAssess reads measured rates against their ceiling: share, the step
// time the ceiling does not explain, and a flag for runs faster than the
// hardware allows.
func TestRooflineAssess(t *testing.T) {
	t.Parallel()
	c := Ceiling{StepCost: StepCost{Tokens: 8}, StepSeconds: 0.004, TokS: 2000}
	u := c.Assess(1000)
	require.InDelta(t, 0.5, u.Share, 1e-12)
	require.InDelta(t, 0.008, u.MeasuredStepSeconds, 1e-12)
	require.InDelta(t, 0.004, u.ResidualSeconds, 1e-12)
	require.False(t, u.AboveCeiling)
	over := c.Assess(2500)
	require.True(t, over.AboveCeiling)
	require.Less(t, over.ResidualSeconds, 0.0)
	require.Zero(t, c.Assess(0).Share)
}

// TestDecodeRejectsBadShapes: a step needs a sequence and a context ≥ 0.
func TestRooflineDecodeRejectsBadShapes(t *testing.T) {
	t.Parallel()
	s := shapeOf(t, "qwen3-0.6b.json", Dtypes{})
	_, err := s.Decode(0, 10)
	require.ErrorContains(t, err, "batch 0")
	_, err = s.Decode(1, -1)
	require.ErrorContains(t, err, "context -1")
	_, err = s.Prefill(0)
	require.Error(t, err)
	h, _ := LookupGPU("rtx3090")
	_, err = Analyse(s, h, nil, 10)
	require.Error(t, err)
}

// ExampleAnalyse prints the decode ceiling of DeepSeek-V2-Lite on an H200
// NVL's published peaks: a batch of 64 reads nearly every expert.
func ExampleAnalyse() {
	c, err := ReadConfig("testdata/deepseek-v2-lite.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	s, _ := NewShape(c, Dtypes{})
	h, _ := LookupGPU("h200-nvl")
	r, _ := Analyse(s, h, []int{1, 64}, 8192)
	for _, p := range r.Points {
		fmt.Printf("batch %d: %.1f of %d experts per layer, %.2f GB per step, ceiling %.0f tok/s (%s)\n",
			p.Batch, *p.ExpertsRead, r.MoE.Experts, p.BytesPerStep/1e9, p.CeilingTokS, p.Bound)
	}
	// Output:
	// batch 1: 6.0 of 64 experts per layer, 5.16 GB per step, ceiling 931 tok/s (bandwidth)
	// batch 64: 63.9 of 64 experts per layer, 47.25 GB per step, ceiling 6502 tok/s (bandwidth)
}
