package roofline

import (
	"errors"
	"fmt"
	"math"
)

// Speculative is speculative decoding: a drafter proposes Tokens tokens
// per sequence and step, the model verifies them all in one step (k + 1
// tokens per sequence, every one with logits), and keeps the accepted
// prefix plus one token of its own.
type Speculative struct {
	// Tokens is k, the draft tokens per step (vLLM's
	// num_speculative_tokens).
	Tokens int
	// Acceptance is the chance a draft token is accepted, given that the
	// ones before it were (vLLM's per-position acceptance, taken flat).
	Acceptance float64
	// DraftLayers is the decoder layers one draft pass runs (0: the
	// config's num_nextn_predict_layers, or 1 when it states none). A pass
	// is priced as that many average layers of the model plus its lm_head,
	// at the step's batch; the drafter's own attention reads are not
	// priced (small beside its weights).
	DraftLayers int
}

// TokensPerStep is the expected tokens one verified step yields per
// sequence: 1 + α + α² + … + α^k = (1 − α^(k+1)) ÷ (1 − α).
func (s Speculative) TokensPerStep() float64 {
	k, a := float64(s.Tokens), s.Acceptance
	if a >= 1 {
		return k + 1
	}
	return (1 - math.Pow(a, k+1)) / (1 - a)
}

func (s Speculative) validate() error {
	if s.Tokens < 1 {
		return fmt.Errorf("speculative decoding: %d draft tokens: want at least 1", s.Tokens)
	}
	if !(s.Acceptance >= 0 && s.Acceptance <= 1) {
		return fmt.Errorf("speculative decoding: acceptance %v: want a rate in [0, 1]", s.Acceptance)
	}
	if s.DraftLayers < 0 {
		return fmt.Errorf("speculative decoding: %d draft layers: want 0 (the config's) or more", s.DraftLayers)
	}
	return nil
}

// Deployment is a model served on TP GPUs by tensor parallelism, with or
// without speculative decoding. Each GPU holds its shard of the sharded
// weights (column and row parallel linears, the vocab-parallel lm_head,
// each expert's share of its width: vLLM's default without expert
// parallelism) and the replicated ones whole; each holds ceil(heads/TP)
// of a layer's KV heads (a one-head cache, MLA's latent or DeepSeek-V4's
// rows, is replicated). A step all-reduces its activations twice per
// layer (after attention, after the MLP) and once for the vocab-parallel
// embedding, and all-gathers the logits, over the GPU's Link.
type Deployment struct {
	Shape *Shape
	GPU   Hardware
	// TP is the tensor-parallel size (0 reads as 1).
	TP   int
	Spec *Speculative
}

// DeploymentCost is one step of a deployment.
type DeploymentCost struct {
	TP int
	// PerGPU is one GPU's share of the model's step (the verify step under
	// speculative decoding); Draft its share of the k draft passes (zero
	// without). Total() sums both over the GPUs.
	PerGPU, Draft StepCost
	// Collectives is the all-reduces and all-gathers of the step (draft
	// passes included); CommBytes what one GPU sends over the link for
	// them.
	Collectives int
	CommBytes   float64
	// Yield is the expected tokens the step produces: a decode part yields
	// Spec.TokensPerStep() (1 without speculation), a prefill part its
	// prompt tokens.
	Yield float64
}

// Total is the step summed over the GPUs (replicated weights counted on
// each).
func (c DeploymentCost) Total() StepCost {
	t := c.PerGPU.add(c.Draft).scale(float64(c.TP))
	t.Batch, t.Context, t.Tokens, t.ExpertsRead = c.PerGPU.Batch, c.PerGPU.Context, c.PerGPU.Tokens, c.PerGPU.ExpertsRead
	return t
}

func (d Deployment) tp() int { return max(d.TP, 1) }

func (d Deployment) validate() error {
	if d.Shape == nil {
		return errors.New("deployment: no model shape")
	}
	if err := d.GPU.validate(); err != nil {
		return err
	}
	if d.TP < 0 {
		return fmt.Errorf("tensor parallel size %d: want at least 1", d.TP)
	}
	if d.tp() > 1 && !(d.GPU.Link.Bandwidth.Value > 0) {
		return fmt.Errorf("gpu %s: no interconnect bandwidth for tensor parallelism (give the link's bandwidth)", d.GPU.Name)
	}
	if d.tp() > 1 && d.Shape.Config.Heads%d.tp() != 0 {
		return fmt.Errorf("tensor parallel size %d does not divide the %d attention heads", d.tp(), d.Shape.Config.Heads)
	}
	if d.Spec != nil {
		return d.Spec.validate()
	}
	return nil
}

// Decode prices one decode step of batch sequences each holding context
// tokens.
func (d Deployment) Decode(batch, context int) (DeploymentCost, error) {
	if batch < 1 {
		return DeploymentCost{}, fmt.Errorf("batch %d: want at least 1", batch)
	}
	if context < 0 {
		return DeploymentCost{}, fmt.Errorf("context %d: want at least 0", context)
	}
	return d.Step(uniform(batch, Part{Context: context, Tokens: 1}))
}

// Step prices one engine step of mixed work (as Shape.Step) on the
// deployment: under speculative decoding every decode part (Tokens 1)
// verifies k + 1 tokens with logits for each, and the drafter's k passes
// run over the decode parts.
func (d Deployment) Step(parts []Part) (DeploymentCost, error) {
	if err := d.validate(); err != nil {
		return DeploymentCost{}, err
	}
	if err := checkParts(parts); err != nil {
		return DeploymentCost{}, err
	}
	s, tp := d.Shape, d.tp()
	c := DeploymentCost{TP: tp}
	run := make([]Part, len(parts))
	decodes := 0
	for i, p := range parts {
		run[i] = p
		if p.Tokens > 1 {
			c.Yield += float64(p.Tokens)
			continue
		}
		decodes++
		c.Yield++
		if d.Spec != nil {
			k := d.Spec.Tokens
			run[i] = Part{Context: p.Context, Tokens: k + 1, Logits: k + 1}
			c.Yield += d.Spec.TokensPerStep() - 1
		}
	}
	c.PerGPU = s.cost(run, tp)
	logits := 0
	for _, p := range run {
		logits += max(p.Logits, 1)
	}
	d.collectives(&c, c.PerGPU.Tokens, logits, s.Config.Layers)
	if d.Spec != nil && decodes > 0 {
		layers := d.draftLayers()
		pass := s.draftPass(decodes, tp, layers)
		c.Draft = pass.scale(float64(d.Spec.Tokens))
		for range d.Spec.Tokens {
			d.collectives(&c, decodes, decodes, layers)
		}
	}
	return c, nil
}

func (d Deployment) draftLayers() int {
	switch {
	case d.Spec.DraftLayers > 0:
		return d.Spec.DraftLayers
	case d.Shape.Config.DraftLayers > 0:
		return d.Shape.Config.DraftLayers
	}
	return 1
}

// collectives adds one forward pass's collectives over layers layers
// with tokens tokens and logits logits: two all-reduces per layer and one
// for the embedding, of tokens × hidden bf16 values (a ring all-reduce
// sends 2(N−1)/N of the message per GPU), and an all-gather of the
// logits' vocab shards ((N−1)/N of them per GPU).
func (d Deployment) collectives(c *DeploymentCost, tokens, logits, layers int) {
	n := float64(d.tp())
	if n == 1 {
		return
	}
	msg := float64(tokens) * float64(d.Shape.Config.Hidden) * BF16.Bytes()
	reduces := 2*layers + 1
	c.Collectives += reduces + 1
	c.CommBytes += float64(reduces) * 2 * (n - 1) / n * msg
	c.CommBytes += (n - 1) / n * float64(logits) * float64(d.Shape.Config.Vocab) * BF16.Bytes()
}

// draftPass is one draft pass on one of tp GPUs over batch sequences:
// layers average layers of the model (their streamed weights and the
// experts batch tokens route to) and the lm_head.
func (s *Shape) draftPass(batch, tp, layers int) StepCost {
	n, f := float64(tp), float64(layers)/float64(s.Config.Layers)
	headBytes := float64(s.outHead()) * BF16.Bytes()
	c := StepCost{Batch: batch, Tokens: batch, ExpertsRead: s.ExpertsRead(batch)}
	experts := float64(s.MoELayers()) * c.ExpertsRead * s.ExpertBytes
	body := (s.split.streamBytes-headBytes+experts)/n + s.replicated.streamBytes
	c.WeightBytes = f*body + headBytes/n
	active := float64(s.split.active)/n + float64(s.replicated.active)
	c.WeightFLOPs = 2 * float64(batch) * (f*active + float64(s.outHead())/n)
	c.Bytes, c.FLOPs = c.WeightBytes, c.WeightFLOPs
	s.expertCost(&c, batch, f, tp)
	return c
}

// DeploymentCeiling is the fastest a deployment's step can run: each
// GPU's share of the model step and of the draft passes no faster than
// its bytes at peak bandwidth or its FLOPs at peak compute, in sequence,
// plus the collectives at the link's bandwidth and latency (not
// overlapped with compute: a decode step's all-reduces sit between the
// kernels that need their result).
type DeploymentCeiling struct {
	// ModelSeconds and DraftSeconds are the two compute phases' lower
	// bounds; CommSeconds the collectives'; StepSeconds their sum.
	ModelSeconds, DraftSeconds, CommSeconds, StepSeconds float64
	// TokS is the expected tokens per second (Yield ÷ StepSeconds).
	TokS float64
	// Bound is what binds the model phase.
	Bound Bound
}

// Ceiling divides a deployment step's cost by the GPU's peaks.
func (d Deployment) Ceiling(c DeploymentCost) DeploymentCeiling {
	m := d.GPU.Ceiling(c.PerGPU)
	r := DeploymentCeiling{ModelSeconds: m.StepSeconds, Bound: m.Bound}
	if c.Draft.Bytes > 0 {
		r.DraftSeconds = d.GPU.Ceiling(c.Draft).StepSeconds
	}
	if c.Collectives > 0 {
		r.CommSeconds = float64(c.Collectives)*d.GPU.Link.Latency.Value + c.CommBytes/d.GPU.Link.Bandwidth.Value
	}
	r.StepSeconds = r.ModelSeconds + r.DraftSeconds + r.CommSeconds
	r.TokS = c.Yield / r.StepSeconds
	return r
}
