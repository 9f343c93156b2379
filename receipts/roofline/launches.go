package roofline

// Kernel counts of one forward pass as vLLM runs a decode step: fused ops
// counted once (a residual add fused into the next RMSNorm, q, k and v in
// one GEMM, gate and up in one, SiLU-and-mul in one), collectives apart
// (Deployment prices them). They are the launches a step's fixed cost is
// made of: with CUDA graphs each costs the GPU a launch gap and a small
// kernel's floor; run eagerly, each costs the host a launch too.
const (
	kernelsNorm      = 1 // (fused add +) RMSNorm
	kernelsGEMM      = 1
	kernelsAttention = 1 // paged/flash attention decode
	kernelsRope      = 1
	kernelsCacheKV   = 1 // reshape_and_cache
	kernelsAct       = 1 // act-and-mul
	// A routed MoE block: router GEMM, top-k softmax, align/sort, the two
	// grouped expert GEMMs, their activation, the weighted sum.
	kernelsMoE = 7
	// The step's own: the embedding gather, the final norm, the lm_head,
	// and the sampler (temperature, top-k/top-p, sample or argmax,
	// logprobs gather).
	kernelsEmbed, kernelsHead, kernelsSampler = 1, 1, 4
)

// Launches counts the kernels one forward pass of the model launches at
// decode, as vLLM runs it (see the kernels* constants).
func (s *Shape) Launches() int {
	c := s.Config
	n := kernelsEmbed + kernelsNorm + kernelsHead + kernelsSampler
	if c.PerLayerInput > 0 {
		n += 2 // the per-layer embedding gather and its model-level projection
	}
	if c.GemmaNorms {
		n++ // the final logit softcap
	}
	for i := range c.Layers {
		n += s.layerLaunches(i)
	}
	return n
}

// layerLaunches is layer i's kernels: attention, MLP or MoE, and what the
// architecture adds.
func (s *Shape) layerLaunches(i int) int {
	c := s.Config
	n := s.attentionLaunches(i)
	if c.GemmaNorms {
		n += 2 // post-attention and post-feedforward norms
	}
	if c.PerLayerInput > 0 {
		n += 2*kernelsGEMM + kernelsAct + kernelsNorm + 1 // PLE gate, projection, act-mul, norm, add
	}
	switch m := c.MoE; {
	case m != nil && m.Layers[i]:
		n += kernelsNorm + kernelsMoE
		if m.SharedIntermediate > 0 {
			n += 2*kernelsGEMM + kernelsAct + 1 // shared expert and its add
		}
		if m.SharedGate {
			n += kernelsGEMM
		}
	default:
		n += kernelsNorm + 2*kernelsGEMM + kernelsAct
	}
	if cm := c.Compressed; cm != nil && cm.HCMult > 1 {
		n += 2 * 4 // per sub-block: hyper-connection mix GEMM, Sinkhorn, pre-sum, post-mix
	}
	return n
}

// attentionLaunches is layer i's attention kernels.
func (s *Shape) attentionLaunches(i int) int {
	c := s.Config
	switch {
	case c.Compressed != nil:
		// norm, wq_a+wkv, q and kv norms, wq_b, rope, window write,
		// attention and its combine, wo_a, wo_b.
		n := kernelsNorm + kernelsGEMM + 2*kernelsNorm + kernelsGEMM + kernelsRope + kernelsCacheKV + 2*kernelsAttention + 2*kernelsGEMM
		switch r := c.Compressed.Ratios[i]; {
		case r == SparseRatio:
			n += 4 + 8 // compressor (GEMM, pool, norm+rope, write); indexer (q and weight GEMMs, its compressor, scores, top-k)
		case r > 0:
			n += 4
		}
		return n
	case c.MLA != nil:
		// norm, fused q_a/kv_a GEMM, their norms, q_b, W_UK, rope, cache
		// write, attention and its combine, W_UV, o_proj.
		n := kernelsNorm + kernelsGEMM + 2*kernelsNorm + 2*kernelsGEMM + kernelsRope + kernelsCacheKV + 2*kernelsAttention + 2*kernelsGEMM
		if c.MLA.QLoRARank == 0 {
			n -= kernelsNorm
		}
		return n
	}
	shared := c.kvShared(i)
	n := kernelsNorm + kernelsGEMM + kernelsRope + kernelsAttention + kernelsGEMM
	if c.QKNorm {
		n += kernelsNorm // q_norm
		if !shared {
			n += kernelsNorm // k_norm
		}
	}
	if !shared {
		n += kernelsCacheKV
	}
	return n
}

// DraftLaunches is one draft pass's kernels: layers average layers and
// the lm_head and sampler.
func (s *Shape) DraftLaunches(layers int) int {
	body := 0
	for i := range s.Config.Layers {
		body += s.layerLaunches(i)
	}
	return (body*layers+s.Config.Layers/2)/s.Config.Layers + kernelsEmbed + kernelsNorm + kernelsHead + kernelsSampler
}
