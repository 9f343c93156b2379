package stub

import "github.com/vetbench/vetbench/receipts/roofline"

// Kernel classes in sequence. A decode or prefill step is a chain of
// kernels, each of which waits for the one before (a layer's attention
// needs its projections, its MoE the attention's output): a kernel is as
// slow as the larger of its bytes and its FLOPs, and the step is the sum
// of its kernels, not one max over the whole step's bytes and FLOPs. The
// one-max model (bounded) lets a batch's attention FLOPs hide under its
// weight reads and its GEMM FLOPs under its expert reads, which no GPU
// does. A phased profile (Physical.GEMMShare > 0) prices three classes:
//
//   - dense linears (attention projections, shared expert, lm_head): their
//     weight bytes at the bandwidth share, their FLOPs at GEMMShare;
//   - routed experts, one grouped GEMM per MoE layer: the experts the
//     step's tokens route to (ExpertsRead) at the bandwidth share, the
//     rows the kernel computes (every expert's tokens rounded up to its
//     row block, roofline.Shape.ExpertRows) at GEMMShare;
//   - attention: the KV it reads at the bandwidth share, its FLOPs at the
//     family's AttentionShare.

// phased is a cost's time as the three kernel classes in sequence.
func (m *physical) phased(c roofline.StepCost) float64 {
	if c.Bytes == 0 && c.FLOPs == 0 {
		return 0
	}
	bw := m.bw * m.hw.Bandwidth.Value
	gemm, attn := m.gemm*m.hw.FLOPs.Value, m.at*m.hw.FLOPs.Value
	dense := max((c.WeightBytes-c.ExpertBytes)/bw, (c.WeightFLOPs-c.ExpertFLOPs)/gemm)
	experts := max(c.ExpertBytes/bw, c.PaddedExpertFLOPs/gemm)
	return dense + experts + max(c.KVBytes/bw, c.AttentionFLOPs/attn)
}

// price is a cost's time: phased when the profile says so, the one-max
// roofline otherwise.
func (m *physical) price(c roofline.StepCost) float64 {
	if m.gemm > 0 {
		return m.phased(c)
	}
	return m.bounded(c)
}
