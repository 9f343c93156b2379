package roofline

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// base is the smallest dense config ParseConfig takes, for the fields
// below to be added to.
const base = `"hidden_size": 64, "num_hidden_layers": 4, "vocab_size": 100, "num_attention_heads": 4`

// ParseConfig field by field: how each family's fields become the
// Config (the MoE layer patterns, biases, tied embeddings, the text_config
// hoist), and the field each misfit names.
func TestParseConfigFields(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		config string
		check  func(t *testing.T, c *Config)
		field  string // a *FieldError at this field, else success
		msg    string
	}{
		{"llama defaults", `{"model_type": "llama", "intermediate_size": 128, ` + base + `}`, func(t *testing.T, c *Config) {
			require.Equal(t, [4]int{4, 16, 128, 0}, [4]int{c.KVHeads, c.HeadDim, c.Intermediate, c.DraftLayers})
			require.False(t, c.TiedEmbeddings || c.OBias || c.QKVBias || c.MLPBias || c.QKNorm || c.GemmaNorms)
			require.Nil(t, c.MoE)
		}, "", ""},
		{"llama biases", `{"model_type": "llama", "intermediate_size": 128, "attention_bias": true, "mlp_bias": true, "tie_word_embeddings": true, "num_nextn_predict_layers": 1, ` + base + `}`, func(t *testing.T, c *Config) {
			require.True(t, c.OBias && c.QKVBias && c.MLPBias && c.TiedEmbeddings)
			require.Equal(t, 1, c.DraftLayers)
		}, "", ""},
		{"qwen2 biases q, k, v only", `{"model_type": "qwen2", "intermediate_size": 128, "attention_bias": true, ` + base + `}`, func(t *testing.T, c *Config) {
			require.True(t, c.QKVBias)
			require.False(t, c.OBias)
		}, "", ""},
		{"text_config inherits model_type and tied embeddings", `{"model_type": "qwen3_vl", "architectures": ["X"], "tie_word_embeddings": true, "text_config": {"intermediate_size": 128, ` + base + `}}`, func(t *testing.T, c *Config) {
			require.Equal(t, "qwen3_vl_text", c.ModelType)
			require.Equal(t, []string{"X"}, c.Architectures)
			require.True(t, c.TiedEmbeddings && c.QKNorm)
		}, "", ""},
		{"text_config states its own", `{"model_type": "qwen3_vl", "tie_word_embeddings": true, "text_config": {"model_type": "qwen3", "tie_word_embeddings": false, "intermediate_size": 128, ` + base + `}}`, func(t *testing.T, c *Config) {
			require.Equal(t, "qwen3", c.ModelType)
			require.False(t, c.TiedEmbeddings)
		}, "", ""},
		{"no model_type in text_config", `{"text_config": {` + base + `}}`, nil, "text_config.model_type", "missing: the architecture cannot be told"},
		{"gemma4 moe", `{"model_type": "gemma4_text", "enable_moe_block": true}`, nil, "enable_moe_block", "set: Gemma 4's mixture of experts (26B-A4B) is not modelled, only its dense models"},
		{"unmodelled", `{"model_type": "llama", "attention_chunk_size": 8192, ` + base + `}`, nil, "attention_chunk_size", "set, but this architecture feature is not modelled"},
		{"no heads", `{"model_type": "llama", "intermediate_size": 128, "hidden_size": 64, "num_hidden_layers": 4, "vocab_size": 100, "num_attention_heads": 0}`, nil,
			"num_attention_heads", "0: want a positive number"},
		{"dense needs intermediate", `{"model_type": "llama", ` + base + `}`, nil, "intermediate_size", "missing"},
		{"mixtral: every layer sparse", `{"model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 2, "intermediate_size": 32, ` + base + `}`, func(t *testing.T, c *Config) {
			require.Equal(t, MoE{Experts: 8, TopK: 2, ExpertIntermediate: 32, Layers: []bool{true, true, true, true}}, *c.MoE)
			require.Zero(t, c.Intermediate, "no dense layer: intermediate_size is the experts' width only")
		}, "", ""},
		{"mixtral without experts' width", `{"model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 2, ` + base + `}`, nil, "intermediate_size", "missing"},
		{"qwen: sparse step, mlp-only layers, shared expert", `{"model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
			"shared_expert_intermediate_size": 48, "decoder_sparse_step": 2, "mlp_only_layers": [3], "intermediate_size": 128, ` + base + `}`, func(t *testing.T, c *Config) {
			require.Equal(t, MoE{Experts: 8, TopK: 2, ExpertIntermediate: 16, SharedIntermediate: 48, SharedGate: true, Layers: []bool{false, true, false, false}}, *c.MoE)
			require.Equal(t, 128, c.Intermediate)
		}, "", ""},
		{"qwen every layer sparse needs no intermediate", `{"model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 16, ` + base + `}`, func(t *testing.T, c *Config) {
			require.Equal(t, []bool{true, true, true, true}, c.MoE.Layers)
			require.False(t, c.MoE.SharedGate)
			require.Zero(t, c.Intermediate)
		}, "", ""},
		{"qwen sparse step 0", `{"model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 16, "decoder_sparse_step": 0, ` + base + `}`, nil, "decoder_sparse_step", "want at least 1"},
		{"qwen without experts' width", `{"model_type": "qwen2_moe", "num_experts": 8, "num_experts_per_tok": 2, ` + base + `}`, nil, "moe_intermediate_size", "missing"},
		{"qwen top-k missing", `{"model_type": "qwen2_moe", "num_experts": 8, ` + base + `}`, nil, "num_experts_per_tok", "missing"},
		{"qwen with no experts is dense", `{"model_type": "qwen2_moe", "num_experts": 0, "intermediate_size": 128, ` + base + `}`, func(t *testing.T, c *Config) {
			require.Nil(t, c.MoE)
		}, "", ""},
		{"deepseek: first dense layers, frequency, shared experts", `{"model_type": "deepseek_v3", "n_routed_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 8,
			"n_shared_experts": 2, "first_k_dense_replace": 1, "moe_layer_freq": 2, "intermediate_size": 128, ` + base + `}`, func(t *testing.T, c *Config) {
			require.Equal(t, MoE{Experts: 16, TopK: 4, ExpertIntermediate: 8, SharedIntermediate: 16, Layers: []bool{false, false, true, false}}, *c.MoE)
		}, "", ""},
		{"deepseek layer types", `{"model_type": "deepseek_v3", "n_routed_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 8,
			"mlp_layer_types": ["dense", "sparse", "sparse", "dense"], "first_k_dense_replace": 3, "intermediate_size": 128, ` + base + `}`, func(t *testing.T, c *Config) {
			require.Equal(t, []bool{false, true, true, false}, c.MoE.Layers, "the list wins over first_k_dense_replace")
		}, "", ""},
		{"deepseek layer types length", `{"model_type": "deepseek_v3", "n_routed_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 8,
			"mlp_layer_types": ["dense"], ` + base + `}`, nil, "mlp_layer_types", "1 entries for 4 layers"},
		{"deepseek layer type unknown", `{"model_type": "deepseek_v3", "n_routed_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 8,
			"mlp_layer_types": ["dense", "moe", "sparse", "dense"], ` + base + `}`, nil, "mlp_layer_types[1]", `"moe": want dense or sparse`},
		{"deepseek frequency 0", `{"model_type": "deepseek_v3", "n_routed_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 8,
			"moe_layer_freq": 0, ` + base + `}`, nil, "moe_layer_freq", "want at least 1"},
		{"deepseek top-k over experts", `{"model_type": "deepseek_v3", "n_routed_experts": 4, "num_experts_per_tok": 5, ` + base + `}`, nil, "num_experts_per_tok", "5 exceeds n_routed_experts 4"},
		{"deepseek shared experts not a number", `{"model_type": "deepseek_v3", "n_routed_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 8,
			"n_shared_experts": "two", ` + base + `}`, nil, "n_shared_experts", "want a whole number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseConfig([]byte(c.config))
			if c.field == "" {
				require.NoError(t, err)
				c.check(t, got)
				return
			}
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "error %v is not a FieldError", err)
			require.Equal(t, c.field, fe.Field)
			require.Contains(t, fe.Msg, c.msg)
		})
	}
}
