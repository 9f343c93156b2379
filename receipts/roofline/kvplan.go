package roofline

import (
	"fmt"
	"math"
)

// KVLayout is how a server sizes a model's KV cache: vLLM's
// --block-size, --gpu-memory-utilization, --tensor-parallel-size, and
// whether its hybrid KV cache manager groups sliding-window layers apart
// (vLLM's default; --disable-hybrid-kv-cache-manager turns it off, and
// every layer then holds every token).
type KVLayout struct {
	BlockSize   int
	Utilization float64
	TP          int
	NoHybrid    bool
	// ActivationBytes is the memory the profile run's activations take
	// besides the weights (0: Activations' estimate).
	ActivationBytes float64
	// MaxNumBatchedTokens and MaxNumSeqs size that estimate.
	MaxNumBatchedTokens, MaxNumSeqs int
}

// KVPlan is the KV cache a layout yields on one GPU, as vLLM computes
// it: available = memory × utilization − weights − activations; the
// model's storing layers grouped by kind; num_blocks = available ÷
// (page per token × layers per group × block size).
type KVPlan struct {
	MemoryBytes, WeightBytes, ActivationBytes, AvailableBytes float64
	// BytesPerToken is what one token of capacity costs: every storing
	// layer's KV when all hold every token; with the hybrid manager the
	// layers of one group (the largest page, times the group size), as
	// the full-attention group does (sliding-window groups hold only their
	// window out of the same blocks); DeepSeek-V4's compressed rows.
	BytesPerToken float64
	// Basis says which layers BytesPerToken counts.
	Basis string
	// NumBlocks is cache_config_info's num_gpu_blocks; Tokens NumBlocks ×
	// BlockSize (the budget a client reads from it).
	NumBlocks, BlockSize int
	Tokens               int
}

// KVPlan sizes the KV cache of s on one of l.TP GPUs of h.
func (s *Shape) KVPlan(h Hardware, l KVLayout) (KVPlan, error) {
	if l.BlockSize < 1 {
		return KVPlan{}, fmt.Errorf("block size %d: want at least 1", l.BlockSize)
	}
	if !(l.Utilization > 0 && l.Utilization <= 1) {
		return KVPlan{}, fmt.Errorf("gpu memory utilization %v: want (0, 1]", l.Utilization)
	}
	if !(h.MemoryBytes > 0) {
		return KVPlan{}, fmt.Errorf("gpu %s: memory size unknown", h.Name)
	}
	tp := max(l.TP, 1)
	p := KVPlan{MemoryBytes: h.MemoryBytes, WeightBytes: s.WeightBytesPerGPU(tp), ActivationBytes: l.ActivationBytes, BlockSize: l.BlockSize}
	if p.ActivationBytes == 0 {
		p.ActivationBytes = s.Activations(l.MaxNumBatchedTokens, l.MaxNumSeqs, tp)
	}
	p.AvailableBytes = h.MemoryBytes*l.Utilization - p.WeightBytes - p.ActivationBytes
	p.BytesPerToken, p.Basis = s.capacityBasis(tp, !l.NoHybrid)
	if p.AvailableBytes <= 0 || p.BytesPerToken <= 0 {
		return p, fmt.Errorf("%.4g bytes of weights and %.4g of activations per GPU leave no KV memory in %.4g × %v",
			p.WeightBytes, p.ActivationBytes, h.MemoryBytes, l.Utilization)
	}
	p.NumBlocks = int(math.Floor(p.AvailableBytes / (p.BytesPerToken * float64(l.BlockSize))))
	p.Tokens = p.NumBlocks * l.BlockSize
	return p, nil
}

// capacityBasis is the bytes one token of capacity costs on one of tp
// GPUs, and which layers that counts.
func (s *Shape) capacityBasis(tp int, hybrid bool) (float64, string) {
	share := func(k kvStream) float64 { return math.Ceil(float64(k.heads)/float64(tp)) / float64(k.heads) }
	if s.Config.Compressed != nil {
		b := 0.0
		for _, g := range s.groups {
			if g.limit == 0 {
				b += float64(g.storeBytes) / float64(g.ratio) * share(g)
			}
		}
		return b, "compressed rows (the 128-token windows not reserved)"
	}
	var full, sliding, page float64
	for _, l := range s.layers {
		for _, k := range l.streams {
			if k.storeBytes == 0 {
				continue
			}
			if k.limit > 0 {
				sliding++
			} else {
				full++
			}
			page = math.Max(page, float64(k.storeBytes)*share(k))
		}
	}
	all := s.KVBytesPerGPU(tp)
	if !hybrid || sliding == 0 || full == 0 {
		return all, "every storing layer holds every token"
	}
	group := math.Min(full, sliding)
	return page * group, fmt.Sprintf("hybrid manager: groups of %g layers, %g full-attention and %g sliding-window layers storing KV; a token costs one group's pages", group, full, sliding)
}

// Activations estimates the memory vLLM's profile run leaves allocated
// besides weights and KV, on one of tp GPUs: one layer's live
// activations for a step of tokens (the residual, the attention
// projections and the widest MLP's gate and up halves, bf16; vLLM frees
// between layers) and the sampler's float32 logits for seqs sequences.
// CUDA graph pools and the allocator's fragmentation are not counted.
func (s *Shape) Activations(tokens, seqs, tp int) float64 {
	c := s.Config
	inter := c.Intermediate
	if m := c.MoE; m != nil {
		inter = max(inter, m.SharedIntermediate, m.ExpertIntermediate*m.TopK)
	}
	if c.DoubleWideMLP {
		inter *= 2
	}
	n := float64(max(tp, 1))
	perToken := (4*float64(c.Hidden) + 2*float64(inter)/n) * BF16.Bytes()
	return float64(tokens)*perToken + float64(seqs)*float64(c.Vocab)*4
}
