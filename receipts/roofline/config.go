package roofline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
)

// Config is the architecture of a text model as a Hugging Face
// config.json states it, resolved per layer. ParseConfig fills it; a test
// or a what-if may build one by hand.
type Config struct {
	// ModelType is the text model's model_type (text_config's when the
	// config nests one).
	ModelType     string
	Architectures []string

	Hidden, Layers, Vocab int
	// Heads and KVHeads count query and key/value heads; HeadDim is the
	// per-head width (standard attention).
	Heads, KVHeads, HeadDim int
	// Intermediate is the width of a dense MLP.
	Intermediate   int
	TiedEmbeddings bool

	// MLA is set for multi-head latent attention.
	MLA *MLA
	// MoE is set for a mixture of experts.
	MoE *MoE
	// Windows holds, per layer, the sliding window in tokens; 0 is full
	// attention.
	Windows []int

	// Layout details that move the count by a fraction of a percent.
	QKNorm     bool // per-head q_norm and k_norm (Qwen3, Gemma 3)
	QKVBias    bool // biases on q, k, v (Qwen2)
	OBias      bool // bias on o_proj (attention_bias)
	MLPBias    bool // biases on the MLP (mlp_bias)
	GemmaNorms bool // four norms per layer instead of two (Gemma 3)

	// Gemma 4. GlobalHeadDim and GlobalKVHeads replace HeadDim and
	// KVHeads on full-attention layers when set. KEqV drops v_proj on
	// full-attention layers (values come from the key projection; the
	// cache still holds both). The last KVSharedLayers layers compute no
	// K or V: each reads the cache of the last earlier layer of its
	// attention type, so it stores nothing but reads as much. PerLayerInput
	// is the width of the per-layer embeddings (PLE), looked up in a
	// PerLayerVocab × Layers·PerLayerInput table. DoubleWideMLP doubles the
	// MLP of the KV-shared layers.
	GlobalHeadDim, GlobalKVHeads int
	KEqV                         bool
	KVSharedLayers               int
	PerLayerInput, PerLayerVocab int
	DoubleWideMLP                bool

	// Compressed is set for DeepSeek-V4's compressed attention.
	Compressed *Compressed
	// Stated is the checkpoint's storage as the config states it
	// (quantization_config's fp8, expert_dtype's fp4); empty fields where
	// it says nothing. Dtypes given to NewShape win.
	Stated Dtypes
	// DraftLayers is num_nextn_predict_layers: the multi-token prediction
	// layers a speculative drafter runs. They are not counted in Params
	// (plain decoding never runs them); Speculative prices them.
	DraftLayers int

	// MaxPositions is the context vLLM derives from the config when
	// --max-model-len is not given (0: the config states none; MaxModelLen).
	MaxPositions int
	// Vision says the checkpoint has a vision tower (a vision_config): a
	// model without one takes no images.
	Vision bool
}

// Compressed is DeepSeek-V4's hybrid attention (deepseek_v4): one KV head
// of HeadDim values that serves as key and value (its last RopeDim carry
// the rotary part), queries through a QLoRARank bottleneck, outputs through
// OGroups grouped projections of OLoRARank each. Every layer keeps the raw
// KV of its last Window tokens. A layer of ratio r > 0 also pools every r
// tokens into one compressed row: ratio 4 is Compressed Sparse Attention
// (an overlapping compressor, and an indexer of IndexHeads × IndexHeadDim
// that scores every compressed row and lets the query read the IndexTopK
// best), any other ratio Heavily Compressed Attention (the query reads
// every compressed row). HCMult is the number of hyper-connection
// residual streams.
type Compressed struct {
	QLoRARank, OLoRARank, OGroups, RopeDim int
	Window                                 int
	Ratios                                 []int
	IndexHeads, IndexHeadDim, IndexTopK    int
	HCMult                                 int
}

// SparseRatio is the compression ratio of DeepSeek-V4's sparse layers
// (Compressed Sparse Attention); other ratios are read densely.
const SparseRatio = 4

// layerHeads is layer i's query/key head width and KV head count.
func (c *Config) layerHeads(i int) (headDim, kvHeads int) {
	headDim, kvHeads = c.HeadDim, c.KVHeads
	if c.Windows[i] == 0 {
		if c.GlobalHeadDim > 0 {
			headDim = c.GlobalHeadDim
		}
		if c.GlobalKVHeads > 0 {
			kvHeads = c.GlobalKVHeads
		}
	}
	return headDim, kvHeads
}

// kvShared says whether layer i reuses an earlier layer's KV cache.
func (c *Config) kvShared(i int) bool {
	first := c.Layers - c.KVSharedLayers
	return c.KVSharedLayers > 0 && first > 0 && i >= first
}

// MLA is multi-head latent attention (DeepSeek-V2/V3, Kimi K2, GLM-4.7
// Flash): one latent of KVLoRARank plus a shared rope key per token.
type MLA struct {
	QLoRARank     int // 0: queries projected directly
	KVLoRARank    int
	QKNopeHeadDim int
	QKRopeHeadDim int
	VHeadDim      int
}

// MoE is a mixture of experts.
type MoE struct {
	Experts, TopK      int
	ExpertIntermediate int
	// SharedIntermediate is the total width of the shared experts, which
	// every token runs (0: none).
	SharedIntermediate int
	// SharedGate is Qwen2-MoE's sigmoid gate on the shared expert.
	SharedGate bool
	// Layers says, per layer, whether its MLP is a MoE block (otherwise a
	// dense MLP of Config.Intermediate).
	Layers []bool
}

// MoELayers counts the MoE blocks.
func (m *MoE) MoELayers() int {
	n := 0
	for _, b := range m.Layers {
		if b {
			n++
		}
	}
	return n
}

// FieldError names the config field that is missing, malformed or not
// modelled.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// ReadConfig reads and parses a config.json.
func ReadConfig(path string) (*Config, error) {
	b, err := readConfigFile(path)
	if err != nil {
		return nil, fmt.Errorf("read model config: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// family is what a model_type implies beyond its fields.
type family struct {
	moe        string // "", "deepseek", "qwen", "mixtral"
	qkNorm     bool
	qkvBias    bool
	gemma      bool // Gemma 3 norms, window pattern, defaults
	gemma4     bool // Gemma 4: its defaults, head widths, KV sharing, PLE
	v4         bool // DeepSeek-V4: compressed attention, hyper-connections
	slidingAll bool // a non-null sliding_window applies to every layer
	tiedByDef  bool // tie_word_embeddings when absent
}

// families lists the model types whose weight layout this package knows.
// A model_type outside it is refused: a count from guessed fields would be
// a silent wrong answer.
var families = map[string]family{
	"llama":             {},
	"mistral":           {slidingAll: true},
	"qwen2":             {qkvBias: true},
	"qwen3":             {qkNorm: true},
	"qwen3_vl_text":     {qkNorm: true},
	"gemma3_text":       {qkNorm: true, gemma: true, tiedByDef: true},
	"gemma4_text":       {qkNorm: true, gemma4: true, tiedByDef: true},
	"mixtral":           {moe: "mixtral", slidingAll: true},
	"qwen2_moe":         {moe: "qwen", qkvBias: true},
	"qwen3_moe":         {moe: "qwen", qkNorm: true},
	"qwen3_vl_moe_text": {moe: "qwen", qkNorm: true},
	"deepseek_v2":       {moe: "deepseek"},
	"deepseek_v3":       {moe: "deepseek"},
	"deepseek_v4":       {moe: "deepseek", v4: true},
	"kimi_k2":           {moe: "deepseek"},
	"glm4_moe_lite":     {moe: "deepseek"},
}

// gemma3Defaults are transformers' Gemma3TextConfig defaults: the
// multimodal Gemma 3 configs (google/gemma-3-4b-it and up) name only the
// fields that differ from them.
var gemma3Defaults = map[string]any{
	"vocab_size":             262208,
	"hidden_size":            2304,
	"intermediate_size":      9216,
	"num_hidden_layers":      26,
	"num_attention_heads":    8,
	"num_key_value_heads":    4,
	"head_dim":               256,
	"sliding_window":         4096,
	"sliding_window_pattern": 6,
}

// gemma4Defaults are transformers' Gemma4TextConfig defaults
// (configuration_gemma4.py): a Gemma 4 config.json names only what
// differs from them. hidden_size_per_layer_input defaults to 256, so a
// config without the field has per-layer embeddings.
var gemma4Defaults = map[string]any{
	"vocab_size":                  262144,
	"hidden_size":                 2304,
	"intermediate_size":           9216,
	"num_hidden_layers":           30,
	"num_attention_heads":         8,
	"num_key_value_heads":         4,
	"head_dim":                    256,
	"global_head_dim":             512,
	"sliding_window":              512,
	"hidden_size_per_layer_input": 256,
	"vocab_size_per_layer_input":  262144,
}

// gemma4Modelled are the fields of unmodelled that the Gemma 4 reader
// prices.
var gemma4Modelled = []string{"num_kv_shared_layers", "hidden_size_per_layer_input", "use_double_wide_mlp",
	"global_head_dim", "attention_k_eq_v"}

// v4Modelled are the fields of unmodelled that the DeepSeek-V4 reader
// prices.
var v4Modelled = []string{"index_topk", "index_n_heads", "hc_mult"}

// unmodelled lists fields of architectures whose cost this package does
// not model (KV sharing, per-layer embeddings, linear attention, SSMs,
// chunked attention, sparse indexers, hyper-connections). Any of them set
// to a non-trivial value is refused by name.
var unmodelled = []string{
	"num_kv_shared_layers", "hidden_size_per_layer_input", "use_double_wide_mlp",
	"global_head_dim", "attention_k_eq_v", "enable_moe_block", "per_layer_config",
	"altup_num_inputs", "linear_num_value_heads", "linear_key_head_dim",
	"hybrid_override_pattern", "ssm_state_size", "mamba_num_heads",
	"interleave_moe_layer_step", "attention_chunk_size", "no_rope_layers",
	"index_topk", "index_n_heads", "hc_mult", "use_sliding_window",
}

// ParseConfig reads a Hugging Face config.json. A config that nests its
// text model under text_config (multimodal Gemma 3, Qwen3-VL) is read
// from there; tie_word_embeddings is taken from the top level when the
// text_config does not state it.
func ParseConfig(data []byte) (*Config, error) {
	top, err := decodeObject(data, "")
	if err != nil {
		return nil, err
	}
	o, err := textConfig(top)
	if err != nil {
		return nil, err
	}
	c := &Config{}
	if c.Architectures, err = top.strs("architectures"); err != nil {
		return nil, err
	}
	fam, err := architecture(&o, c)
	if err != nil {
		return nil, err
	}
	if err := readDense(o, fam, c); err != nil {
		return nil, err
	}
	if err := readMLA(o, c); err != nil {
		return nil, err
	}
	if err := readMoE(o, fam, c); err != nil {
		return nil, err
	}
	if c.MoE == nil || slices.Contains(c.MoE.Layers, false) {
		if c.Intermediate, err = o.need("intermediate_size"); err != nil {
			return nil, err
		}
	}
	if err := readWindows(o, fam, c); err != nil {
		return nil, err
	}
	if fam.gemma4 {
		if err := readGemma4(o, c); err != nil {
			return nil, err
		}
	}
	if fam.v4 {
		if err := readCompressed(o, c); err != nil {
			return nil, err
		}
	}
	if err := readStated(top, o, c); err != nil {
		return nil, err
	}
	if c.DraftLayers, err = o.intOr("num_nextn_predict_layers", 0); err != nil {
		return nil, err
	}
	if c.MaxPositions, err = maxPositions(o); err != nil {
		return nil, err
	}
	_, c.Vision = top.get("vision_config")
	return c, c.validate()
}

// maxPositions is vLLM's derived max_model_len (ModelConfig's
// _get_and_verify_max_len): the smallest of the length keys the config
// states, times rope scaling's factor unless the scaling is one that
// already counts it (su, longrope, llama3); YaRN scales its
// original_max_position_embeddings instead.
func maxPositions(o object) (int, error) {
	n := 0
	for _, k := range []string{"max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length", "max_sequence_length", "max_seq_length", "seq_len"} {
		v, ok, err := o.int(k)
		if err != nil {
			return 0, err
		}
		if ok && v > 0 && (n == 0 || v < n) {
			n = v
		}
	}
	raw, ok := o.get("rope_scaling")
	if !ok || n == 0 {
		return n, nil
	}
	var rs struct {
		Type     string  `json:"type"`
		RopeType string  `json:"rope_type"`
		Factor   float64 `json:"factor"`
		Original int     `json:"original_max_position_embeddings"`
	}
	if json.Unmarshal(raw, &rs) != nil || rs.Factor <= 0 {
		return n, nil // a per-layer-type map (Gemma 4's rope_parameters) or no factor
	}
	kind := rs.RopeType
	if kind == "" {
		kind = rs.Type
	}
	switch kind {
	case "su", "longrope", "llama3":
		return n, nil
	case "yarn":
		if rs.Original > 0 {
			n = rs.Original
		}
	}
	return int(float64(n) * rs.Factor), nil
}

// textConfig is the object the text model is read from: top, or its
// text_config, which takes tie_word_embeddings and the model type (as
// "<type>_text") from the top level when it does not state them.
func textConfig(top object) (object, error) {
	raw, ok := top.get("text_config")
	if !ok {
		return top, nil
	}
	t, err := decodeObject(raw, "text_config.")
	if err != nil {
		return object{}, err
	}
	if _, ok := t.get("tie_word_embeddings"); !ok {
		if v, ok := top.get("tie_word_embeddings"); ok {
			t.m["tie_word_embeddings"] = v
		}
	}
	if _, ok := t.get("model_type"); !ok {
		if mt, _, err := top.str("model_type"); err == nil && mt != "" {
			t.m["model_type"], _ = json.Marshal(mt + "_text")
		}
	}
	return t, nil
}

// architecture is the family of o's model type, refusing one this
// package does not model and any unmodelled feature it sets; it gives o
// its family's defaults.
func architecture(o *object, c *Config) (family, error) {
	mt, ok, err := o.str("model_type")
	if err != nil {
		return family{}, err
	}
	if !ok {
		return family{}, &FieldError{o.path + "model_type", "missing: the architecture cannot be told"}
	}
	fam, known := families[mt]
	if !known {
		return family{}, &FieldError{o.path + "model_type", fmt.Sprintf("%q is not a modelled architecture (known: %s)", mt, strings.Join(knownTypes(), ", "))}
	}
	c.ModelType = mt
	if fam.gemma {
		o.defaults = gemma3Defaults
	}
	if fam.gemma4 {
		o.defaults = gemma4Defaults
		if o.set("enable_moe_block") {
			return family{}, &FieldError{o.path + "enable_moe_block", "set: Gemma 4's mixture of experts (26B-A4B) is not modelled, only its dense models"}
		}
	}
	for _, k := range unmodelled {
		if fam.gemma4 && slices.Contains(gemma4Modelled, k) || fam.v4 && slices.Contains(v4Modelled, k) {
			continue
		}
		if o.set(k) {
			return family{}, &FieldError{o.path + k, "set, but this architecture feature is not modelled"}
		}
	}
	return fam, nil
}

// readDense reads the fields every transformer has: widths, layers,
// vocabulary, heads, tied embeddings, norms and biases.
func readDense(o object, fam family, c *Config) error {
	var err error
	if c.Hidden, err = o.need("hidden_size"); err != nil {
		return err
	}
	if c.Layers, err = o.need("num_hidden_layers"); err != nil {
		return err
	}
	if c.Vocab, err = o.need("vocab_size"); err != nil {
		return err
	}
	if c.Heads, err = o.need("num_attention_heads"); err != nil {
		return err
	}
	if c.KVHeads, err = o.intOr("num_key_value_heads", c.Heads); err != nil {
		return err
	}
	headDim := 0 // no heads: validate names num_attention_heads, not a division by zero
	if c.Heads > 0 {
		headDim = c.Hidden / c.Heads
	}
	if c.HeadDim, err = o.intOr("head_dim", headDim); err != nil {
		return err
	}
	if c.TiedEmbeddings, err = o.boolOr("tie_word_embeddings", fam.tiedByDef); err != nil {
		return err
	}
	c.QKNorm, c.QKVBias, c.GemmaNorms = fam.qkNorm, fam.qkvBias, fam.gemma
	if c.OBias, err = o.boolOr("attention_bias", false); err != nil {
		return err
	}
	if c.QKVBias {
		c.OBias = false // Qwen2 biases q, k, v only, whatever attention_bias says
	} else {
		c.QKVBias = c.OBias
	}
	if c.MLPBias, err = o.boolOr("mlp_bias", false); err != nil {
		return err
	}
	return nil
}

// readGemma4 reads what Gemma 4 adds to a Gemma 3 layout.
func readGemma4(o object, c *Config) error {
	var err error
	c.GemmaNorms = true
	if c.GlobalHeadDim, err = o.need("global_head_dim"); err != nil {
		return err
	}
	if c.KEqV, err = o.boolOr("attention_k_eq_v", false); err != nil {
		return err
	}
	if c.KEqV {
		// Only the k_eq_v models give full-attention layers their own KV
		// head count (Gemma4TextConfig's per-layer override).
		if c.GlobalKVHeads, err = o.intOr("num_global_key_value_heads", 0); err != nil {
			return err
		}
	}
	if c.KVSharedLayers, err = o.intOr("num_kv_shared_layers", 0); err != nil {
		return err
	}
	if c.KVSharedLayers >= c.Layers {
		return &FieldError{o.path + "num_kv_shared_layers", fmt.Sprintf("%d: want fewer than num_hidden_layers %d", c.KVSharedLayers, c.Layers)}
	}
	if c.PerLayerInput, err = o.intOr("hidden_size_per_layer_input", 0); err != nil {
		return err
	}
	if c.PerLayerInput > 0 {
		if c.PerLayerVocab, err = o.need("vocab_size_per_layer_input"); err != nil {
			return err
		}
	}
	if c.DoubleWideMLP, err = o.boolOr("use_double_wide_mlp", false); err != nil {
		return err
	}
	// Gemma4TextConfig forces the last layer to full attention (with a
	// warning) whatever layer_types says.
	c.Windows[c.Layers-1] = 0
	// A shared layer reads the last earlier layer of its attention type:
	// there must be one.
	first := c.Layers - c.KVSharedLayers
	for i := first; c.KVSharedLayers > 0 && i < c.Layers; i++ {
		found := false
		for j := 0; j < first; j++ {
			found = found || (c.Windows[j] == 0) == (c.Windows[i] == 0)
		}
		if !found {
			return &FieldError{o.path + "num_kv_shared_layers", fmt.Sprintf("layer %d shares the KV of an earlier layer of its type, but none comes before layer %d", i, first)}
		}
	}
	return nil
}

func knownTypes() []string {
	ks := make([]string, 0, len(families))
	for k := range families {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func readMLA(o object, c *Config) error {
	rank, ok, err := o.int("kv_lora_rank")
	if err != nil || !ok || rank == 0 {
		return err
	}
	m := &MLA{KVLoRARank: rank}
	if m.QLoRARank, err = o.intOr("q_lora_rank", 0); err != nil {
		return err
	}
	if m.QKNopeHeadDim, err = o.need("qk_nope_head_dim"); err != nil {
		return err
	}
	if m.QKRopeHeadDim, err = o.need("qk_rope_head_dim"); err != nil {
		return err
	}
	if m.VHeadDim, err = o.need("v_head_dim"); err != nil {
		return err
	}
	c.MLA = m
	return nil
}

// readMoE reads a mixture-of-experts family's experts and which layers
// are sparse, each family under its own field names.
func readMoE(o object, fam family, c *Config) error {
	var expertsKey string
	switch fam.moe {
	case "":
		return nil
	case "deepseek":
		expertsKey = "n_routed_experts"
	case "qwen":
		expertsKey = "num_experts"
	case "mixtral":
		expertsKey = "num_local_experts"
	}
	e, ok, err := o.int(expertsKey)
	if err != nil || !ok || e == 0 {
		return err // a dense member of a MoE family (DeepSeek-V2 dense)
	}
	m := &MoE{Experts: e, Layers: make([]bool, c.Layers)}
	if m.TopK, err = o.need("num_experts_per_tok"); err != nil {
		return err
	}
	if m.TopK > m.Experts {
		return &FieldError{o.path + "num_experts_per_tok", fmt.Sprintf("%d exceeds %s %d", m.TopK, expertsKey, e)}
	}
	switch fam.moe {
	case "deepseek":
		err = readDeepSeekMoE(o, m)
	case "qwen":
		err = readQwenMoE(o, m)
	case "mixtral":
		if m.ExpertIntermediate, err = o.need("intermediate_size"); err == nil {
			for i := range m.Layers {
				m.Layers[i] = true
			}
		}
	}
	if err != nil {
		return err
	}
	c.MoE = m
	return nil
}

// readDeepSeekMoE reads DeepSeek's expert widths (shared experts are
// n_shared_experts routed-expert widths) and its sparse layers: the
// mlp_layer_types list where stated, else every moe_layer_freq-th layer
// from first_k_dense_replace on.
func readDeepSeekMoE(o object, m *MoE) error {
	var err error
	if m.ExpertIntermediate, err = o.need("moe_intermediate_size"); err != nil {
		return err
	}
	shared, err := o.intOr("n_shared_experts", 0)
	if err != nil {
		return err
	}
	m.SharedIntermediate = shared * m.ExpertIntermediate
	if types, ok, err := o.strs2("mlp_layer_types"); err != nil {
		return err
	} else if ok {
		if len(types) != len(m.Layers) {
			return &FieldError{o.path + "mlp_layer_types", fmt.Sprintf("%d entries for %d layers", len(types), len(m.Layers))}
		}
		for i, t := range types {
			switch t {
			case "dense":
			case "sparse":
				m.Layers[i] = true
			default:
				return &FieldError{fmt.Sprintf("%smlp_layer_types[%d]", o.path, i), fmt.Sprintf("%q: want dense or sparse", t)}
			}
		}
		return nil
	}
	firstDense, err := o.intOr("first_k_dense_replace", 0)
	if err != nil {
		return err
	}
	freq, err := o.intOr("moe_layer_freq", 1)
	if err != nil {
		return err
	}
	if freq < 1 {
		return &FieldError{o.path + "moe_layer_freq", "want at least 1"}
	}
	for i := range m.Layers {
		m.Layers[i] = i >= firstDense && i%freq == 0
	}
	return nil
}

// readQwenMoE reads Qwen's expert widths, its gated shared expert and
// its sparse layers: every decoder_sparse_step-th layer not in
// mlp_only_layers.
func readQwenMoE(o object, m *MoE) error {
	var err error
	if m.ExpertIntermediate, err = o.need("moe_intermediate_size"); err != nil {
		return err
	}
	if m.SharedIntermediate, err = o.intOr("shared_expert_intermediate_size", 0); err != nil {
		return err
	}
	m.SharedGate = m.SharedIntermediate > 0
	step, err := o.intOr("decoder_sparse_step", 1)
	if err != nil {
		return err
	}
	if step < 1 {
		return &FieldError{o.path + "decoder_sparse_step", "want at least 1"}
	}
	only, err := o.ints("mlp_only_layers")
	if err != nil {
		return err
	}
	for i := range m.Layers {
		m.Layers[i] = !slices.Contains(only, i) && (i+1)%step == 0
	}
	return nil
}

func readWindows(o object, fam family, c *Config) error {
	c.Windows = make([]int, c.Layers)
	window, _, err := o.int("sliding_window")
	if err != nil {
		return err
	}
	types, ok, err := o.strs2("layer_types")
	if err != nil {
		return err
	}
	if ok {
		if len(types) != c.Layers {
			return &FieldError{o.path + "layer_types", fmt.Sprintf("%d entries for %d layers", len(types), c.Layers)}
		}
		for i, t := range types {
			switch t {
			case "full_attention":
			case "sliding_attention":
				if window <= 0 {
					return &FieldError{o.path + "sliding_window", fmt.Sprintf("missing, but layer_types[%d] is sliding_attention", i)}
				}
				c.Windows[i] = window
			default:
				return &FieldError{fmt.Sprintf("%slayer_types[%d]", o.path, i), fmt.Sprintf("%q is not modelled (want full_attention or sliding_attention)", t)}
			}
		}
		return nil
	}
	switch {
	case fam.gemma4:
		// Gemma4TextConfig's default: five sliding layers to one full, and
		// the last layer always full.
		for i := range c.Windows {
			if (i+1)%6 != 0 && i != c.Layers-1 {
				c.Windows[i] = window
			}
		}
	case fam.gemma:
		// The config's own spelling (either) before the family default.
		stated := object{path: o.path, m: o.m}
		pattern, ok, err := stated.int("sliding_window_pattern")
		if err != nil {
			return err
		}
		if !ok {
			if pattern, ok, err = stated.int("_sliding_window_pattern"); err != nil {
				return err
			}
		}
		if !ok {
			pattern = gemma3Defaults["sliding_window_pattern"].(int)
		}
		if pattern < 1 {
			return &FieldError{o.path + "sliding_window_pattern", "want at least 1"}
		}
		for i := range c.Windows {
			if (i+1)%pattern != 0 { // every pattern-th layer is global
				c.Windows[i] = window
			}
		}
	case fam.slidingAll && window > 0:
		for i := range c.Windows {
			c.Windows[i] = window
		}
	}
	return nil
}

func (c *Config) validate() error {
	check := func(name string, v int) error {
		if v <= 0 {
			return &FieldError{name, fmt.Sprintf("%d: want a positive number", v)}
		}
		return nil
	}
	for _, err := range []error{
		check("hidden_size", c.Hidden), check("num_hidden_layers", c.Layers),
		check("vocab_size", c.Vocab), check("num_attention_heads", c.Heads),
	} {
		if err != nil {
			return err
		}
	}
	if c.MLA != nil {
		return nil
	}
	if err := check("num_key_value_heads", c.KVHeads); err != nil {
		return err
	}
	if err := check("head_dim", c.HeadDim); err != nil {
		return err
	}
	if c.Heads%c.KVHeads != 0 {
		return &FieldError{"num_key_value_heads", fmt.Sprintf("%d does not divide num_attention_heads %d", c.KVHeads, c.Heads)}
	}
	if c.GlobalKVHeads > 0 && c.Heads%c.GlobalKVHeads != 0 {
		return &FieldError{"num_global_key_value_heads", fmt.Sprintf("%d does not divide num_attention_heads %d", c.GlobalKVHeads, c.Heads)}
	}
	return nil
}

// object is one JSON object of a config, with the path that prefixes its
// fields in errors and the defaults of its family.
type object struct {
	path     string
	m        map[string]json.RawMessage
	defaults map[string]any
}

func decodeObject(data []byte, path string) (object, error) {
	o := object{path: path}
	label := ""
	if path != "" {
		label = strings.TrimSuffix(path, ".") + ": "
	}
	if err := json.Unmarshal(data, &o.m); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return o, fmt.Errorf("%snot valid JSON at byte %d: %w", label, se.Offset, err)
		}
		return o, fmt.Errorf("%swant a JSON object: %w", label, err)
	}
	if o.m == nil {
		return o, fmt.Errorf("%swant a JSON object, got null", label)
	}
	return o, nil
}

// get returns a field that is present and not null, or its family default.
func (o object) get(k string) (json.RawMessage, bool) {
	v, ok := o.m[k]
	if ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return v, true
	}
	if d, ok := o.defaults[k]; ok {
		b, _ := json.Marshal(d)
		return b, true
	}
	return nil, false
}

// set says whether a field holds anything but null, false, 0, "" or an
// empty list or object.
func (o object) set(k string) bool {
	v, ok := o.get(k)
	if !ok {
		return false
	}
	switch s := string(bytes.TrimSpace(v)); s {
	case "false", "0", `""`, "[]", "{}":
		return false
	}
	return true
}

func (o object) int(k string) (int, bool, error) {
	v, ok := o.get(k)
	if !ok {
		return 0, false, nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
		return 0, false, &FieldError{o.path + k, fmt.Sprintf("want a whole number ≥ 0, got %s", v)}
	}
	return int(f), true, nil
}

func (o object) need(k string) (int, error) {
	n, ok, err := o.int(k)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, &FieldError{o.path + k, "missing"}
	}
	return n, nil
}

func (o object) intOr(k string, def int) (int, error) {
	n, ok, err := o.int(k)
	if !ok || err != nil {
		return def, err
	}
	return n, nil
}

func (o object) boolOr(k string, def bool) (bool, error) {
	v, ok := o.get(k)
	if !ok {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, &FieldError{o.path + k, fmt.Sprintf("want true or false, got %s", v)}
	}
	return b, nil
}

func (o object) str(k string) (string, bool, error) {
	v, ok := o.get(k)
	if !ok {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false, &FieldError{o.path + k, fmt.Sprintf("want a string, got %s", v)}
	}
	return s, true, nil
}

// strs reads an optional list of strings (nil when absent).
func (o object) strs(k string) ([]string, error) {
	s, _, err := o.strs2(k)
	return s, err
}

func (o object) strs2(k string) ([]string, bool, error) {
	v, ok := o.get(k)
	if !ok {
		return nil, false, nil
	}
	var s []string
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, false, &FieldError{o.path + k, fmt.Sprintf("want a list of strings, got %s", v)}
	}
	return s, true, nil
}

func (o object) ints(k string) ([]int, error) {
	v, ok := o.get(k)
	if !ok {
		return nil, nil
	}
	var s []int
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, &FieldError{o.path + k, fmt.Sprintf("want a list of whole numbers, got %s", v)}
	}
	return s, nil
}

// readCompressed reads DeepSeek-V4's attention. compress_ratios may run
// past num_hidden_layers (the checkpoints list their multi-token
// prediction layers too); only the first num_hidden_layers are layers.
func readCompressed(o object, c *Config) error {
	m := &Compressed{}
	var err error
	for _, f := range []struct {
		key string
		dst *int
	}{{"q_lora_rank", &m.QLoRARank}, {"o_lora_rank", &m.OLoRARank}, {"o_groups", &m.OGroups},
		{"qk_rope_head_dim", &m.RopeDim}, {"sliding_window", &m.Window}, {"index_n_heads", &m.IndexHeads},
		{"index_head_dim", &m.IndexHeadDim}, {"index_topk", &m.IndexTopK}} {
		if *f.dst, err = o.need(f.key); err != nil {
			return err
		}
	}
	if m.HCMult, err = o.intOr("hc_mult", 1); err != nil {
		return err
	}
	if m.OGroups < 1 || c.Heads%m.OGroups != 0 {
		return &FieldError{o.path + "o_groups", fmt.Sprintf("%d does not divide num_attention_heads %d", m.OGroups, c.Heads)}
	}
	if c.KVHeads != 1 {
		return &FieldError{o.path + "num_key_value_heads", fmt.Sprintf("%d: DeepSeek-V4's compressed attention has one KV head", c.KVHeads)}
	}
	ratios, err := o.ints("compress_ratios")
	if err != nil {
		return err
	}
	if len(ratios) < c.Layers {
		return &FieldError{o.path + "compress_ratios", fmt.Sprintf("%d entries for %d layers", len(ratios), c.Layers)}
	}
	m.Ratios = slices.Clone(ratios[:c.Layers])
	for i, r := range m.Ratios {
		if r < 0 || r == 1 {
			return &FieldError{fmt.Sprintf("%scompress_ratios[%d]", o.path, i), fmt.Sprintf("%d: want 0 (window only) or a ratio of 2 or more", r)}
		}
		c.Windows[i] = m.Window
	}
	if m.Window < 1 {
		return &FieldError{o.path + "sliding_window", "want at least 1"}
	}
	c.Compressed = m
	return nil
}

// readStated reads the storage a checkpoint states: fp8 block linears
// (quantization_config.quant_method "fp8", at the top level or the text
// model's) and fp4 routed experts (expert_dtype "fp4", MXFP4: e2m1 values
// with one e8m0 scale per 32). Other quantization methods (GPTQ, AWQ) are
// not read: the caller names the dtype.
func readStated(top, o object, c *Config) error {
	for _, obj := range []object{o, top} {
		raw, ok := obj.get("quantization_config")
		if !ok || c.Stated.Weights != "" {
			continue
		}
		q, err := decodeObject(raw, obj.path+"quantization_config.")
		if err != nil {
			return err
		}
		if m, _, _ := q.str("quant_method"); m == "fp8" {
			c.Stated.Weights = FP8
		}
		if e, _, _ := q.str("expert_dtype"); e == "fp4" {
			c.Stated.Experts = MXFP4
		}
	}
	for _, obj := range []object{o, top} {
		e, ok, err := obj.str("expert_dtype")
		if err != nil {
			return err
		}
		if ok && c.Stated.Experts == "" {
			switch e {
			case "fp4":
				c.Stated.Experts = MXFP4
			case "fp8":
				c.Stated.Experts = FP8
			case "bf16", "bfloat16":
				c.Stated.Experts = BF16
			default:
				return &FieldError{obj.path + "expert_dtype", fmt.Sprintf("%q: want fp4, fp8 or bf16", e)}
			}
		}
	}
	return nil
}

// maxConfigBytes bounds a model's config.json: the largest on the Hub
// (multimodal models with vision and audio towers) are ~20 KB.
const maxConfigBytes = 4 << 20

// readConfigFile reads a regular file of at most maxConfigBytes: a named
// pipe would block the open, /dev/zero would never end.
func readConfigFile(path string) ([]byte, error) {
	if fi, err := os.Stat(path); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Op = "open" // what the caller asked for
		}
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err == nil && len(b) > maxConfigBytes {
		err = fmt.Errorf("%s: more than %d bytes (%d MiB, the cap on a model config)", path, maxConfigBytes, maxConfigBytes>>20)
	}
	return b, err
}
