package roofline

import "math"

// Routed experts as a grouped GEMM runs them. A MoE layer's expert GEMMs
// are one kernel over all experts, each expert's tokens computed in row
// blocks of the kernel's block size: an expert that got 3 tokens computes
// a whole block of 8 rows. With MXFP4 experts on a GPU without FP4 tensor
// cores (Hopper), vLLM runs them weight-only (W4A16: the 4-bit weights
// dequantized to bf16 in the kernel, bf16 tensor-core MMAs), in
// fused_marlin_moe, whose block is the smallest of 8, 16, 32, 48, 64 rows
// with tokens·k ÷ E ÷ block < 0.9 (vllm/model_executor/layers/fused_moe/
// fused_marlin_moe.py, "M block size selection logic"). The padded rows
// cost FLOPs, not bytes: at batch 1 the step reads its experts whatever
// the rows, at a large batch the padding is what the MMAs compute.

// expertBlocks are fused_marlin_moe's candidate row blocks.
var expertBlocks = [...]int{8, 16, 32, 48, 64}

// ExpertBlock is the grouped GEMM's row block for n tokens routed k of E
// (fused_marlin_moe's rule); 0 for a dense model.
func (s *Shape) ExpertBlock(n int) int {
	m := s.Config.MoE
	if m == nil || n <= 0 {
		return 0
	}
	b := expertBlocks[len(expertBlocks)-1]
	for _, c := range expertBlocks {
		if float64(n)*float64(m.TopK)/float64(m.Experts)/float64(c) < 0.9 {
			b = c
			break
		}
	}
	return b
}

// ExpertRows is the expected rows one MoE layer's grouped GEMM computes
// for n tokens: over the E experts, each expert's token count X rounded
// up to the block, X ~ Binomial(n, k/E) under uniform independent routing
// (E · block · E[⌈X/block⌉]). It is n·k when every expert's count fills
// its blocks, more when blocks are part empty.
func (s *Shape) ExpertRows(n int) float64 {
	m := s.Config.MoE
	if m == nil || n <= 0 {
		return 0
	}
	b := s.ExpertBlock(n)
	p := float64(m.TopK) / float64(m.Experts)
	// E[⌈X/b⌉] by the binomial's pmf, walked up from its mode's
	// neighbourhood in logs (n reaches a prefill chunk's tokens).
	mean := float64(n) * p
	sd := math.Sqrt(mean * (1 - p))
	lo, hi := max(0, int(mean-12*sd-1)), min(n, int(mean+12*sd+2))
	lp, lq := math.Log(p), math.Log1p(-p)
	ln := lgamma(n + 1)
	blocks := 0.0
	for x := max(lo, 1); x <= hi; x++ {
		pmf := math.Exp(ln - lgamma(x+1) - lgamma(n-x+1) + float64(x)*lp + float64(n-x)*lq)
		blocks += pmf * math.Ceil(float64(x)/float64(b))
	}
	return float64(m.Experts) * float64(b) * blocks
}

func lgamma(n int) float64 {
	v, _ := math.Lgamma(float64(n))
	return v
}
