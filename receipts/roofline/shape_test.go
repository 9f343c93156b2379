package roofline

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func shapeOf(t *testing.T, name string, d Dtypes) *Shape {
	t.Helper()
	c, err := ReadConfig(filepath.Join("testdata", name))
	require.NoError(t, err)
	s, err := NewShape(c, d)
	require.NoError(t, err)
	return s
}

// within says whether got is within tol (a fraction) of want.
func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

// TestPublishedParams checks the parameter count of every shipped config
// against the size its publisher states, within 2%. The figures and their
// sources are in testdata/README.md.
func TestRooflinePublishedParams(t *testing.T) {
	t.Parallel()
	cases := []struct {
		config    string
		published float64
		source    string
	}{
		// Meta, Llama 3.3 model card: "Llama 3.3 ... 70B".
		{"llama-3.3-70b-instruct.json", 70e9, "meta-llama/Llama-3.3-70B-Instruct model card: 70B"},
		// Qwen, Qwen3-8B model card: "Number of Parameters: 8.2B".
		{"qwen3-8b.json", 8.2e9, "Qwen/Qwen3-8B model card: 8.2B"},
		// DeepSeek-V4-Flash model card: 284B total, 13B activated.
		{"deepseek-v4-flash.json", 284e9, "deepseek-ai/DeepSeek-V4-Flash model card: 284B"},
		// Qwen, Qwen3-0.6B model card: "Number of Parameters: 0.6B".
		{"qwen3-0.6b.json", 0.6e9, "Qwen/Qwen3-0.6B model card: 0.6B"},
		// Google, Gemma 3 270M announcement: 170M embedding + 100M transformer.
		{"gemma-3-270m-it.json", 270e6, "Gemma 3 270M announcement: 270M"},
		// DeepSeek-V2 paper / DeepSeek-V2-Lite model card: 15.7B total.
		{"deepseek-v2-lite.json", 15.7e9, "deepseek-ai/DeepSeek-V2-Lite model card: 15.7B total, 2.4B activated"},
		// Z.ai, GLM-4.7-Flash model card: "a 30B-A3B MoE model".
		{"glm-4.7-flash.json", 30e9, "zai-org/GLM-4.7-Flash model card: 30B-A3B"},
		// Qwen, Qwen3-VL-235B-A22B (text model = Qwen3-235B-A22B: 235B total, 22B activated).
		{"qwen3-vl-235b-a22b-thinking.json", 235e9, "Qwen3-235B-A22B model card: 235B in total"},
	}
	for _, c := range cases {
		t.Run(c.config, func(t *testing.T) {
			t.Parallel()
			s := shapeOf(t, c.config, Dtypes{})
			got := float64(s.Params)
			require.True(t, within(got, c.published, 0.02), "%s: %d params, published %.4g (%s): off by %.2f%%",
				c.config, s.Params, c.published, c.source, 100*(got/c.published-1))
		})
	}

	// The parts of a size some publishers state.
	q := shapeOf(t, "qwen3-0.6b.json", Dtypes{})
	require.True(t, within(float64(q.Params-q.EmbeddingParams), 0.44e9, 0.02), "Qwen3-0.6B non-embedding %d, card 0.44B", q.Params-q.EmbeddingParams)
	g := shapeOf(t, "gemma-3-270m-it.json", Dtypes{})
	require.True(t, within(float64(g.EmbeddingParams), 170e6, 0.02), "Gemma 3 270M embedding %d, published 170M", g.EmbeddingParams)
	require.True(t, within(float64(g.Params-g.EmbeddingParams), 100e6, 0.02), "Gemma 3 270M transformer %d, published 100M", g.Params-g.EmbeddingParams)
}

// TestPublishedParamsCatchAWrongField is the positive control: a config
// that misstates one field (half the MLP width) moves the count far past
// the 2% the test above allows.
func TestRooflinePublishedParamsCatchAWrongField(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/llama-3.3-70b-instruct.json")
	require.NoError(t, err)
	c, err := ParseConfig([]byte(strings.Replace(string(b), `"intermediate_size": 28672`, `"intermediate_size": 14336`, 1)))
	require.NoError(t, err)
	s, err := NewShape(c, Dtypes{})
	require.NoError(t, err)
	require.False(t, within(float64(s.Params), 70e9, 0.02), "mutated config: %d params still within 2%% of 70B", s.Params)
}

// TestGemma3DefaultsFromTextConfig reads a multimodal Gemma 3 config the
// way google/gemma-3-4b-it states it: a text_config naming only what
// differs from transformers' defaults. The text model must come out at the
// size Keras Hub publishes for gemma3_4b_text (3,880,099,328 parameters,
// keras_hub/src/models/gemma3/gemma3_presets.py; Keras' vocabulary is 64
// rows smaller than the 262,208 of Hugging Face's).
func TestRooflineGemma3DefaultsFromTextConfig(t *testing.T) {
	t.Parallel()
	c, err := ParseConfig([]byte(`{
	  "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
	  "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
	    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
	  "vision_config": {"hidden_size": 1152, "model_type": "siglip_vision_model", "num_hidden_layers": 27}}`))
	require.NoError(t, err)
	require.Equal(t, "gemma3_text", c.ModelType)
	require.Equal(t, []string{"Gemma3ForConditionalGeneration"}, c.Architectures)
	require.Equal(t, 8, c.Heads)
	require.Equal(t, 4, c.KVHeads)
	require.True(t, c.TiedEmbeddings)
	s, err := NewShape(c, Dtypes{})
	require.NoError(t, err)
	require.True(t, within(float64(s.Params), 3880099328, 0.02), "gemma-3-4b text: %d params", s.Params)
	// Every sixth layer is global; the others slide over 1024 tokens.
	globals := 0
	for i, w := range c.Windows {
		if (i+1)%6 == 0 {
			require.Zero(t, w, "layer %d", i)
			globals++
		} else {
			require.Equal(t, 1024, w, "layer %d", i)
		}
	}
	require.Equal(t, 5, globals)

	// Either spelling of the pattern is read before the default of 6.
	for _, key := range []string{"sliding_window_pattern", "_sliding_window_pattern"} {
		c, err := ParseConfig([]byte(`{"model_type": "gemma3_text", "num_hidden_layers": 8, "sliding_window": 64, "` + key + `": 4}`))
		require.NoError(t, err, key)
		require.Equal(t, []int{64, 64, 64, 0, 64, 64, 64, 0}, c.Windows, key)
	}
}

// TestKVBytesPerTokenByHand checks the KV formulas against hand
// arithmetic for a GQA, an MLA and a sliding-window config.
func TestRooflineKVBytesPerTokenByHand(t *testing.T) {
	t.Parallel()
	cases := []struct {
		config      string
		kv          Dtype
		perToken    int64
		global      int64
		description string
	}{
		// GQA: 2 (K and V) × 80 layers × 8 KV heads × 128 head_dim × bytes.
		{"llama-3.3-70b-instruct.json", BF16, 2 * 80 * 8 * 128 * 2, 2 * 80 * 8 * 128 * 2, "GQA bf16"},
		{"llama-3.3-70b-instruct.json", FP8, 2 * 80 * 8 * 128 * 1, 2 * 80 * 8 * 128 * 1, "GQA fp8"},
		// MLA: 27 layers × (kv_lora_rank 512 + qk_rope_head_dim 64) × bytes.
		{"deepseek-v2-lite.json", BF16, 27 * (512 + 64) * 2, 27 * (512 + 64) * 2, "MLA bf16"},
		{"deepseek-v2-lite.json", FP8, 27 * (512 + 64) * 1, 27 * (512 + 64) * 1, "MLA fp8"},
		// GLM-4.7-Flash: 47 layers × (512 + 64) × 2.
		{"glm-4.7-flash.json", BF16, 47 * (512 + 64) * 2, 47 * (512 + 64) * 2, "MLA with q_lora"},
		// Gemma 3 270M: 18 layers × 2 × 1 KV head × 256 × 2; 3 of them global.
		{"gemma-3-270m-it.json", BF16, 18 * 2 * 1 * 256 * 2, 3 * 2 * 1 * 256 * 2, "sliding window"},
	}
	for _, c := range cases {
		s := shapeOf(t, c.config, Dtypes{KV: c.kv})
		require.Equal(t, c.perToken, s.KVBytesPerToken, c.description)
		require.Equal(t, c.global, s.GlobalKVBytesPerToken, c.description)
	}

	// A decode step reads min(context, window) tokens of a sliding layer:
	// Gemma 3 270M at 8192 tokens, 15 layers × 512 + 3 layers × 8192
	// tokens, 1024 bytes each (2 × 1 × 256 × 2), per sequence.
	g := shapeOf(t, "gemma-3-270m-it.json", Dtypes{})
	cost, err := g.Decode(4, 8192)
	require.NoError(t, err)
	require.Equal(t, float64(4*(15*512+3*8192)*1024), cost.KVBytes)
	// Inside the window every layer holds the whole context.
	cost, err = g.Decode(1, 300)
	require.NoError(t, err)
	require.Equal(t, float64(300*18*1024), cost.KVBytes)
}

// TestActiveParamsByHand checks the parameters one token multiplies for
// DeepSeek-V2-Lite, from its config by hand: attention (MLA, no q_lora)
// and norms in 27 layers, one dense MLP, 26 MoE layers of 6 routed + 2
// shared experts and a router, the untied lm_head.
func TestRooflineActiveParamsByHand(t *testing.T) {
	t.Parallel()
	const h, heads = 2048, 16
	attn := h*heads*(128+64) + h*(512+64) + 512*heads*(128+128) + heads*128*h
	norms := 27*(512+2*h) + h
	expert := 3 * h * 1408
	dense := 3 * h * 10944
	moe := 26 * ((6+2)*expert + 64*h)
	lmHead := 102400 * h
	want := int64(27*attn + norms + dense + moe + lmHead)
	s := shapeOf(t, "deepseek-v2-lite.json", Dtypes{})
	require.Equal(t, want, s.ActiveParams)
	require.Equal(t, want+int64(26*(64-6)*expert)+int64(102400*h), s.Params)
	// At batch 1 the decode step reads exactly the active weights' bytes.
	cost, err := s.Decode(1, 0)
	require.NoError(t, err)
	require.InDelta(t, s.ActiveBytes, cost.WeightBytes, 1e-3)
	require.InDelta(t, float64(want)*2, s.ActiveBytes, 1e-3)
}

// TestDtypes prices weights: fp8 halves the block linears and experts,
// MXFP4 takes 4.25 bits; embeddings, lm_head, norms and routers stay bf16.
func TestRooflineDtypes(t *testing.T) {
	t.Parallel()
	bf := shapeOf(t, "deepseek-v2-lite.json", Dtypes{})
	f8 := shapeOf(t, "deepseek-v2-lite.json", Dtypes{Weights: FP8})
	mx := shapeOf(t, "deepseek-v2-lite.json", Dtypes{Weights: FP8, Experts: MXFP4})
	highParams := 2 * bf.EmbeddingParams // untied: embedding + lm_head
	require.InDelta(t, bf.ExpertBytes/2, f8.ExpertBytes, 1e-6)
	require.InDelta(t, float64(bf.ExpertParams)*0.53125, mx.ExpertBytes, 1e-6)
	require.Less(t, f8.WeightBytes, bf.WeightBytes/2+float64(highParams)*1.01)
	require.Greater(t, f8.WeightBytes, bf.WeightBytes/2)
	require.Less(t, mx.WeightBytes, f8.WeightBytes)
	require.Equal(t, FP8, f8.Dtypes.Experts, "experts default to the weight dtype")

	_, err := ParseWeightDtype("int3")
	require.ErrorContains(t, err, `"int3"`)
	_, err = ParseKVDtype("mxfp4")
	require.ErrorContains(t, err, "want bf16, fp16 or fp8")
}

// TestConfigErrors: bad input names the field.
func TestRooflineConfigErrors(t *testing.T) {
	t.Parallel()
	llama, err := os.ReadFile("testdata/llama-3.3-70b-instruct.json")
	require.NoError(t, err)
	edit := func(old, new string) string { return strings.Replace(string(llama), old, new, 1) }
	cases := []struct {
		name, config, field, msg string
	}{
		{"missing field", edit(`"hidden_size": 8192,`, ``), "hidden_size", "missing"},
		{"wrong type", edit(`"hidden_size": 8192`, `"hidden_size": "big"`), "hidden_size", `want a whole number`},
		{"fraction", edit(`"num_hidden_layers": 80`, `"num_hidden_layers": 80.5`), "num_hidden_layers", `want a whole number`},
		{"unknown architecture", `{"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 768}`, "model_type", `"gpt2" is not a modelled architecture`},
		{"no model_type", `{"hidden_size": 8}`, "model_type", "missing"},
		{"unmodelled feature", `{"model_type": "gemma4", "text_config": {"model_type": "gemma3_text", "num_kv_shared_layers": 20}}`, "text_config.num_kv_shared_layers", "not modelled"},
		{"unknown layer type", edit(`"model_type": "llama",`, `"model_type": "llama", "layer_types": [`+strings.Repeat(`"full_attention", `, 79)+`"linear_attention"],`), "layer_types[79]", `"linear_attention" is not modelled`},
		{"layer_types length", edit(`"model_type": "llama",`, `"model_type": "llama", "layer_types": ["full_attention"],`), "layer_types", "1 entries for 80 layers"},
		{"heads", edit(`"num_key_value_heads": 8`, `"num_key_value_heads": 7`), "num_key_value_heads", "does not divide"},
		{"top-k", `{"model_type": "qwen3_moe", "hidden_size": 8, "num_hidden_layers": 1, "vocab_size": 8, "num_attention_heads": 1, "num_experts": 4, "num_experts_per_tok": 5, "moe_intermediate_size": 8}`, "num_experts_per_tok", "exceeds num_experts 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig([]byte(c.config))
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "error %v is not a FieldError", err)
			require.Equal(t, c.field, fe.Field)
			require.Contains(t, fe.Msg, c.msg)
		})
	}
	for name, in := range map[string]string{
		"truncated":          `{"model_type": "llama", "hidden_size": 8`,
		"not an object":      `[1, 2]`,
		"null":               `null`,
		"text_config string": `{"model_type": "gemma3", "text_config": "x"}`,
	} {
		_, err := ParseConfig([]byte(in))
		require.Error(t, err, name)
	}
	_, err = ParseConfig([]byte(`{"model_type": "llama", "hidden_size": 8`))
	require.ErrorContains(t, err, "not valid JSON at byte")
	_, err = ReadConfig("testdata/nope.json")
	require.ErrorContains(t, err, "no such file")
}

// TestAttentionKernel: Gemma 4's 256- and 512-wide heads force Triton as
// vLLM does; a uniform 128-wide model runs FlashAttention; MLA its own.
// The control: the same Gemma 4 config with one head size is FlashAttention.
func TestAttentionKernel(t *testing.T) {
	for _, tc := range []struct {
		file string
		want AttentionKernel
	}{
		{"gemma-4-e2b-it.json", KernelTriton},
		{"qwen3-8b.json", KernelFlash},
		{"deepseek-v4-flash.json", KernelMLA},
	} {
		cfg, err := ReadConfig(filepath.Join("testdata", tc.file))
		require.NoError(t, err, tc.file)
		s, err := NewShape(cfg, Dtypes{})
		require.NoError(t, err)
		require.Equal(t, tc.want, s.AttentionKernel(), tc.file)
	}
	cfg, err := ReadConfig(filepath.Join("testdata", "gemma-4-e2b-it.json"))
	require.NoError(t, err)
	cfg.GlobalHeadDim = cfg.HeadDim
	s, err := NewShape(cfg, Dtypes{})
	require.NoError(t, err)
	require.Equal(t, KernelFlash, s.AttentionKernel(), "one head size of 256: FlashAttention")
}
