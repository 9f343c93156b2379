package roofline

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Schema names the JSON form of a Report. Fields are added, never renamed
// or removed, under this name; a change of meaning gets a new name.
const Schema = "vetbench.roofline/v1"

// Report is the roofline of one model on one GPU at a set of batch sizes:
// the decision vetbench roofline prints, and its -json contract. Its
// figures are rounded (bytes and FLOPs to whole numbers, rates and ratios
// to 3 decimals, times to microseconds) so that the contract reads the
// same on every machine; StepCost and Ceiling keep full precision.
type Report struct {
	Schema string `json:"schema"`
	// Config is the config.json read (set by the caller; may be empty).
	Config        string   `json:"config,omitempty"`
	ModelType     string   `json:"model_type"`
	Architectures []string `json:"architectures,omitempty"`
	Attention     string   `json:"attention"` // "gqa" or "mla"
	Layers        int      `json:"layers"`
	WeightDtype   Dtype    `json:"weight_dtype"`
	ExpertDtype   Dtype    `json:"expert_dtype,omitempty"` // MoE only
	KVDtype       Dtype    `json:"kv_dtype"`

	Params          int64   `json:"params"`
	EmbeddingParams int64   `json:"embedding_params"`
	ActiveParams    int64   `json:"active_params"`
	WeightBytes     float64 `json:"weight_bytes"`
	ActiveBytes     float64 `json:"active_bytes"`
	KVBytesPerToken int64   `json:"kv_bytes_per_token"`
	// SlidingWindow and GlobalKVBytesPerToken are set when some layers
	// attend within a window.
	SlidingWindow         int       `json:"sliding_window,omitempty"`
	GlobalKVBytesPerToken *int64    `json:"global_kv_bytes_per_token,omitempty"`
	MoE                   *MoEFacts `json:"moe,omitempty"`

	GPU              GPUFacts `json:"gpu"`
	RidgeFLOPPerByte float64  `json:"ridge_flop_per_byte"`
	// TensorParallel, Link and WeightBytesPerGPU are set for a model split
	// over more than one GPU; Speculative for speculative decoding.
	TensorParallel    int        `json:"tensor_parallel,omitempty"`
	Link              *LinkFacts `json:"link,omitempty"`
	WeightBytesPerGPU float64    `json:"weight_bytes_per_gpu,omitempty"`
	Speculative       *SpecFacts `json:"speculative,omitempty"`
	Points            []Point    `json:"points"`
}

// LinkFacts is the interconnect a tensor-parallel step's collectives use.
type LinkFacts struct {
	Name               string  `json:"name"`
	BandwidthBytesPerS float64 `json:"bandwidth_bytes_per_s"`
	BandwidthSource    Source  `json:"bandwidth_source"`
	LatencyS           float64 `json:"latency_s"`
	LatencySource      Source  `json:"latency_source"`
}

// SpecFacts is the speculative decoding priced.
type SpecFacts struct {
	DraftTokens   int     `json:"draft_tokens"`
	Acceptance    float64 `json:"acceptance"`
	DraftLayers   int     `json:"draft_layers"`
	TokensPerStep float64 `json:"tokens_per_step"`
}

// GPUShare is one GPU's share of a tensor-parallel decode step.
type GPUShare struct {
	BytesPerStep    float64 `json:"bytes_per_step"`
	WeightBytesRead float64 `json:"weight_bytes_read"`
	KVBytesRead     float64 `json:"kv_bytes_read"`
	FLOPPerStep     float64 `json:"flop_per_step"`
	Collectives     int     `json:"collectives"`
	CommBytes       float64 `json:"comm_bytes"`
	CommMS          float64 `json:"comm_ms"`
	MemoryBytes     float64 `json:"memory_bytes"`
	FitsMemory      *bool   `json:"fits_memory,omitempty"`
}

// SpecPoint is a decode point under speculative decoding: the verify step
// and the draft passes per GPU, and the ceiling on expected tokens.
type SpecPoint struct {
	TokensPerStep     float64  `json:"tokens_per_step"`
	VerifyBytesPerGPU float64  `json:"verify_bytes_per_gpu"`
	VerifyFLOPPerGPU  float64  `json:"verify_flop_per_gpu"`
	DraftBytesPerGPU  float64  `json:"draft_bytes_per_gpu"`
	DraftFLOPPerGPU   float64  `json:"draft_flop_per_gpu"`
	TotalBytesPerStep float64  `json:"total_bytes_per_step"`
	TotalFLOPPerStep  float64  `json:"total_flop_per_step"`
	ExpertsRead       *float64 `json:"experts_read,omitempty"`
	CommMS            float64  `json:"comm_ms"`
	StepMS            float64  `json:"step_ms"`
	CeilingTokS       float64  `json:"ceiling_tok_s"`
	Bound             Bound    `json:"bound"`
	SpeedupOverPlain  float64  `json:"speedup_over_plain"`
}

// MoEFacts describes the experts of a MoE model.
type MoEFacts struct {
	Experts            int     `json:"experts"`
	ExpertsPerToken    int     `json:"experts_per_token"`
	SharedIntermediate int     `json:"shared_intermediate,omitempty"`
	MoELayers          int     `json:"moe_layers"`
	ExpertBytes        float64 `json:"expert_bytes"`
}

// GPUFacts are the peaks used and where each came from.
type GPUFacts struct {
	Name               string  `json:"name"`
	BandwidthBytesPerS float64 `json:"bandwidth_bytes_per_s"`
	BandwidthSource    Source  `json:"bandwidth_source"`
	FLOPPerS           float64 `json:"flop_per_s"`
	FLOPsSource        Source  `json:"flops_source"`
	// MemoryBytes is the GPU's memory (spec; 0 when not known).
	MemoryBytes float64 `json:"memory_bytes,omitempty"`
}

// Point is one decode step's ceiling.
type Point struct {
	Batch           int     `json:"batch"`
	Context         int     `json:"context"`
	BytesPerStep    float64 `json:"bytes_per_step"`
	WeightBytesRead float64 `json:"weight_bytes_read"`
	KVBytesRead     float64 `json:"kv_bytes_read"`
	// ExpertsRead is the expected distinct routed experts per MoE layer
	// (MoE only).
	ExpertsRead          *float64 `json:"experts_read,omitempty"`
	FLOPPerStep          float64  `json:"flop_per_step"`
	IntensityFLOPPerByte float64  `json:"intensity_flop_per_byte"`
	StepMS               float64  `json:"step_ms"`
	BandwidthCeilingTokS float64  `json:"bandwidth_ceiling_tok_s"`
	ComputeCeilingTokS   float64  `json:"compute_ceiling_tok_s"`
	CeilingTokS          float64  `json:"ceiling_tok_s"`
	Bound                Bound    `json:"bound"`
	// MemoryBytes is what the point holds: all weights plus the KV of
	// every sequence. FitsMemory compares it with the GPU's memory (absent
	// when that is not known); activations and vLLM's
	// gpu_memory_utilization are not counted.
	MemoryBytes float64 `json:"memory_bytes"`
	FitsMemory  *bool   `json:"fits_memory,omitempty"`
	// PerGPU is one GPU's share when the model is split over several (the
	// figures above are then totals over the GPUs, the ceilings the
	// deployment's, collectives included); Speculative the point under
	// speculative decoding.
	PerGPU      *GPUShare  `json:"per_gpu,omitempty"`
	Speculative *SpecPoint `json:"speculative,omitempty"`
}

// Analyse computes the decode ceilings of s on h at each batch size, every
// sequence holding context tokens.
func Analyse(s *Shape, h Hardware, batches []int, context int) (*Report, error) {
	return AnalyseDeployment(Deployment{Shape: s, GPU: h}, batches, context)
}

// AnalyseDeployment computes the decode ceilings of a deployment at each
// batch size, every sequence holding context tokens: per GPU and in total
// when it is split over several, and with and without its speculative
// decoding.
func AnalyseDeployment(d Deployment, batches []int, context int) (*Report, error) {
	if err := d.validate(); err != nil {
		return nil, err
	}
	if len(batches) == 0 {
		return nil, fmt.Errorf("no batch sizes")
	}
	r := reportHead(d)
	plain := d
	plain.Spec = nil
	for _, b := range batches {
		cost, err := plain.Decode(b, context)
		if err != nil {
			return nil, err
		}
		p := point(d, cost, b, context)
		if d.Spec != nil {
			sc, err := d.Decode(b, context)
			if err != nil {
				return nil, err
			}
			p.Speculative = specPoint(d, sc, p.CeilingTokS)
		}
		r.Points = append(r.Points, p)
	}
	return r, nil
}

// reportHead is a report's model, GPU and deployment facts.
func reportHead(d Deployment) *Report {
	s, h, c := d.Shape, d.GPU, d.Shape.Config
	r := &Report{
		Schema: Schema, ModelType: c.ModelType, Architectures: c.Architectures,
		Attention: s.Attention(), Layers: c.Layers,
		WeightDtype: s.Dtypes.Weights, KVDtype: s.Dtypes.KV,
		Params: s.Params, EmbeddingParams: s.EmbeddingParams, ActiveParams: s.ActiveParams,
		WeightBytes: math.Round(s.WeightBytes), ActiveBytes: math.Round(s.ActiveBytes),
		KVBytesPerToken: s.KVBytesPerToken,
		GPU: GPUFacts{Name: h.Name,
			BandwidthBytesPerS: h.Bandwidth.Value, BandwidthSource: h.Bandwidth.Source,
			FLOPPerS: h.FLOPs.Value, FLOPsSource: h.FLOPs.Source, MemoryBytes: h.MemoryBytes},
		RidgeFLOPPerByte: round(h.Ridge(), 3),
	}
	if w := s.SlidingWindow(); w > 0 {
		g := s.GlobalKVBytesPerToken
		r.SlidingWindow, r.GlobalKVBytesPerToken = w, &g
	}
	if m := c.MoE; m != nil {
		r.ExpertDtype = s.Dtypes.Experts
		r.MoE = &MoEFacts{Experts: m.Experts, ExpertsPerToken: m.TopK, SharedIntermediate: m.SharedIntermediate,
			MoELayers: s.MoELayers(), ExpertBytes: math.Round(s.ExpertBytes)}
	}
	if tp := d.tp(); tp > 1 {
		l := h.Link
		r.TensorParallel = tp
		r.WeightBytesPerGPU = math.Round(s.WeightBytesPerGPU(tp))
		r.Link = &LinkFacts{Name: l.Name, BandwidthBytesPerS: l.Bandwidth.Value, BandwidthSource: l.Bandwidth.Source,
			LatencyS: l.Latency.Value, LatencySource: l.Latency.Source}
	}
	if sp := d.Spec; sp != nil {
		r.Speculative = &SpecFacts{DraftTokens: sp.Tokens, Acceptance: sp.Acceptance, DraftLayers: d.draftLayers(),
			TokensPerStep: round(sp.TokensPerStep(), 3)}
	}
	return r
}

// point is one batch size's plain decode step: totals over the GPUs, the
// deployment's ceilings, one GPU's share when split.
func point(d Deployment, cost DeploymentCost, b, context int) Point {
	s, h, tp := d.Shape, d.GPU, d.tp()
	g, total := cost.PerGPU, cost.Total()
	ce, dc := h.Ceiling(g), d.Ceiling(cost)
	p := Point{
		Batch: b, Context: context,
		BytesPerStep: math.Round(total.Bytes), WeightBytesRead: math.Round(total.WeightBytes), KVBytesRead: math.Round(total.KVBytes),
		FLOPPerStep: math.Round(total.FLOPs), IntensityFLOPPerByte: round(g.Intensity(), 3),
		StepMS:               round(dc.StepSeconds*1e3, 3),
		BandwidthCeilingTokS: round(ce.BandwidthTokS, 3), ComputeCeilingTokS: round(ce.ComputeTokS, 3),
		CeilingTokS: round(dc.TokS, 3), Bound: ce.Bound,
		MemoryBytes: math.Round(s.WeightBytes + float64(b)*s.KVBytes(context)),
	}
	fits := func(m float64) *bool {
		if !(h.MemoryBytes > 0) {
			return nil
		}
		f := m <= h.MemoryBytes
		return &f
	}
	if s.Config.MoE != nil {
		e := round(g.ExpertsRead, 3)
		p.ExpertsRead = &e
	}
	if tp == 1 {
		p.FitsMemory = fits(p.MemoryBytes)
		return p
	}
	mem := math.Round(s.WeightBytesPerGPU(tp) + float64(b)*s.kvHeld(context, tp))
	p.PerGPU = &GPUShare{BytesPerStep: math.Round(g.Bytes), WeightBytesRead: math.Round(g.WeightBytes), KVBytesRead: math.Round(g.KVBytes),
		FLOPPerStep: math.Round(g.FLOPs), Collectives: cost.Collectives, CommBytes: math.Round(cost.CommBytes),
		CommMS: round(dc.CommSeconds*1e3, 3), MemoryBytes: mem, FitsMemory: fits(mem)}
	return p
}

// specPoint is a batch size's decode under speculative decoding.
func specPoint(d Deployment, c DeploymentCost, plainTokS float64) *SpecPoint {
	dc, total := d.Ceiling(c), c.Total()
	sp := &SpecPoint{
		TokensPerStep:     round(c.Yield/float64(c.PerGPU.Batch), 3),
		VerifyBytesPerGPU: math.Round(c.PerGPU.Bytes), VerifyFLOPPerGPU: math.Round(c.PerGPU.FLOPs),
		DraftBytesPerGPU: math.Round(c.Draft.Bytes), DraftFLOPPerGPU: math.Round(c.Draft.FLOPs),
		TotalBytesPerStep: math.Round(total.Bytes), TotalFLOPPerStep: math.Round(total.FLOPs),
		CommMS: round(dc.CommSeconds*1e3, 3), StepMS: round(dc.StepSeconds*1e3, 3),
		CeilingTokS: round(dc.TokS, 3), Bound: dc.Bound,
	}
	if d.Shape.Config.MoE != nil {
		e := round(c.PerGPU.ExpertsRead, 3)
		sp.ExpertsRead = &e
	}
	if plainTokS > 0 {
		sp.SpeedupOverPlain = round(dc.TokS/plainTokS, 3)
	}
	return sp
}

// WriteText prints the report for a reader: the model, the GPU peaks and
// where they came from, then one row per batch size.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	if r.Config != "" {
		fmt.Fprintf(&b, "config    %s\n", r.Config)
	}
	arch := r.ModelType
	if len(r.Architectures) > 0 {
		arch += " (" + strings.Join(r.Architectures, ", ") + ")"
	}
	fmt.Fprintf(&b, "model     %s, %d layers, %s attention", arch, r.Layers, strings.ToUpper(r.Attention))
	if m := r.MoE; m != nil {
		fmt.Fprintf(&b, ", MoE %d experts top-%d in %d layers", m.Experts, m.ExpertsPerToken, m.MoELayers)
		if m.SharedIntermediate > 0 {
			fmt.Fprintf(&b, " + shared %d wide", m.SharedIntermediate)
		}
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "params    %s total (%s input embedding), %s active per token\n",
		params(r.Params), params(r.EmbeddingParams), params(r.ActiveParams))
	dt := string(r.WeightDtype)
	if r.ExpertDtype != "" && r.ExpertDtype != r.WeightDtype {
		dt += ", experts " + string(r.ExpertDtype)
	}
	fmt.Fprintf(&b, "weights   %s (%s), %s read per token at batch 1", gb(r.WeightBytes), dt, gb(r.ActiveBytes))
	if r.MoE != nil {
		fmt.Fprintf(&b, ", %s per expert", mb(r.MoE.ExpertBytes))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "kv cache  %d bytes per token (%s)", r.KVBytesPerToken, r.KVDtype)
	if r.GlobalKVBytesPerToken != nil {
		what := "full-attention layers"
		if r.Attention == "csa+hca" {
			what = "compressed rows, one per 4 or 128 tokens"
		}
		fmt.Fprintf(&b, "; past the %d-token window %d bytes per token (%s)", r.SlidingWindow, *r.GlobalKVBytesPerToken, what)
	}
	b.WriteString("\n")
	g := r.GPU
	fmt.Fprintf(&b, "gpu       %s: bandwidth %s (%s), compute %s (%s), ridge %.1f FLOP/byte",
		g.Name, rate(g.BandwidthBytesPerS, "B/s"), g.BandwidthSource, rate(g.FLOPPerS, "FLOP/s"), g.FLOPsSource, r.RidgeFLOPPerByte)
	if g.MemoryBytes > 0 {
		fmt.Fprintf(&b, ", %.4g GiB memory", g.MemoryBytes/(1<<30))
	}
	b.WriteString("\n")
	r.writeDeployment(&b)
	b.WriteString("\n")
	if r.TensorParallel > 1 || r.Speculative != nil {
		if err := r.writeDeploymentTables(&b); err != nil {
			return err
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "batch\tcontext\t"
	if r.MoE != nil {
		head += "experts read\t"
	}
	fmt.Fprint(tw, head+"weights read\tKV read\tbytes/step\tFLOP/step\tFLOP/byte\tbandwidth tok/s\tcompute tok/s\tceiling tok/s\tstep ms\tbound\tfits\t\n")
	for _, p := range r.Points {
		row := fmt.Sprintf("%d\t%d\t", p.Batch, p.Context)
		if p.ExpertsRead != nil {
			row += fmt.Sprintf("%.1f\t", *p.ExpertsRead)
		}
		fits := "?"
		if p.FitsMemory != nil {
			fits = map[bool]string{true: "yes", false: "no"}[*p.FitsMemory]
		}
		row += fmt.Sprintf("%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%.3f\t%s\t%s\t\n",
			gb(p.WeightBytesRead), gb(p.KVBytesRead), gb(p.BytesPerStep), count(p.FLOPPerStep), p.IntensityFLOPPerByte,
			tokS(p.BandwidthCeilingTokS), tokS(p.ComputeCeilingTokS), tokS(p.CeilingTokS), p.StepMS, p.Bound, fits)
		fmt.Fprint(tw, row)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// round rounds v to n decimals.
func round(v float64, n int) float64 {
	p := math.Pow10(n)
	return math.Round(v*p) / p
}

// count prints a number with a decimal prefix and 4 significant digits
// (160.5 G, 3.35 T).
func count(v float64) string {
	for _, u := range []struct {
		div    float64
		prefix string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= u.div {
			return fmt.Sprintf("%.4g %s", v/u.div, u.prefix)
		}
	}
	return fmt.Sprintf("%.4g ", v)
}

// params prints a parameter count the way model cards do (70.55 B).
func params(n int64) string {
	v := float64(n)
	switch {
	case v >= 1e12:
		return fmt.Sprintf("%.3f T", v/1e12)
	case v >= 1e9:
		return fmt.Sprintf("%.2f B", v/1e9)
	}
	return fmt.Sprintf("%.1f M", v/1e6)
}

func gb(v float64) string                { return fmt.Sprintf("%.3f GB", v/1e9) }
func mb(v float64) string                { return fmt.Sprintf("%.2f MB", v/1e6) }
func tokS(v float64) string              { return fmt.Sprintf("%.1f", v) }
func rate(v float64, unit string) string { return count(v) + unit }

// writeDeployment prints the tensor parallelism and speculative decoding
// lines of a deployment's report (nothing for one GPU, plain decoding).
func (r *Report) writeDeployment(b *strings.Builder) {
	if l := r.Link; r.TensorParallel > 1 && l != nil {
		fmt.Fprintf(b, "parallel  tensor parallel %d over %s: %s per GPU each way (%s), %.1f µs per collective (%s); %s of weights per GPU\n",
			r.TensorParallel, l.Name, rate(l.BandwidthBytesPerS, "B/s"), l.BandwidthSource, l.LatencyS*1e6, l.LatencySource, gb(r.WeightBytesPerGPU))
	}
	if sp := r.Speculative; sp != nil {
		fmt.Fprintf(b, "spec      %d draft tokens, acceptance %.2f: %.3f tokens per sequence per verified step; drafter %d layer(s) + lm_head per draft token\n",
			sp.DraftTokens, sp.Acceptance, sp.TokensPerStep, sp.DraftLayers)
	}
}

// writeDeploymentTables prints a deployment's plain decode (per GPU and
// total) and, with speculative decoding, its speculative ceilings.
func (r *Report) writeDeploymentTables(b *strings.Builder) error {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	moe := r.MoE != nil
	head := "batch\tcontext\t"
	if moe {
		head += "experts read\t"
	}
	fmt.Fprint(tw, head+"GPU weights\tGPU KV\tGPU bytes\tGPU FLOP\tcomm ms\ttotal bytes\ttotal FLOP\tbandwidth tok/s\tcompute tok/s\tceiling tok/s\tstep ms\tbound\tfits\t\n")
	for _, p := range r.Points {
		row := fmt.Sprintf("%d\t%d\t", p.Batch, p.Context)
		if p.ExpertsRead != nil {
			row += fmt.Sprintf("%.1f\t", *p.ExpertsRead)
		}
		g := p.PerGPU
		if g == nil { // one GPU: it is the total
			g = &GPUShare{BytesPerStep: p.BytesPerStep, WeightBytesRead: p.WeightBytesRead, KVBytesRead: p.KVBytesRead, FLOPPerStep: p.FLOPPerStep, FitsMemory: p.FitsMemory}
		}
		row += fmt.Sprintf("%s\t%s\t%s\t%s\t%.3f\t%s\t%s\t%s\t%s\t%s\t%.3f\t%s\t%s\t\n",
			gb(g.WeightBytesRead), gb(g.KVBytesRead), gb(g.BytesPerStep), count(g.FLOPPerStep), g.CommMS,
			gb(p.BytesPerStep), count(p.FLOPPerStep), tokS(p.BandwidthCeilingTokS), tokS(p.ComputeCeilingTokS), tokS(p.CeilingTokS), p.StepMS, p.Bound, yesNo(g.FitsMemory))
		fmt.Fprint(tw, row)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Speculative == nil {
		return nil
	}
	fmt.Fprintf(b, "\nwith speculative decoding (%d draft tokens)\n", r.Speculative.DraftTokens)
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	head = "batch\tcontext\ttokens/step\t"
	if moe {
		head += "experts read\t"
	}
	fmt.Fprint(tw, head+"GPU verify bytes\tGPU verify FLOP\tGPU draft bytes\tGPU draft FLOP\tcomm ms\ttotal bytes\ttotal FLOP\tceiling tok/s\tstep ms\tbound\tvs plain\t\n")
	for _, p := range r.Points {
		sp := p.Speculative
		row := fmt.Sprintf("%d\t%d\t%.3f\t", p.Batch, p.Context, sp.TokensPerStep)
		if sp.ExpertsRead != nil {
			row += fmt.Sprintf("%.1f\t", *sp.ExpertsRead)
		}
		row += fmt.Sprintf("%s\t%s\t%s\t%s\t%.3f\t%s\t%s\t%s\t%.3f\t%s\t%.2f×\t\n",
			gb(sp.VerifyBytesPerGPU), count(sp.VerifyFLOPPerGPU), gb(sp.DraftBytesPerGPU), count(sp.DraftFLOPPerGPU), sp.CommMS,
			gb(sp.TotalBytesPerStep), count(sp.TotalFLOPPerStep), tokS(sp.CeilingTokS), sp.StepMS, sp.Bound, sp.SpeedupOverPlain)
		fmt.Fprint(tw, row)
	}
	return tw.Flush()
}

func yesNo(b *bool) string {
	if b == nil {
		return "?"
	}
	return map[bool]string{true: "yes", false: "no"}[*b]
}
