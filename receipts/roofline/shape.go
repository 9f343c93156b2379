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
	// (a KV-shared layer adds none).
	KVBytesPerToken int64
	// GlobalKVBytesPerToken sums only full-attention layers: the rate at
	// which KV grows once the context is past every sliding window.
	GlobalKVBytesPerToken int64

	layers []layerCost
	// groups sums the layers by window, for Step.
	groups []layerCost
}

// layerCost is one layer's per-token figures.
type layerCost struct {
	window  int     // 0: full attention
	kvBytes int64   // KV the layer stores per token (0 when KV-shared)
	kvRead  int64   // KV the layer's attention reads per cached token
	attnQK  float64 // attention FLOPs per cached token at decode
	attnPre float64 // attention FLOPs per (query, key) pair at prefill
	moe     bool
}

// NewShape sizes a model for dtypes (zero fields: bf16, experts as
// weights).
func NewShape(c *Config, d Dtypes) (*Shape, error) {
	d = d.orDefault()
	if err := d.validate(); err != nil {
		return nil, err
	}
	if len(c.Windows) != c.Layers {
		return nil, fmt.Errorf("config: %d windows for %d layers", len(c.Windows), c.Layers)
	}
	if c.MoE != nil && len(c.MoE.Layers) != c.Layers {
		return nil, fmt.Errorf("config: %d MoE layer flags for %d layers", len(c.MoE.Layers), c.Layers)
	}
	s := &Shape{Config: c, Dtypes: d}
	h := int64(c.Hidden)
	kvb := int64(d.KV.Bytes())

	// attention is one layer's projections (linear), norms, KV stored and
	// read per token, and FLOP rates.
	attention := func(i int) (attn, attnNorm, kvStore, kvRead int64, qk, pre float64) {
		if m := c.MLA; m != nil {
			heads := int64(c.Heads)
			qDim := heads * int64(m.QKNopeHeadDim+m.QKRopeHeadDim)
			if m.QLoRARank > 0 {
				attn += h*int64(m.QLoRARank) + int64(m.QLoRARank)*qDim
				attnNorm += int64(m.QLoRARank)
			} else {
				attn += h * qDim
			}
			attn += h * int64(m.KVLoRARank+m.QKRopeHeadDim)                         // kv_a_proj_with_mqa
			attn += int64(m.KVLoRARank) * heads * int64(m.QKNopeHeadDim+m.VHeadDim) // kv_b_proj
			attn += heads * int64(m.VHeadDim) * h                                   // o_proj
			attnNorm += int64(m.KVLoRARank)
			kvStore = int64(m.KVLoRARank+m.QKRopeHeadDim) * kvb
			// Decode with kv_b absorbed (as vLLM runs MLA): scores over the
			// latent and rope key, values over the latent.
			qk = 2*float64(heads)*float64(m.KVLoRARank+m.QKRopeHeadDim) + 2*float64(heads)*float64(m.KVLoRARank)
			// Prefill expands the latent: plain attention at the full dims.
			pre = 2*float64(heads)*float64(m.QKNopeHeadDim+m.QKRopeHeadDim) + 2*float64(heads)*float64(m.VHeadDim)
			return attn, attnNorm, kvStore, kvStore, qk, pre
		}
		headDim, kvHeads := c.layerHeads(i)
		shared := c.kvShared(i)
		q := int64(c.Heads * headDim)
		k := int64(kvHeads * headDim)
		attn = h*q + q*h // q_proj, o_proj
		if !shared {
			attn += h * k // k_proj
			if !(c.KEqV && c.Windows[i] == 0) {
				attn += h * k // v_proj
			}
		}
		if c.QKVBias {
			attn += q
			if !shared {
				attn += 2 * k
			}
		}
		if c.OBias {
			attn += h
		}
		if c.QKNorm {
			attnNorm += int64(headDim) // q_norm
			if !shared {
				attnNorm += int64(headDim) // k_norm
			}
		}
		kvRead = 2 * k * kvb
		if !shared {
			kvStore = kvRead
		}
		qk = 4 * float64(q)
		return attn, attnNorm, kvStore, kvRead, qk, qk
	}
	layerNorm := 2 * h
	if c.GemmaNorms {
		layerNorm = 4 * h
	}
	if c.PerLayerInput > 0 {
		layerNorm += h // post_per_layer_input_norm
	}
	ple := int64(c.PerLayerInput)
	mlp := func(inter int64) int64 {
		p := 3 * h * inter // gate, up, down
		if c.MLPBias {
			p += 2*inter + h
		}
		return p
	}

	var linear, norms, routers int64
	wb, eb := d.Weights.Bytes(), d.Experts.Bytes()
	s.layers = make([]layerCost, c.Layers)
	var activeMoE int64 // routed expert params a token runs, over all layers
	for i := range c.Layers {
		attn, attnNorm, kvStore, kvRead, qk, pre := attention(i)
		linear += attn + 2*h*ple // per_layer_input_gate, per_layer_projection
		norms += attnNorm + layerNorm
		lc := layerCost{window: c.Windows[i], kvBytes: kvStore, kvRead: kvRead, attnQK: qk, attnPre: pre}
		if c.MoE != nil && c.MoE.Layers[i] {
			m := c.MoE
			lc.moe = true
			routers += int64(m.Experts) * h
			if m.SharedIntermediate > 0 {
				linear += mlp(int64(m.SharedIntermediate))
			}
			if m.SharedGate {
				routers += h
			}
			s.ExpertParams = mlp(int64(m.ExpertIntermediate))
			s.RoutedParams += int64(m.Experts) * s.ExpertParams
			activeMoE += int64(m.TopK) * s.ExpertParams
		} else {
			inter := int64(c.Intermediate)
			if c.DoubleWideMLP && c.kvShared(i) {
				inter *= 2
			}
			linear += mlp(inter)
		}
		s.layers[i] = lc
		s.KVBytesPerToken += kvStore
		if lc.window == 0 {
			s.GlobalKVBytesPerToken += kvStore
		}
	}
	norms += h // final norm
	if ple > 0 {
		s.PerLayerEmbeddingParams = int64(c.PerLayerVocab) * int64(c.Layers) * ple
		linear += h * int64(c.Layers) * ple // per_layer_model_projection
		norms += ple                        // per_layer_projection_norm
	}
	s.EmbeddingParams = int64(c.Vocab) * h
	if !c.TiedEmbeddings {
		s.LMHeadParams = s.EmbeddingParams
	}
	s.Params = s.EmbeddingParams + s.PerLayerEmbeddingParams + s.LMHeadParams + linear + norms + routers + s.RoutedParams
	outHead := s.LMHeadParams // the weights the lm_head multiplies
	if c.TiedEmbeddings {
		outHead = s.EmbeddingParams
	}
	s.ActiveParams = outHead + linear + norms + routers + activeMoE

	high := BF16.Bytes() // embeddings, lm_head, norms, routers
	s.ExpertBytes = float64(s.ExpertParams) * eb
	s.StreamBytes = float64(outHead+norms+routers)*high + float64(linear)*wb
	s.WeightBytes = float64(s.EmbeddingParams+s.PerLayerEmbeddingParams+s.LMHeadParams+norms+routers)*high + float64(linear)*wb + float64(s.RoutedParams)*eb
	s.ActiveBytes = s.StreamBytes + float64(activeMoE)*eb
	s.groups = groupByWindow(s.layers)
	return s, nil
}

// groupByWindow sums layer costs by sliding window (full attention first).
func groupByWindow(layers []layerCost) []layerCost {
	var out []layerCost
	for _, l := range layers {
		i := slices.IndexFunc(out, func(g layerCost) bool { return g.window == l.window })
		if i < 0 {
			out = append(out, layerCost{window: l.window})
			i = len(out) - 1
		}
		g := &out[i]
		g.kvBytes += l.kvBytes
		g.kvRead += l.kvRead
		g.attnQK += l.attnQK
		g.attnPre += l.attnPre
	}
	slices.SortFunc(out, func(a, b layerCost) int { return a.window - b.window })
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
	for _, l := range s.layers {
		w = max(w, l.window)
	}
	return w
}

// Attention names the attention kind: "mla" or "gqa" (MHA is GQA with as
// many KV heads as query heads).
func (s *Shape) Attention() string {
	if s.Config.MLA != nil {
		return "mla"
	}
	return "gqa"
}
