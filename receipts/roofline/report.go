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
	Points           []Point  `json:"points"`
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
}

// Analyse computes the decode ceilings of s on h at each batch size, every
// sequence holding context tokens.
func Analyse(s *Shape, h Hardware, batches []int, context int) (*Report, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	if len(batches) == 0 {
		return nil, fmt.Errorf("no batch sizes")
	}
	c := s.Config
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
	for _, b := range batches {
		cost, err := s.Decode(b, context)
		if err != nil {
			return nil, err
		}
		ce := h.Ceiling(cost)
		p := Point{
			Batch: b, Context: context,
			BytesPerStep: math.Round(cost.Bytes), WeightBytesRead: math.Round(cost.WeightBytes), KVBytesRead: math.Round(cost.KVBytes),
			FLOPPerStep: math.Round(cost.FLOPs), IntensityFLOPPerByte: round(cost.Intensity(), 3),
			StepMS:               round(ce.StepSeconds*1e3, 3),
			BandwidthCeilingTokS: round(ce.BandwidthTokS, 3), ComputeCeilingTokS: round(ce.ComputeTokS, 3),
			CeilingTokS: round(ce.TokS, 3), Bound: ce.Bound,
			MemoryBytes: math.Round(s.WeightBytes + cost.KVBytes),
		}
		if h.MemoryBytes > 0 {
			fits := p.MemoryBytes <= h.MemoryBytes
			p.FitsMemory = &fits
		}
		if c.MoE != nil {
			e := round(cost.ExpertsRead, 3)
			p.ExpertsRead = &e
		}
		r.Points = append(r.Points, p)
	}
	return r, nil
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
		fmt.Fprintf(&b, "; past the %d-token window %d bytes per token (full-attention layers)", r.SlidingWindow, *r.GlobalKVBytesPerToken)
	}
	b.WriteString("\n")
	g := r.GPU
	fmt.Fprintf(&b, "gpu       %s: bandwidth %s (%s), compute %s (%s), ridge %.1f FLOP/byte",
		g.Name, rate(g.BandwidthBytesPerS, "B/s"), g.BandwidthSource, rate(g.FLOPPerS, "FLOP/s"), g.FLOPsSource, r.RidgeFLOPPerByte)
	if g.MemoryBytes > 0 {
		fmt.Fprintf(&b, ", %s memory", rate(g.MemoryBytes, "B"))
	}
	b.WriteString("\n\n")

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
