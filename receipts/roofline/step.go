package roofline

import "fmt"

// StepCost is what one engine step moves and computes.
type StepCost struct {
	// Batch is the number of sequences in the step; Context the tokens
	// each has cached (decode) or the prompt length (prefill).
	Batch, Context int
	// Tokens is what the step yields: Batch new tokens for decode, the
	// prompt's tokens for prefill.
	Tokens int
	// ExpertsRead is the expected distinct routed experts per MoE layer
	// (0 for a dense model).
	ExpertsRead float64

	WeightBytes, KVBytes, Bytes        float64
	WeightFLOPs, AttentionFLOPs, FLOPs float64
}

// Intensity is FLOPs per byte moved.
func (c StepCost) Intensity() float64 {
	if c.Bytes == 0 {
		return 0
	}
	return c.FLOPs / c.Bytes
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
	c := StepCost{Batch: batch, Context: context, Tokens: batch, ExpertsRead: s.ExpertsRead(batch)}
	c.WeightBytes = s.StreamBytes + float64(s.MoELayers())*c.ExpertsRead*s.ExpertBytes
	b := float64(batch)
	for _, l := range s.layers {
		held := float64(context)
		if l.window > 0 {
			held = float64(min(context, l.window))
		}
		c.KVBytes += b * held * float64(l.kvRead)
		c.AttentionFLOPs += b * held * l.attnQK
	}
	c.WeightFLOPs = 2 * b * float64(s.ActiveParams)
	c.Bytes = c.WeightBytes + c.KVBytes
	c.FLOPs = c.WeightFLOPs + c.AttentionFLOPs
	return c, nil
}

// Prefill prices the prefill of one prompt of tokens in one step: weights
// read once (routed experts as ExpertsRead(tokens)), the prompt's KV
// written, every token computed but logits for the last one only, causal
// attention (each token attends to those before it, within its window).
func (s *Shape) Prefill(tokens int) (StepCost, error) {
	if tokens < 1 {
		return StepCost{}, fmt.Errorf("prompt of %d tokens: want at least 1", tokens)
	}
	c := StepCost{Batch: 1, Context: tokens, Tokens: tokens, ExpertsRead: s.ExpertsRead(tokens)}
	c.WeightBytes = s.StreamBytes + float64(s.MoELayers())*c.ExpertsRead*s.ExpertBytes
	c.KVBytes = float64(tokens) * float64(s.KVBytesPerToken)
	t := float64(tokens)
	for _, l := range s.layers {
		c.AttentionFLOPs += causalPairs(tokens, l.window) * l.attnPre
	}
	head := s.LMHeadParams
	if s.Config.TiedEmbeddings {
		head = s.EmbeddingParams
	}
	c.WeightFLOPs = 2*t*float64(s.ActiveParams-head) + 2*float64(head)
	c.Bytes = c.WeightBytes + c.KVBytes
	c.FLOPs = c.WeightFLOPs + c.AttentionFLOPs
	return c, nil
}

// causalPairs counts (query, key) pairs of causal attention over n tokens
// when each sees at most window keys (0: all before it): Σ min(t, w).
func causalPairs(n, window int) float64 {
	t := float64(n)
	if window <= 0 || n <= window {
		return t * (t + 1) / 2
	}
	w := float64(window)
	return w*(w+1)/2 + (t-w)*w
}

// Part is one sequence's share of an engine step: Context tokens already
// cached, Tokens computed now (1 for a decode, a chunk or a whole prompt
// for a prefill).
type Part struct {
	Context, Tokens int
}

// Step prices one engine step of mixed work, as vLLM batches it: the
// weights read once for every token of the step (routed experts as
// ExpertsRead of the step's tokens), each decode part's KV read (as
// Decode), each prefill part's cached prefix read and its own KV written,
// causal attention over its chunk, and logits for one token per part.
// Step of decodes alone is Decode; Step of one part from context 0 is
// Prefill.
func (s *Shape) Step(parts []Part) (StepCost, error) {
	if len(parts) == 0 {
		return StepCost{}, fmt.Errorf("a step of no sequences")
	}
	c := StepCost{Batch: len(parts)}
	for _, p := range parts {
		if p.Tokens < 1 || p.Context < 0 {
			return StepCost{}, fmt.Errorf("part of %d tokens after %d cached: want at least 1 token and a context of 0 or more", p.Tokens, p.Context)
		}
		c.Tokens += p.Tokens
		c.Context = max(c.Context, p.Context)
		for _, g := range s.groups {
			held := float64(p.Context)
			if g.window > 0 {
				held = float64(min(p.Context, g.window))
			}
			c.KVBytes += held * float64(g.kvRead)
			if p.Tokens == 1 {
				c.AttentionFLOPs += held * g.attnQK
				continue
			}
			c.KVBytes += float64(p.Tokens) * float64(g.kvBytes)
			c.AttentionFLOPs += (causalPairs(p.Context+p.Tokens, g.window) - causalPairs(p.Context, g.window)) * g.attnPre
		}
	}
	c.ExpertsRead = s.ExpertsRead(c.Tokens)
	c.WeightBytes = s.StreamBytes + float64(s.MoELayers())*c.ExpertsRead*s.ExpertBytes
	head := s.LMHeadParams
	if s.Config.TiedEmbeddings {
		head = s.EmbeddingParams
	}
	c.WeightFLOPs = 2*float64(c.Tokens)*float64(s.ActiveParams-head) + 2*float64(len(parts))*float64(head)
	c.Bytes = c.WeightBytes + c.KVBytes
	c.FLOPs = c.WeightFLOPs + c.AttentionFLOPs
	return c, nil
}
