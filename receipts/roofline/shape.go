package roofline

import (
	"fmt"
	"math"
	"slices"
)

// Shape is a model's size in parameters and bytes for given dtypes: what
// it holds, what one token reads and multiplies, what its KV costs.
type Shape struct {
	Config *Config
	Dtypes Dtypes

	// Params counts every weight of the text model.
	Params int64
	// EmbeddingParams is the input token embedding; LMHeadParams the
	// output projection when untied (0 when tied: the embedding is the
	// lm_head).
	EmbeddingParams, LMHeadParams int64
	// PerLayerEmbeddingParams is Gemma 4's per-layer embedding table (PLE):
	// looked up per token like the input embedding, never streamed whole.
	// A published "effective" size leaves it out.
	PerLayerEmbeddingParams int64
	// ExpertParams is one routed expert; RoutedParams all of them.
	ExpertParams, RoutedParams int64
	// ActiveParams are the weights one decoded token multiplies: all but
	// the input embedding gather and the routed experts it does not
	// choose.
	ActiveParams int64

	// WeightBytes is the footprint of every weight.
	WeightBytes float64
	// StreamBytes is what a decode step reads whatever the batch: all
	// weights but the routed experts and the input-embedding gather.
	StreamBytes float64
	// ExpertBytes is one routed expert.
	ExpertBytes float64
	// ActiveBytes is what one token reads: StreamBytes plus its k experts
	// in every MoE layer (the decode weight read at batch 1).
	ActiveBytes float64

	// KVBytesPerToken is the KV one token adds, summed over all layers
	// (a KV-shared layer adds none; a compressed layer adds its share of a
	// pooled row).
	KVBytesPerToken int64
	// GlobalKVBytesPerToken sums only what is not windowed: the rate at
	// which KV grows once the context is past every sliding window.
	GlobalKVBytesPerToken int64

	// split counts what tensor parallelism shards over GPUs (column and
	// row parallel linears, the vocab-parallel lm_head, the experts);
	// replicated what every GPU holds whole (norms, routers, the low-rank
	// down-projections of MLA and DeepSeek-V4, the V4 indexer).
	split, replicated weights

	layers []layerCost
	// groups sums the layers' KV streams by geometry, for Step.
	groups []kvStream
}

// weights is one share of a model's weights: bytes streamed per step
// (routed experts apart), and parameters a decoded token multiplies
// (its k experts included, the lm_head apart).
type weights struct {
	streamBytes float64
	active      int64
}

// layerCost is one layer's attention: its KV streams.
type layerCost struct {
	streams []kvStream
	moe     bool
}

// kvStream is one kind of row a layer's attention keeps: one per token
// (ratio 1) for standard attention, MLA and DeepSeek-V4's raw window, one
// per ratio tokens for V4's compressed rows. A query reads every held row
// (or the topK best), held rows being min(context ÷ ratio, limit).
type kvStream struct {
	ratio int // tokens per row
	limit int // rows held at most (a sliding window); 0: all
	topK  int // rows a query reads at most; 0: all held
	// storeBytes is what a row stores (0 for a KV-shared layer); readBytes
	// what reading it moves.
	storeBytes, readBytes int64
	// heads is the KV heads in the row: tensor parallelism gives each GPU
	// ceil(heads/tp) of them (a one-head row is replicated).
	heads int
	// flops is the attention FLOPs per row read at decode, pre per
	// (query, row) pair at prefill; replicated says every GPU computes
	// them whole (the V4 indexer), not its share of the query heads.
	flops, pre float64
	replicated bool
}

// key is a stream's geometry: streams of one key add up.
func (k kvStream) key() [5]int {
	r := 0
	if k.replicated {
		r = 1
	}
	return [5]int{k.limit, k.ratio, k.topK, k.heads, r}
}

// held is the rows the stream keeps for a context.
func (k kvStream) held(context float64) float64 {
	rows := context / float64(k.ratio)
	if k.limit > 0 {
		rows = math.Min(rows, float64(k.limit))
	}
	return rows
}

// read is the rows a query reads at a context.
func (k kvStream) read(context float64) float64 {
	rows := k.held(context)
	if k.topK > 0 {
		rows = math.Min(rows, float64(k.topK))
	}
	return rows
}

// pairs counts (query, row) pairs of causal attention over n tokens:
// Σ_{t=1..n} min(t ÷ ratio, cap), cap the window or topK.
func (k kvStream) pairs(n int) float64 {
	cap := k.limit
	if k.topK > 0 && (cap == 0 || k.topK < cap) {
		cap = k.topK
	}
	return rowPairs(n, k.ratio, cap)
}

// rowPairs is Σ_{t=1..n} min(t ÷ ratio, cap) (cap 0: no cap).
func rowPairs(n, ratio, cap int) float64 {
	t, r := float64(n), float64(ratio)
	if cap <= 0 || t <= float64(cap)*r {
		return t * (t + 1) / (2 * r)
	}
	m := float64(cap) * r
	return m*(m+1)/(2*r) + (t-m)*float64(cap)
}

// causalPairs counts (query, key) pairs of causal attention over n tokens
// when each sees at most window keys (0: all before it): Σ min(t, w).
func causalPairs(n, window int) float64 { return rowPairs(n, 1, window) }

// NewShape sizes a model for dtypes (zero fields: what the config states,
// else bf16; experts as weights).
func NewShape(c *Config, d Dtypes) (*Shape, error) {
	d = d.over(c.Stated).orDefault()
	if err := d.validate(); err != nil {
		return nil, err
	}
	if len(c.Windows) != c.Layers {
		return nil, fmt.Errorf("config: %d windows for %d layers", len(c.Windows), c.Layers)
	}
	if c.MoE != nil && len(c.MoE.Layers) != c.Layers {
		return nil, fmt.Errorf("config: %d MoE layer flags for %d layers", len(c.MoE.Layers), c.Layers)
	}
	if m := c.Compressed; m != nil && len(m.Ratios) != c.Layers {
		return nil, fmt.Errorf("config: %d compress ratios for %d layers", len(m.Ratios), c.Layers)
	}
	s := &Shape{Config: c, Dtypes: d}
	h := int64(c.Hidden)
	var p paramCount
	s.layers = make([]layerCost, c.Layers)
	var activeMoE int64 // routed expert params a token runs, over all layers
	for i := range c.Layers {
		a := s.attention(i, &p)
		lc := layerCost{streams: a}
		p.linear += 2 * h * int64(c.PerLayerInput) // per_layer_input_gate, per_layer_projection
		p.norms += s.layerNorms()
		if m := c.MoE; m != nil && m.Layers[i] {
			lc.moe = true
			p.routers += int64(m.Experts) * h
			if m.SharedIntermediate > 0 {
				p.linear += s.mlp(int64(m.SharedIntermediate))
			}
			if m.SharedGate {
				p.routers += h
			}
			s.ExpertParams = s.mlp(int64(m.ExpertIntermediate))
			s.RoutedParams += int64(m.Experts) * s.ExpertParams
			activeMoE += int64(m.TopK) * s.ExpertParams
		} else {
			inter := int64(c.Intermediate)
			if c.DoubleWideMLP && c.kvShared(i) {
				inter *= 2
			}
			p.linear += s.mlp(inter)
		}
		s.layers[i] = lc
		for _, k := range a {
			perToken := int64(math.Round(float64(k.storeBytes) / float64(k.ratio)))
			s.KVBytesPerToken += perToken
			if k.limit == 0 {
				s.GlobalKVBytesPerToken += perToken
			}
		}
	}
	s.total(p, activeMoE)
	s.groups = groupStreams(s.layers)
	return s, nil
}

// paramCount accumulates a model's parameters by kind.
type paramCount struct {
	linear, replLinear int64 // block linears: sharded, replicated
	norms, routers     int64 // kept in bf16, replicated
	hc                 int64 // hyper-connection mixers (bf16, replicated)
}

// total sums the parameter kinds into the Shape's totals and bytes.
func (s *Shape) total(p paramCount, activeMoE int64) {
	c, d, h := s.Config, s.Dtypes, int64(s.Config.Hidden)
	ple := int64(c.PerLayerInput)
	p.norms += h // final norm
	if ple > 0 {
		s.PerLayerEmbeddingParams = int64(c.PerLayerVocab) * int64(c.Layers) * ple
		p.linear += h * int64(c.Layers) * ple // per_layer_model_projection
		p.norms += ple                        // per_layer_projection_norm
	}
	if m := c.Compressed; m != nil && m.HCMult > 1 {
		p.hc += int64(m.HCMult) * int64(m.HCMult) * h // the head's mixer
	}
	s.EmbeddingParams = int64(c.Vocab) * h
	if !c.TiedEmbeddings {
		s.LMHeadParams = s.EmbeddingParams
	}
	high := p.norms + p.routers + p.hc // bf16, replicated
	linear := p.linear + p.replLinear
	s.Params = s.EmbeddingParams + s.PerLayerEmbeddingParams + s.LMHeadParams + linear + high + s.RoutedParams
	outHead := s.outHead()
	s.ActiveParams = outHead + linear + high + activeMoE

	hb, wb, eb := BF16.Bytes(), d.Weights.Bytes(), d.Experts.Bytes()
	s.ExpertBytes = float64(s.ExpertParams) * eb
	s.StreamBytes = float64(outHead+high)*hb + float64(linear)*wb
	s.WeightBytes = float64(s.EmbeddingParams+s.PerLayerEmbeddingParams+s.LMHeadParams+high)*hb + float64(linear)*wb + float64(s.RoutedParams)*eb
	s.ActiveBytes = s.StreamBytes + float64(activeMoE)*eb
	s.split = weights{streamBytes: float64(outHead)*hb + float64(p.linear)*wb, active: p.linear + activeMoE}
	s.replicated = weights{streamBytes: float64(high)*hb + float64(p.replLinear)*wb, active: high + p.replLinear}
}

// outHead is the weights the lm_head multiplies.
func (s *Shape) outHead() int64 {
	if s.Config.TiedEmbeddings {
		return s.EmbeddingParams
	}
	return s.LMHeadParams
}

// layerNorms is one layer's norms outside attention.
func (s *Shape) layerNorms() int64 {
	h := int64(s.Config.Hidden)
	n := 2 * h
	if s.Config.GemmaNorms {
		n = 4 * h
	}
	if s.Config.PerLayerInput > 0 {
		n += h // post_per_layer_input_norm
	}
	return n
}

// mlp is a gated MLP of width inter.
func (s *Shape) mlp(inter int64) int64 {
	h := int64(s.Config.Hidden)
	p := 3 * h * inter // gate, up, down
	if s.Config.MLPBias {
		p += 2*inter + h
	}
	return p
}

// attention counts layer i's attention parameters into p and returns its
// KV streams.
func (s *Shape) attention(i int, p *paramCount) []kvStream {
	c := s.Config
	switch {
	case c.Compressed != nil:
		return s.compressedAttention(i, p)
	case c.MLA != nil:
		return s.mlaAttention(p)
	}
	h := int64(c.Hidden)
	kvb := int64(s.Dtypes.KV.Bytes())
	headDim, kvHeads := c.layerHeads(i)
	shared := c.kvShared(i)
	q := int64(c.Heads * headDim)
	k := int64(kvHeads * headDim)
	p.linear += h*q + q*h // q_proj, o_proj
	if !shared {
		p.linear += h * k // k_proj
		if !(c.KEqV && c.Windows[i] == 0) {
			p.linear += h * k // v_proj
		}
	}
	if c.QKVBias {
		p.linear += q
		if !shared {
			p.linear += 2 * k
		}
	}
	if c.OBias {
		p.linear += h
	}
	if c.QKNorm {
		p.norms += int64(headDim) // q_norm
		if !shared {
			p.norms += int64(headDim) // k_norm
		}
	}
	st := kvStream{ratio: 1, limit: c.Windows[i], readBytes: 2 * k * kvb, heads: kvHeads, flops: 4 * float64(q), pre: 4 * float64(q)}
	if !shared {
		st.storeBytes = st.readBytes
	}
	return []kvStream{st}
}

// mlaAttention is multi-head latent attention: one latent per token,
// replicated on every GPU; its down-projections are replicated too (as
// vLLM runs them), the per-head up-projections sharded.
func (s *Shape) mlaAttention(p *paramCount) []kvStream {
	c, m := s.Config, s.Config.MLA
	h := int64(c.Hidden)
	kvb := int64(s.Dtypes.KV.Bytes())
	heads := int64(c.Heads)
	qDim := heads * int64(m.QKNopeHeadDim+m.QKRopeHeadDim)
	if m.QLoRARank > 0 {
		p.replLinear += h * int64(m.QLoRARank) // q_a_proj
		p.linear += int64(m.QLoRARank) * qDim  // q_b_proj
		p.norms += int64(m.QLoRARank)
	} else {
		p.linear += h * qDim
	}
	p.replLinear += h * int64(m.KVLoRARank+m.QKRopeHeadDim)                     // kv_a_proj_with_mqa
	p.linear += int64(m.KVLoRARank) * heads * int64(m.QKNopeHeadDim+m.VHeadDim) // kv_b_proj
	p.linear += heads * int64(m.VHeadDim) * h                                   // o_proj
	p.norms += int64(m.KVLoRARank)
	row := int64(m.KVLoRARank+m.QKRopeHeadDim) * kvb
	// Decode with kv_b absorbed (as vLLM runs MLA): scores over the latent
	// and rope key, values over the latent. Prefill expands the latent:
	// plain attention at the full dims.
	qk := 2*float64(heads)*float64(m.KVLoRARank+m.QKRopeHeadDim) + 2*float64(heads)*float64(m.KVLoRARank)
	pre := 2*float64(heads)*float64(m.QKNopeHeadDim+m.QKRopeHeadDim) + 2*float64(heads)*float64(m.VHeadDim)
	return []kvStream{{ratio: 1, storeBytes: row, readBytes: row, heads: 1, flops: qk, pre: pre}}
}

// compressedAttention is DeepSeek-V4's layer i (its parameter layout as
// the reference inference code defines it: wq_a, q_norm, wq_b, wkv,
// kv_norm, grouped wo_a and wo_b, attention sinks; per compressed layer a
// compressor (wkv, wgate, ape, norm; doubled width when overlapping, at
// ratio 4); per sparse layer an indexer (wq_b, weights_proj and its own
// compressor); two hyper-connection mixers per layer). Its streams: the
// raw window, the compressed rows, the indexer's keys.
func (s *Shape) compressedAttention(i int, p *paramCount) []kvStream {
	c, m := s.Config, s.Config.Compressed
	h, hd, heads := int64(c.Hidden), int64(c.HeadDim), int64(c.Heads)
	p.replLinear += h*int64(m.QLoRARank) + h*hd // wq_a, wkv
	p.norms += int64(m.QLoRARank) + hd          // q_norm, kv_norm
	p.linear += int64(m.QLoRARank) * heads * hd // wq_b
	p.linear += heads*hd*int64(m.OLoRARank) + int64(m.OGroups*m.OLoRARank)*h
	p.norms += heads // attention sinks
	if m.HCMult > 1 {
		n := int64(m.HCMult)
		p.hc += 2 * ((2+n)*n*n*h + (2+n)*n + 3) // attn and ffn mixers, bases, scales
	}
	compressor := func(r int, dim int64) int64 {
		coff := int64(1)
		if r == SparseRatio {
			coff = 2 // overlapping windows
		}
		return 2*h*coff*dim + int64(r)*coff*dim + dim
	}
	attn := 4 * float64(heads) * float64(hd) // QKᵀ and PV over one shared key/value
	row := v4Row(hd, int64(m.RopeDim), s.Dtypes.KV)
	streams := []kvStream{{ratio: 1, limit: m.Window, storeBytes: row, readBytes: row, heads: 1, flops: attn, pre: attn}}
	r := m.Ratios[i]
	if r == 0 {
		return streams
	}
	p.replLinear += compressor(r, hd)
	comp := kvStream{ratio: r, storeBytes: row, readBytes: row, heads: 1, flops: attn, pre: attn}
	if r == SparseRatio {
		ih, id := int64(m.IndexHeads), int64(m.IndexHeadDim)
		p.replLinear += int64(m.QLoRARank)*ih*id + h*ih + compressor(r, id)
		comp.topK = m.IndexTopK
		idx := 2 * float64(ih) * float64(id) // scores of every index head
		ir := v4IndexerRow(id)
		streams = append(streams, kvStream{ratio: r, storeBytes: ir, readBytes: ir, heads: 1, flops: idx, pre: idx, replicated: true})
	}
	return append(streams, comp)
}

// v4Row is the bytes of one DeepSeek-V4 KV row (window or compressed) as
// vLLM lays it out: in fp8 the NoPE part as fp8, the rotary part kept in
// bf16, one scale byte per 64 NoPE values and a pad byte (584 bytes at
// head_dim 512, rope 64: "head_bytes" in
// vllm/model_executor/layers/deepseek_v4_attention.py); otherwise the
// head in the KV dtype.
func v4Row(headDim, rope int64, kv Dtype) int64 {
	if kv != FP8 {
		return headDim * int64(kv.Bytes())
	}
	nope := headDim - rope
	return nope + 2*rope + nope/64 + 1
}

// v4IndexerRow is one row of the V4 indexer's key cache: fp8 values and
// one fp32 scale per 128, whatever the KV dtype ("the same layout as V3.2:
// 128 fp8 + 4 fp32 scale = 132", DeepseekV4IndexerCache in vLLM).
func v4IndexerRow(dim int64) int64 { return dim + dim/128*4 }

// groupStreams sums the layers' streams by geometry (full attention first).
func groupStreams(layers []layerCost) []kvStream {
	var out []kvStream
	for _, l := range layers {
		for _, k := range l.streams {
			i := slices.IndexFunc(out, func(g kvStream) bool { return g.key() == k.key() })
			if i < 0 {
				out = append(out, kvStream{ratio: k.ratio, limit: k.limit, topK: k.topK, heads: k.heads, replicated: k.replicated})
				i = len(out) - 1
			}
			g := &out[i]
			g.storeBytes += k.storeBytes
			g.readBytes += k.readBytes
			g.flops += k.flops
			g.pre += k.pre
		}
	}
	slices.SortStableFunc(out, func(a, b kvStream) int {
		if a.limit != b.limit {
			return a.limit - b.limit
		}
		return a.ratio - b.ratio
	})
	return out
}

// MoELayers counts the layers whose MLP is a mixture of experts.
func (s *Shape) MoELayers() int {
	if s.Config.MoE == nil {
		return 0
	}
	return s.Config.MoE.MoELayers()
}

// ExpertsRead is the expected number of distinct routed experts a MoE
// layer reads for n tokens routed uniformly and independently, k of E
// each: E · (1 − (1 − k/E)^n). It is k at n = 1 and tends to E. 0 for a
// dense model.
func (s *Shape) ExpertsRead(n int) float64 {
	m := s.Config.MoE
	if m == nil || n <= 0 {
		return 0
	}
	e, k := float64(m.Experts), float64(m.TopK)
	return e * (1 - math.Pow(1-k/e, float64(n)))
}

// SlidingWindow is the largest sliding window of any layer (0: none).
func (s *Shape) SlidingWindow() int {
	w := 0
	for _, g := range s.groups {
		if g.ratio == 1 {
			w = max(w, g.limit)
		}
	}
	return w
}

// KVBytes is the KV one sequence of context tokens holds: every layer's
// rows, a windowed layer's capped at its window.
func (s *Shape) KVBytes(context int) float64 { return s.kvHeld(context, 1) }

// kvHeld is KVBytes on one of tp GPUs: ceil(heads/tp) of each layer's KV
// heads.
func (s *Shape) kvHeld(context, tp int) float64 {
	b := 0.0
	for _, g := range s.groups {
		share := math.Ceil(float64(g.heads)/float64(tp)) / float64(g.heads)
		b += g.held(float64(context)) * float64(g.storeBytes) * share
	}
	return b
}

// KVBytesPerGPU is KVBytesPerToken on one of tp GPUs (a replicated
// one-head cache counts whole on each).
func (s *Shape) KVBytesPerGPU(tp int) float64 {
	b := 0.0
	for _, g := range s.groups {
		share := math.Ceil(float64(g.heads)/float64(max(tp, 1))) / float64(g.heads)
		b += float64(g.storeBytes) / float64(g.ratio) * share
	}
	return b
}

// WeightBytesPerGPU is what one of tp GPUs holds: its shard of the
// sharded weights (the embedding and lm_head vocab-parallel, each
// expert's share of its width) and every replicated weight whole.
func (s *Shape) WeightBytesPerGPU(tp int) float64 {
	repl := s.replicated.streamBytes
	return (s.WeightBytes-repl)/float64(max(tp, 1)) + repl
}

// Attention names the attention kind: "csa+hca" (DeepSeek-V4's compressed
// sparse and heavily compressed attention), "mla" or "gqa" (MHA is GQA
// with as many KV heads as query heads).
func (s *Shape) Attention() string {
	switch {
	case s.Config.Compressed != nil:
		return "csa+hca"
	case s.Config.MLA != nil:
		return "mla"
	}
	return "gqa"
}
