package roofline

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRooflineDeepSeekV4Flash counts DeepSeek-V4-Flash from its config
// against what DeepSeek publishes (284B total, 13B activated; a 160 GB
// checkpoint that also holds the one MTP layer, not counted here) and its
// KV by hand: fp8 in vLLM's layout (a 512-value row is 584 bytes: 448
// fp8 NoPE values, 64 bf16 rotary ones, 7 scale bytes and a pad; a
// 128-value index key 132: fp8 and one fp32 scale), 21 CSA layers store a
// row and an index key per 4 tokens, 20 HCA layers a row per 128 tokens,
// and every one of the 43 layers keeps its last 128 raw rows.
func TestRooflineDeepSeekV4Flash(t *testing.T) {
	t.Parallel()
	s := shapeOf(t, "deepseek-v4-flash.json", Dtypes{KV: FP8})
	require.Equal(t, Dtypes{Weights: FP8, Experts: MXFP4, KV: FP8}, s.Dtypes, "the dtypes the config states")
	require.True(t, within(float64(s.Params), 284e9, 0.02), "params %d, published 284B", s.Params)
	require.True(t, within(float64(s.ActiveParams), 13e9, 0.03), "active %d, published 13B", s.ActiveParams)
	require.True(t, within(s.WeightBytes, 160e9, 0.05), "weights %.4g bytes, checkpoint 160 GB", s.WeightBytes)
	require.Less(t, s.WeightBytes, 160e9, "the checkpoint also holds the MTP layer")
	require.Equal(t, "csa+hca", s.Attention())
	const row, key = 448 + 2*64 + 7 + 1, 128 + 4
	require.Equal(t, int64(21*(row+key)/4+20*5), s.GlobalKVBytesPerToken, "per layer rounded: 584/128 is 5")
	require.Equal(t, 128, s.SlidingWindow())
	window := 43.0 * 128 * row
	require.InDelta(t, window+8192*(21*(row+key)/4.0+20*row/128.0), s.KVBytes(8192), 1e-6)
	require.InDelta(t, 64*(43*row+21*(row+key)/4.0+20*row/128.0), s.KVBytes(64), 1e-6, "inside the window every row is held")

	// A decode step at 64K reads the window, every index key of a CSA
	// layer, its 512 best rows (not all 16K) and every HCA row.
	c, err := s.Decode(1, 65536)
	require.NoError(t, err)
	want := window + 21*(65536/4*key+512*row) + 20*(65536/128*row)
	require.InDelta(t, want, c.KVBytes, 1e-6)
}

// TestRooflineDeepSeekV4Refusals: a V4 config missing what its attention
// needs, or stating fewer ratios than layers, is refused by field.
func TestRooflineDeepSeekV4Refusals(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/deepseek-v4-flash.json")
	require.NoError(t, err)
	for _, c := range []struct{ from, to, field string }{
		{`"index_topk": 512,`, ``, "index_topk"},
		{`"num_hidden_layers": 43,`, `"num_hidden_layers": 47,`, "compress_ratios"},
		{`"o_groups": 8,`, `"o_groups": 7,`, "o_groups"},
		{`"expert_dtype": "fp4",`, `"expert_dtype": "int3",`, "expert_dtype"},
	} {
		_, err := ParseConfig([]byte(strings.Replace(string(b), c.from, c.to, 1)))
		var fe *FieldError
		require.ErrorAs(t, err, &fe, c.field)
		require.Equal(t, c.field, fe.Field)
	}
}

// TestRooflineTensorParallelByHand splits Llama 3.3 70B (64 query, 8 KV
// heads, 80 layers) over 4 GPUs: each reads a quarter of the sharded
// weights and all the norms, a quarter of the KV; at 16 GPUs each holds
// one of the 8 KV heads (replicated in pairs), an eighth of the KV; a
// step all-reduces twice per layer and once for the embedding, and
// gathers the logits.
func TestRooflineTensorParallelByHand(t *testing.T) {
	t.Parallel()
	s := shapeOf(t, "llama-3.3-70b-instruct.json", Dtypes{})
	h, err := LookupGPU("h100-sxm")
	require.NoError(t, err)
	one, err := s.Decode(8, 4096)
	require.NoError(t, err)
	norms := float64(80*2*8192+8192) * 2
	for _, tc := range []struct {
		tp      int
		kvShare float64
	}{{4, 1.0 / 4}, {16, 1.0 / 8}} {
		d := Deployment{Shape: s, GPU: h, TP: tc.tp}
		if tc.tp == 16 {
			d.TP = 16 // 64 heads divide by 16
		}
		c, err := d.Decode(8, 4096)
		require.NoError(t, err)
		require.InDelta(t, (one.WeightBytes-norms)/float64(tc.tp)+norms, c.PerGPU.WeightBytes, 1)
		require.InDelta(t, one.KVBytes*tc.kvShare, c.PerGPU.KVBytes, 1)
		require.Equal(t, 2*80+2, c.Collectives)
		n := float64(tc.tp)
		msg := 8 * 8192 * 2.0
		wantComm := 161*2*(n-1)/n*msg + (n-1)/n*8*128256*2
		require.InDelta(t, wantComm, c.CommBytes, 1e-6)
		ce := d.Ceiling(c)
		require.InDelta(t, 162*5e-6+wantComm/450e9, ce.CommSeconds, 1e-12)
		require.InDelta(t, 8/ce.StepSeconds, ce.TokS, 1e-9)
	}
	_, err = Deployment{Shape: s, GPU: h, TP: 3}.Decode(1, 0)
	require.ErrorContains(t, err, "does not divide the 64 attention heads")
	custom, err := Custom("bare", 1e12, 1e14)
	require.NoError(t, err)
	_, err = Deployment{Shape: s, GPU: custom, TP: 2}.Decode(1, 0)
	require.ErrorContains(t, err, "no interconnect bandwidth")
}

// TestRooflineOneGPUDeploymentIsTheShape: a deployment of one GPU without
// speculation prices exactly what Shape.Decode and Hardware.Ceiling do
// (the positive control of the split arithmetic: tp = 1 divides nothing).
func TestRooflineOneGPUDeploymentIsTheShape(t *testing.T) {
	t.Parallel()
	for _, cfg := range []string{"deepseek-v2-lite.json", "gemma-3-270m-it.json", "deepseek-v4-flash.json"} {
		s := shapeOf(t, cfg, Dtypes{})
		h, err := LookupGPU("h200-sxm")
		require.NoError(t, err)
		d := Deployment{Shape: s, GPU: h}
		for _, b := range []int{1, 64} {
			plain, err := s.Decode(b, 9000)
			require.NoError(t, err)
			c, err := d.Decode(b, 9000)
			require.NoError(t, err)
			require.Equal(t, plain, c.PerGPU, cfg)
			require.Equal(t, plain, c.Total(), cfg)
			require.Zero(t, c.Collectives)
			require.InDelta(t, h.Ceiling(plain).TokS, d.Ceiling(c).TokS, 1e-9, cfg)
		}
	}
}

// TestRooflineSpeculative: tokens per verified step follow the geometric
// series; a verify step computes k + 1 tokens per sequence with logits for
// each and yields the expected ones; acceptance 0 costs more than plain
// decoding and yields the same, so its ceiling is lower (the control).
func TestRooflineSpeculative(t *testing.T) {
	t.Parallel()
	require.InDelta(t, 1.0, Speculative{Tokens: 3}.TokensPerStep(), 1e-12)
	require.InDelta(t, 4.0, Speculative{Tokens: 3, Acceptance: 1}.TokensPerStep(), 1e-12)
	require.InDelta(t, 1+0.5+0.25+0.125, Speculative{Tokens: 3, Acceptance: 0.5}.TokensPerStep(), 1e-12)

	s := shapeOf(t, "deepseek-v4-flash.json", Dtypes{KV: FP8})
	h, err := LookupGPU("h200-sxm")
	require.NoError(t, err)
	plain := Deployment{Shape: s, GPU: h, TP: 4}
	p, err := plain.Decode(4, 8192)
	require.NoError(t, err)
	spec := plain
	spec.Spec = &Speculative{Tokens: 3, Acceptance: 0.5}
	c, err := spec.Decode(4, 8192)
	require.NoError(t, err)
	require.Equal(t, 16, c.PerGPU.Tokens)
	require.InDelta(t, 4*1.875, c.Yield, 1e-12)
	// At batch 4 the 16 verified tokens route to ~3× the experts of 4: at
	// 0.5 acceptance speculation loses; at batch 1 and 0.7 it wins.
	require.Less(t, spec.Ceiling(c).TokS, plain.Ceiling(p).TokS)
	require.InDelta(t, 4*p.PerGPU.WeightFLOPs, c.PerGPU.WeightFLOPs, 1e-3*p.PerGPU.WeightFLOPs, "k+1 tokens each, logits for all")
	require.Greater(t, c.Draft.Bytes, 0.0)
	require.Equal(t, p.Collectives+3*(2*1+2), c.Collectives, "three draft passes of one layer")
	p1, err := plain.Decode(1, 8192)
	require.NoError(t, err)
	spec.Spec = &Speculative{Tokens: 3, Acceptance: 0.7}
	c1, err := spec.Decode(1, 8192)
	require.NoError(t, err)
	require.Greater(t, spec.Ceiling(c1).TokS, 1.3*plain.Ceiling(p1).TokS)

	spec.Spec = &Speculative{Tokens: 3, Acceptance: 0}
	z, err := spec.Decode(4, 8192)
	require.NoError(t, err)
	require.InDelta(t, 4.0, z.Yield, 1e-12)
	require.Less(t, spec.Ceiling(z).TokS, plain.Ceiling(p).TokS, "drafts that are never accepted only cost")

	for _, bad := range []Speculative{{Tokens: 0, Acceptance: 0.5}, {Tokens: 2, Acceptance: 1.5}, {Tokens: 2, Acceptance: math.NaN()}} {
		spec.Spec = &bad
		_, err := spec.Decode(1, 0)
		require.Error(t, err, "%+v", bad)
	}
}

// TestRooflineKVPlan sizes KV as vLLM does: a model of one layer kind
// pays every layer per token; Gemma 3 270M (3 full-attention, 15
// sliding-window layers of one head width) under the hybrid manager pays
// one group of 3 layers; without it, all 18; DeepSeek-V4 its compressed
// rows. Bad layouts are refused.
func TestRooflineKVPlan(t *testing.T) {
	t.Parallel()
	h, err := LookupGPU("h100-sxm")
	require.NoError(t, err)
	l := KVLayout{BlockSize: 16, Utilization: 0.9, MaxNumBatchedTokens: 8192, MaxNumSeqs: 256}
	llama := shapeOf(t, "qwen3-0.6b.json", Dtypes{})
	p, err := llama.KVPlan(h, l)
	require.NoError(t, err)
	require.Equal(t, float64(llama.KVBytesPerToken), p.BytesPerToken)
	require.InDelta(t, 80*(1<<30)*0.9-llama.WeightBytes-p.ActivationBytes, p.AvailableBytes, 1)
	require.Equal(t, int(p.AvailableBytes/p.BytesPerToken/16), p.NumBlocks)
	require.Equal(t, p.NumBlocks*16, p.Tokens)

	g := shapeOf(t, "gemma-3-270m-it.json", Dtypes{})
	hy, err := g.KVPlan(h, l)
	require.NoError(t, err)
	perLayer := float64(g.KVBytesPerToken) / 18
	require.InDelta(t, 3*perLayer, hy.BytesPerToken, 1e-9, hy.Basis)
	l.NoHybrid = true
	off, err := g.KVPlan(h, l)
	require.NoError(t, err)
	require.InDelta(t, 18*perLayer, off.BytesPerToken, 1e-9)
	require.InDelta(t, 6, float64(hy.NumBlocks)/float64(off.NumBlocks), 0.01)

	v4 := shapeOf(t, "deepseek-v4-flash.json", Dtypes{KV: FP8})
	c, err := v4.KVPlan(h, KVLayout{BlockSize: 256, Utilization: 0.9, TP: 4})
	require.NoError(t, err)
	require.InDelta(t, 21*(584+132)/4.0+20*584/128.0, c.BytesPerToken, 1e-9, "the compressed rows, unrounded")

	for _, bad := range []KVLayout{{BlockSize: 0, Utilization: 0.9}, {BlockSize: 16, Utilization: 1.5}} {
		_, err := llama.KVPlan(h, bad)
		require.Error(t, err)
	}
	_, err = v4.KVPlan(h, KVLayout{BlockSize: 16, Utilization: 0.9}) // 155 GB on one 80 GiB card
	require.ErrorContains(t, err, "leave no KV memory")
}
