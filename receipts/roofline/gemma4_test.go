package roofline

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRooflineGemma4E2B reads gemma-4-E2B-it (testdata/README.md says
// where its fields come from) and checks it against Google's published
// size: "2.3B effective parameters" (5.1B with the per-layer embeddings
// and the vision and audio towers, which a text count leaves out), and
// the layout by hand.
func TestRooflineGemma4E2B(t *testing.T) {
	t.Parallel()
	s := shapeOf(t, "gemma-4-e2b-it.json", Dtypes{})
	c := s.Config
	require.Equal(t, "gemma4_text", c.ModelType)
	effective := float64(s.Params - s.PerLayerEmbeddingParams)
	require.True(t, within(effective, 2.3e9, 0.02), "effective %d, published 2.3B: off by %.2f%%", s.Params-s.PerLayerEmbeddingParams, 100*(effective/2.3e9-1))
	require.Equal(t, int64(262144*35*256), s.PerLayerEmbeddingParams, "PLE: vocab × layers × 256")

	// Layers 4, 9, …, 34 are full attention with 512-wide heads; 15–34
	// share the KV of layer 13 (sliding) or 14 (full).
	for i, w := range c.Windows {
		if i%5 == 4 {
			require.Zero(t, w, "layer %d", i)
		} else {
			require.Equal(t, 512, w, "layer %d", i)
		}
		require.Equal(t, i >= 15, c.kvShared(i), "layer %d", i)
	}

	// By hand (h 1536, 8 query heads, 1 KV head, head 256 sliding / 512
	// full, MLP 6144, doubled on the 20 shared layers, PLE 256).
	const h, ple = 1536, 256
	slide := func(shared bool) int64 {
		p := int64(2*h*8*256 + 4*h + 256) // q, o, four norms, q_norm
		if !shared {
			p += 2*h*256 + 256 // k, v, k_norm
		}
		return p
	}
	full := func(shared bool) int64 {
		p := int64(2*h*8*512 + 4*h + 512)
		if !shared {
			p += 2*h*512 + 512
		}
		return p
	}
	mlp := func(shared bool) int64 {
		if shared {
			return 3 * h * 12288
		}
		return 3 * h * 6144
	}
	var want int64
	for i := range 35 {
		shared := i >= 15
		if i%5 == 4 {
			want += full(shared)
		} else {
			want += slide(shared)
		}
		want += mlp(shared) + 2*h*ple + h // PLE gate, projection, norm
	}
	want += h + 262144*h + 262144*35*ple + h*35*ple + ple // final norm, embedding, PLE table, model projection, its norm
	require.Equal(t, want, s.Params)

	// KV: only layers 0–14 store; 12 sliding × 2 × 256 × 2 bytes and 3
	// full × 2 × 512 × 2 bytes per token.
	require.Equal(t, int64(12*2*256*2+3*2*512*2), s.KVBytesPerToken)
	require.Equal(t, int64(3*2*512*2), s.GlobalKVBytesPerToken)
	// A decode step reads what all 35 layers attend to: 7 full layers
	// over the whole context, 28 sliding ones over 512 tokens.
	cost, err := s.Decode(2, 8192)
	require.NoError(t, err)
	require.Equal(t, float64(2*(7*8192*2048+28*512*1024)), cost.KVBytes)
}

// TestRooflineGemma4Refusals: what the Gemma 4 reader does not model is
// refused by name, and the Gemma 4 fields stay refused for families that
// do not have them.
func TestRooflineGemma4Refusals(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/gemma-4-e2b-it.json")
	require.NoError(t, err)
	for _, tc := range []struct{ edit, field, msg string }{
		{`"enable_moe_block": false`, "text_config.enable_moe_block", "mixture of experts"},
		{`"num_kv_shared_layers": 20`, "text_config.num_kv_shared_layers", "want fewer than"},
	} {
		repl := map[string]string{
			`"enable_moe_block": false`:  `"enable_moe_block": true`,
			`"num_kv_shared_layers": 20`: `"num_kv_shared_layers": 35`,
		}[tc.edit]
		_, err := ParseConfig([]byte(strings.Replace(string(b), tc.edit, repl, 1)))
		var fe *FieldError
		require.ErrorAs(t, err, &fe, tc.edit)
		require.Equal(t, tc.field, fe.Field)
		require.Contains(t, fe.Msg, tc.msg)
	}
	_, err = ParseConfig([]byte(`{"model_type": "gemma3_text", "global_head_dim": 512}`))
	require.ErrorContains(t, err, "global_head_dim: set, but this architecture feature is not modelled")

	// A mutated field moves the count past the 2% (positive control).
	c, err := ParseConfig([]byte(strings.Replace(string(b), `"use_double_wide_mlp": true`, `"use_double_wide_mlp": false`, 1)))
	require.NoError(t, err)
	s, err := NewShape(c, Dtypes{})
	require.NoError(t, err)
	require.False(t, within(float64(s.Params-s.PerLayerEmbeddingParams), 2.3e9, 0.02), "single-wide MLPs still pass")
}

// TestRooflineGemma4Defaults: a Gemma 4 text config that names nothing
// but its type gets Gemma4TextConfig's defaults: five sliding layers to
// one full, the last forced full, 512-wide global heads, PLE on.
func TestRooflineGemma4Defaults(t *testing.T) {
	t.Parallel()
	c, err := ParseConfig([]byte(`{"model_type": "gemma4_text", "num_hidden_layers": 8}`))
	require.NoError(t, err)
	require.Equal(t, []int{512, 512, 512, 512, 512, 0, 512, 0}, c.Windows)
	require.Equal(t, 512, c.GlobalHeadDim)
	require.Equal(t, 256, c.PerLayerInput)
	require.Equal(t, 2304, c.Hidden)
}

// TestRooflineStepIsDecodeAndPrefill: the general step prices a batch of
// decodes as Decode and a lone prompt as Prefill, and a prompt in two
// chunks as much attention as in one.
func TestRooflineStepIsDecodeAndPrefill(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"gemma-4-e2b-it.json", "llama-3.3-70b-instruct.json", "deepseek-v2-lite.json", "gemma-3-270m-it.json"} {
		s := shapeOf(t, name, Dtypes{})
		d, err := s.Decode(8, 5000)
		require.NoError(t, err)
		parts := make([]Part, 8)
		for i := range parts {
			parts[i] = Part{Context: 5000, Tokens: 1}
		}
		st, err := s.Step(parts)
		require.NoError(t, err)
		for _, pair := range [][2]float64{{d.Bytes, st.Bytes}, {d.FLOPs, st.FLOPs}, {d.KVBytes, st.KVBytes}} {
			require.InEpsilon(t, pair[0], pair[1], 1e-12, name)
		}
		require.Equal(t, d.Tokens, st.Tokens)

		p, err := s.Prefill(9000)
		require.NoError(t, err)
		st, err = s.Step([]Part{{Context: 0, Tokens: 9000}})
		require.NoError(t, err)
		require.InEpsilon(t, p.FLOPs, st.FLOPs, 1e-12, name)
		require.InEpsilon(t, p.Bytes, st.Bytes, 1e-12, name)

		a, err := s.Step([]Part{{Context: 0, Tokens: 4000}})
		require.NoError(t, err)
		b, err := s.Step([]Part{{Context: 4000, Tokens: 5000}})
		require.NoError(t, err)
		require.InEpsilon(t, p.AttentionFLOPs, a.AttentionFLOPs+b.AttentionFLOPs, 1e-12, "%s: chunked attention", name)
	}
	_, err := shapeOf(t, "qwen3-0.6b.json", Dtypes{}).Step(nil)
	require.Error(t, err)
	_, err = shapeOf(t, "qwen3-0.6b.json", Dtypes{}).Step([]Part{{Context: 3, Tokens: 0}})
	require.Error(t, err)
}
