package roofline

import (
	"fmt"
	"math"
)

// StepCost is what one engine step moves and computes.
type StepCost struct {
	// Batch is the number of sequences in the step; Context the tokens
	// each has cached (decode) or the prompt length (prefill).
	Batch, Context int
	// Tokens is what the step computes: Batch new tokens for decode, the
	// prompt's tokens for prefill.
	Tokens int
	// ExpertsRead is the expected distinct routed experts per MoE layer
	// (0 for a dense model).
	ExpertsRead float64

	WeightBytes, KVBytes, Bytes        float64
	WeightFLOPs, AttentionFLOPs, FLOPs float64
	// ExpertBytes and ExpertFLOPs are the routed experts' part of
	// WeightBytes and WeightFLOPs (one row per token and expert it routes
	// to); PaddedExpertFLOPs is what the grouped GEMM computes, every
	// expert's rows rounded up to its row block (ExpertRows).
	ExpertBytes, ExpertFLOPs, PaddedExpertFLOPs float64
}

// Intensity is FLOPs per byte moved.
func (c StepCost) Intensity() float64 {
	if c.Bytes == 0 {
		return 0
	}
	return c.FLOPs / c.Bytes
}

// scale returns c with its bytes and FLOPs times f (a cost summed over f
// GPUs).
func (c StepCost) scale(f float64) StepCost {
	c.WeightBytes, c.KVBytes, c.Bytes = f*c.WeightBytes, f*c.KVBytes, f*c.Bytes
	c.WeightFLOPs, c.AttentionFLOPs, c.FLOPs = f*c.WeightFLOPs, f*c.AttentionFLOPs, f*c.FLOPs
	c.ExpertBytes, c.ExpertFLOPs, c.PaddedExpertFLOPs = f*c.ExpertBytes, f*c.ExpertFLOPs, f*c.PaddedExpertFLOPs
	return c
}

// add returns c with d's bytes and FLOPs added.
func (c StepCost) add(d StepCost) StepCost {
	c.WeightBytes, c.KVBytes, c.Bytes = c.WeightBytes+d.WeightBytes, c.KVBytes+d.KVBytes, c.Bytes+d.Bytes
	c.WeightFLOPs, c.AttentionFLOPs, c.FLOPs = c.WeightFLOPs+d.WeightFLOPs, c.AttentionFLOPs+d.AttentionFLOPs, c.FLOPs+d.FLOPs
	c.ExpertBytes, c.ExpertFLOPs, c.PaddedExpertFLOPs = c.ExpertBytes+d.ExpertBytes, c.ExpertFLOPs+d.ExpertFLOPs, c.PaddedExpertFLOPs+d.PaddedExpertFLOPs
	return c
}

// Decode prices one decode step of batch sequences that each hold context
// tokens: weights read once (routed experts as ExpertsRead(batch)), the
// KV of every sequence read, one token per sequence computed.
func (s *Shape) Decode(batch, context int) (StepCost, error) {
	if batch < 1 {
		return StepCost{}, fmt.Errorf("batch %d: want at least 1", batch)
	}
	if context < 0 {
		return StepCost{}, fmt.Errorf("context %d: want at least 0", context)
	}
	return s.cost(uniform(batch, Part{Context: context, Tokens: 1}), 1), nil
}

// uniform is n copies of one part.
func uniform(n int, p Part) []Part {
	parts := make([]Part, n)
	for i := range parts {
		parts[i] = p
	}
	return parts
}

// Prefill prices the prefill of one prompt of tokens in one step: weights
// read once (routed experts as ExpertsRead(tokens)), the prompt's KV
// written, every token computed but logits for the last one only, causal
// attention (each token attends to those before it, within its window).
func (s *Shape) Prefill(tokens int) (StepCost, error) {
	if tokens < 1 {
		return StepCost{}, fmt.Errorf("prompt of %d tokens: want at least 1", tokens)
	}
	return s.cost([]Part{{Tokens: tokens}}, 1), nil
}

// Part is one sequence's share of an engine step: Context tokens already
// cached, Tokens computed now (1 for a decode, a chunk or a whole prompt
// for a prefill, 1 + k for a speculative verify). Logits is how many of
// them the lm_head runs on (0 reads as 1: the last; a verify step needs
// all of them).
type Part struct {
	Context, Tokens, Logits int
}

// Step prices one engine step of mixed work, as vLLM batches it: the
// weights read once for every token of the step (routed experts as
// ExpertsRead of the step's tokens), each decode part's KV read (as
// Decode), each prefill part's cached prefix read and its own KV written,
// causal attention over its chunk, and logits for one token per part.
// Step of decodes alone is Decode; Step of one part from context 0 is
// Prefill.
func (s *Shape) Step(parts []Part) (StepCost, error) {
	if err := checkParts(parts); err != nil {
		return StepCost{}, err
	}
	return s.cost(parts, 1), nil
}

func checkParts(parts []Part) error {
	if len(parts) == 0 {
		return fmt.Errorf("a step of no sequences")
	}
	for _, p := range parts {
		if p.Tokens < 1 || p.Context < 0 || p.Logits < 0 || p.Logits > p.Tokens {
			return fmt.Errorf("part of %d tokens (%d with logits) after %d cached: want at least 1 token, logits for at most all of them, a context of 0 or more", p.Tokens, p.Logits, p.Context)
		}
	}
	return nil
}

// cost prices a step on one of tp GPUs that split the model by tensor
// parallelism: the sharded weights and query heads divided by tp, the
// replicated ones whole, each KV stream's heads as ceil(heads/tp). At
// tp = 1 it is the whole step.
func (s *Shape) cost(parts []Part, tp int) StepCost {
	c := StepCost{Batch: len(parts)}
	n := float64(tp)
	logits := 0
	for _, p := range parts {
		c.Tokens += p.Tokens
		c.Context = max(c.Context, p.Context)
		logits += max(p.Logits, 1)
		for _, g := range s.groups {
			share := math.Ceil(float64(g.heads)/n) / float64(g.heads)
			head := 1 / n // the query heads this GPU computes
			if g.replicated {
				head = 1
			}
			ctx := float64(p.Context)
			c.KVBytes += g.read(ctx) * float64(g.readBytes) * share
			if p.Tokens == 1 {
				c.AttentionFLOPs += g.read(ctx) * g.flops * head
				continue
			}
			end := float64(p.Context + p.Tokens)
			c.KVBytes += (end - ctx) / float64(g.ratio) * float64(g.storeBytes) * share
			c.AttentionFLOPs += (g.pairs(p.Context+p.Tokens) - g.pairs(p.Context)) * g.pre * head
		}
	}
	c.ExpertsRead = s.ExpertsRead(c.Tokens)
	experts := float64(s.MoELayers()) * c.ExpertsRead * s.ExpertBytes
	c.WeightBytes = (s.split.streamBytes+experts)/n + s.replicated.streamBytes
	head := float64(s.outHead()) / n
	body := float64(s.split.active)/n + float64(s.replicated.active)
	c.WeightFLOPs = 2*float64(c.Tokens)*body + 2*float64(logits)*head
	c.Bytes = c.WeightBytes + c.KVBytes
	c.FLOPs = c.WeightFLOPs + c.AttentionFLOPs
	s.expertCost(&c, c.Tokens, 1, tp)
	return c
}

// expertCost sets c's routed-expert part for a pass of tokens tokens over
// a share f of the MoE layers on one of tp GPUs.
func (s *Shape) expertCost(c *StepCost, tokens int, f float64, tp int) {
	if s.Config.MoE == nil {
		return
	}
	n, layers := float64(tp), f*float64(s.MoELayers())
	c.ExpertBytes = layers * s.ExpertsRead(tokens) * s.ExpertBytes / n
	per := 2 * float64(s.ExpertParams) / n // one row through one expert
	c.ExpertFLOPs = layers * float64(tokens) * float64(s.Config.MoE.TopK) * per
	c.PaddedExpertFLOPs = layers * s.ExpertRows(tokens) * per
}
