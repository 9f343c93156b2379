package roofline

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// UtilisationSchema names the JSON form of a UtilisationReport; fields are
// added, never renamed or removed, under this name.
const UtilisationSchema = "vetbench.utilisation/v1"

// Phase is what a measured point timed.
type Phase string

// Phases.
const (
	// PhaseDecode: tokens/s of decode steps at a batch, each sequence
	// holding Context tokens.
	PhaseDecode Phase = "decode"
	// PhasePrefill: prompt tokens/s of one prompt of Context tokens.
	PhasePrefill Phase = "prefill"
)

// Observed is one measured point to read against its ceiling.
type Observed struct {
	// Label names the point for a reader ("text c=8", "32K c=16").
	Label string `json:"label"`
	Phase Phase  `json:"phase"`
	// Batch is the sequences per step (the concurrency); Context the
	// tokens each holds on average during decode, or the prompt length of
	// a prefill.
	Batch   int `json:"batch"`
	Context int `json:"context"`
	// TokS is the measured rate: output tokens/s for decode, prompt
	// tokens/s for prefill.
	TokS float64 `json:"measured_tok_s"`
	// Notes say how Batch and Context were derived when a receipt did not
	// record them exactly.
	Notes []string `json:"notes,omitempty"`
}

// UtilisationPoint is a measured point against its ceiling.
type UtilisationPoint struct {
	Observed
	CeilingTokS float64 `json:"ceiling_tok_s"`
	Bound       Bound   `json:"bound"`
	// Share is measured ÷ ceiling.
	Share float64 `json:"share"`
	// CeilingStepMS is the step time the ceiling allows; MeasuredStepMS the
	// one the measured rate implies (tokens per step ÷ measured rate);
	// ResidualMS what the ceiling does not explain (fixed per-step cost:
	// launches, attention, sampling, scheduling; below zero when above the
	// ceiling).
	CeilingStepMS  float64 `json:"ceiling_step_ms"`
	MeasuredStepMS float64 `json:"measured_step_ms"`
	ResidualMS     float64 `json:"residual_ms"`
	// AboveCeiling flags a point faster than the hardware allows: the run
	// measured a cache, not the GPU.
	AboveCeiling bool `json:"above_ceiling"`
}

// UtilisationReport is every measured point of a run against its ceiling.
type UtilisationReport struct {
	Schema string             `json:"schema"`
	Config string             `json:"config,omitempty"`
	GPU    GPUFacts           `json:"gpu"`
	Points []UtilisationPoint `json:"points"`
	// AboveCeiling counts the points that beat their ceiling.
	AboveCeiling int `json:"above_ceiling"`
}

// Utilise reads each measured point against the ceiling of its step on h:
// a decode step at Batch sequences of Context tokens (Shape.Decode), or
// the prefill of a Context-token prompt (Shape.Prefill). Figures are
// rounded as in Report.
func Utilise(s *Shape, h Hardware, pts []Observed) (*UtilisationReport, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	rep := &UtilisationReport{Schema: UtilisationSchema, Points: []UtilisationPoint{},
		GPU: GPUFacts{Name: h.Name, BandwidthBytesPerS: h.Bandwidth.Value, BandwidthSource: h.Bandwidth.Source,
			FLOPPerS: h.FLOPs.Value, FLOPsSource: h.FLOPs.Source, MemoryBytes: h.MemoryBytes}}
	for _, m := range pts {
		var cost StepCost
		var err error
		switch m.Phase {
		case PhaseDecode:
			cost, err = s.Decode(m.Batch, m.Context)
		case PhasePrefill:
			cost, err = s.Prefill(m.Context)
		default:
			err = fmt.Errorf("phase %q: want decode or prefill", m.Phase)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Label, err)
		}
		if !(m.TokS > 0) || math.IsInf(m.TokS, 0) {
			return nil, fmt.Errorf("%s: measured %v tok/s: want a positive rate", m.Label, m.TokS)
		}
		ce := h.Ceiling(cost)
		u := ce.Assess(m.TokS)
		p := UtilisationPoint{Observed: m,
			CeilingTokS: round(ce.TokS, 3), Bound: ce.Bound, Share: round(u.Share, 4),
			CeilingStepMS: round(ce.StepSeconds*1e3, 4), MeasuredStepMS: round(u.MeasuredStepSeconds*1e3, 4),
			ResidualMS: round(u.ResidualSeconds*1e3, 4), AboveCeiling: u.AboveCeiling}
		if p.AboveCeiling {
			rep.AboveCeiling++
		}
		rep.Points = append(rep.Points, p)
	}
	return rep, nil
}

// WriteText prints the utilisation table of the run read from receipt
// (a path and what it held): one row per point, then the notes and the
// points that beat their ceiling.
func (u *UtilisationReport) WriteText(w io.Writer, receipt string) error {
	var b strings.Builder
	if u.Config != "" {
		fmt.Fprintf(&b, "config    %s\n", u.Config)
	}
	fmt.Fprintf(&b, "receipt   %s, %d points\n", receipt, len(u.Points))
	g := u.GPU
	fmt.Fprintf(&b, "gpu       %s: bandwidth %.4g TB/s (%s), compute %.4g TFLOP/s (%s)\n\n",
		g.Name, g.BandwidthBytesPerS/1e12, g.BandwidthSource, g.FLOPPerS/1e12, g.FLOPsSource)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "point\tphase\tbatch\tcontext\tmeasured tok/s\tceiling tok/s\tbound\tshare\tceiling step ms\tmeasured step ms\tresidual ms\t\n")
	for _, p := range u.Points {
		mark := ""
		if p.AboveCeiling {
			mark = "  ABOVE CEILING"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.1f\t%s\t%.1f%%\t%.3f\t%.3f\t%.3f\t%s\n", p.Label, p.Phase, p.Batch, p.Context,
			p.TokS, p.CeilingTokS, p.Bound, 100*p.Share, p.CeilingStepMS, p.MeasuredStepMS, p.ResidualMS, mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	u.writeNotes(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeNotes lists each note once with the points it is on, then the
// count of points above their ceiling.
func (u *UtilisationReport) writeNotes(b *strings.Builder) {
	notes := map[string][]string{}
	var order []string
	for _, p := range u.Points {
		for _, n := range p.Notes {
			if _, ok := notes[n]; !ok {
				order = append(order, n)
			}
			notes[n] = append(notes[n], p.Label)
		}
	}
	if len(order) > 0 {
		b.WriteString("\n")
	}
	for _, n := range order {
		fmt.Fprintf(b, "note: %s (%s)\n", n, strings.Join(notes[n], ", "))
	}
	if u.AboveCeiling > 0 {
		fmt.Fprintf(b, "\n%d point(s) beat the ceiling: the run measured a cache, not the GPU (or the peaks given are too low)\n", u.AboveCeiling)
	}
}
