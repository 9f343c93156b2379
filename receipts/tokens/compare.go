package tokens

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// Delta is one figure of a baseline point against a candidate point.
type Delta struct {
	Base float64 `json:"baseline"`
	Cand float64 `json:"candidate"`
	// Rel is (Cand − Base) ÷ Base; NaN when Base is 0 (null in JSON).
	Rel float64 `json:"relative"`
}

// MarshalJSON writes a NaN Rel as null: JSON has no NaN.
func (d Delta) MarshalJSON() ([]byte, error) {
	out := struct {
		Base float64  `json:"baseline"`
		Cand float64  `json:"candidate"`
		Rel  *float64 `json:"relative"`
	}{Base: d.Base, Cand: d.Cand}
	if !math.IsNaN(d.Rel) && !math.IsInf(d.Rel, 0) {
		out.Rel = &d.Rel
	}
	return json.Marshal(out)
}

func delta(base, cand float64) Delta {
	d := Delta{Base: base, Cand: cand, Rel: math.NaN()}
	if base != 0 {
		d.Rel = (cand - base) / base
	}
	return d
}

// Figure is one figure of a baseline point against a candidate point,
// named as its definitions name it.
type Figure struct {
	// Name is the figure's field name (aggregate_output_tok_s,
	// median_itl_ms, ...); Definitions the rules it follows.
	Name        string `json:"name"`
	Definitions string `json:"definitions"`
	// HigherBetter is true for throughput, false for latency.
	HigherBetter bool  `json:"higher_better"`
	Delta        Delta `json:"delta"`
}

// Worse is how far the candidate is worse than the baseline, as a share
// (negative when better); NaN when the baseline is 0.
func (f Figure) Worse() float64 {
	if f.HigherBetter {
		return -f.Delta.Rel
	}
	return f.Delta.Rel
}

// PointComparison is a baseline point against a candidate point of the
// same key, over the figures of every definition both sides hold.
type PointComparison struct {
	Key Key `json:"point"`
	// BaseDefinitions and CandDefinitions are the definitions each side's
	// figures follow; Figures only those of the definitions both hold.
	BaseDefinitions []string `json:"baseline_definitions"`
	CandDefinitions []string `json:"candidate_definitions"`
	Figures         []Figure `json:"figures"`
	// IdentityDiff lists identity fields both record and that differ;
	// Unverified the ones only one side records.
	IdentityDiff []string `json:"identity_differs"`
	Unverified   []string `json:"identity_unverified"`
	// Problems say why a side's figures are not clean (failed or short
	// requests, a stopped point), one sentence each; CandProblems counts
	// the candidate's (worse), the rest are the baseline's.
	Problems     []string `json:"problems"`
	CandProblems int      `json:"candidate_problems"`
	// FellBehind are the sides' warnings that the twin they measured fell
	// behind its model (receipts.TwinBehind), each led by its side: those
	// figures are the machine's as much as the model's. They do not change
	// the verdict; a worse one says so.
	FellBehind []string `json:"twin_fell_behind,omitempty"`
}

// Figure returns the compared figure of that name.
func (pc *PointComparison) Figure(name string) (Figure, bool) {
	for _, f := range pc.Figures {
		if f.Name == name {
			return f, true
		}
	}
	return Figure{}, false
}

// ErrDefinitions is a comparison of figures that follow different
// definitions: refused, never guessed.
var ErrDefinitions = errors.New("figures of different definitions")

// Definitions lists the definitions the receipt's figures follow.
func (r *Receipt) Definitions() []string {
	var out []string
	if r.Source != SourceVLLM {
		out = append(out, DefinitionsReceipt)
	}
	if r.Summary.Serve != nil {
		out = append(out, DefinitionsServe)
	}
	return out
}

// figures are the receipt's gated figures of one definition.
func figures(r *Receipt, def string) []Figure {
	s := r.Summary
	if def == DefinitionsReceipt {
		out := []Figure{{Name: "aggregate_output_tok_s", HigherBetter: true, Delta: Delta{Base: s.AggregateOutputTokS}},
			{Name: "per_request_output_tok_s", HigherBetter: true, Delta: Delta{Base: s.PerRequestOutputTokS}}}
		if s.MeanBatchMsPerToken > 0 {
			out = append(out, Figure{Name: "mean_batch_ms_per_token", Delta: Delta{Base: s.MeanBatchMsPerToken}})
		}
		return out
	}
	v := s.Serve
	out := []Figure{{Name: "output_throughput", HigherBetter: true, Delta: Delta{Base: v.OutputThroughput}},
		{Name: "request_throughput", HigherBetter: true, Delta: Delta{Base: v.RequestThroughput}}}
	for _, k := range []string{"median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "median_itl_ms", "p99_itl_ms", "median_e2el_ms"} {
		x, _ := v.Stat(k)
		out = append(out, Figure{Name: k, Delta: Delta{Base: x}})
	}
	return out
}

// held reports whether the receipt holds the figure: every one but a
// statistic a vllm bench serve result file did not save.
func held(r *Receipt, def, name string) bool {
	if def != DefinitionsServe || !strings.HasSuffix(name, "_ms") {
		return true
	}
	_, ok := r.Summary.Serve.Stat(name)
	return ok
}

// ComparePoint compares two receipts of the same point key over the
// definitions both sides' figures follow; none in common is an error
// wrapping ErrDefinitions.
func ComparePoint(base, cand *Receipt) (*PointComparison, error) {
	if base == nil || cand == nil {
		return nil, fmt.Errorf("compare: nil receipt")
	}
	if base.Key() != cand.Key() {
		return nil, fmt.Errorf("compare: different points: %s vs %s", base.Key(), cand.Key())
	}
	pc := &PointComparison{
		Key:             base.Key(),
		BaseDefinitions: base.Definitions(),
		CandDefinitions: cand.Definitions(),
		IdentityDiff:    append([]string{}, IdentityDiff(base, cand)...),
		Unverified:      append([]string{}, IdentityUnverified(base, cand)...),
		Problems:        []string{}, // [] in JSON, never null
	}
	if d := promptTokensDiff(base, cand); d != "" {
		pc.IdentityDiff = append(pc.IdentityDiff, d)
	}
	missing := pc.compareFigures(base, cand)
	if len(pc.Figures) == 0 {
		return nil, fmt.Errorf("compare %s: %w: the baseline's follow %s, the candidate's %s; nothing is compared",
			pc.Key, ErrDefinitions, strings.Join(pc.BaseDefinitions, " + "), strings.Join(pc.CandDefinitions, " + "))
	}
	for _, side := range []struct {
		name string
		r    *Receipt
	}{{"baseline", base}, {"candidate", cand}} {
		s := side.r.Summary
		var probs []string
		if s.Failed > 0 || s.Short > 0 {
			probs = append(probs, fmt.Sprintf("%s: %d of %d requests failed, %d short", side.name, s.Failed, s.Requests, s.Short))
		}
		if st := side.r.Stopped; st != nil {
			probs = append(probs, fmt.Sprintf("%s: stopped after %d of %d repeats (%s: %s)", side.name, st.Runs, side.r.Point.Repeats, judgments.Printable(st.Reason), judgments.Printable(st.Message)))
		}
		if side.name == "candidate" {
			probs = append(probs, missing...)
			pc.CandProblems = len(probs)
		}
		pc.Problems = append(pc.Problems, probs...)
		for _, w := range receipts.FellBehind(side.r.Warnings) {
			pc.FellBehind = append(pc.FellBehind, side.name+": "+judgments.Printable(w))
		}
	}
	return pc, nil
}

// compareFigures adds the figures of the definitions both sides follow,
// matched by name, and returns a problem for each baseline figure the
// candidate lacks (mean_batch_ms_per_token of a point stopped before its
// first repeat).
func (pc *PointComparison) compareFigures(base, cand *Receipt) (missing []string) {
	for _, def := range pc.BaseDefinitions {
		if !slices.Contains(pc.CandDefinitions, def) {
			continue
		}
		cf := figures(cand, def)
		for _, f := range figures(base, def) {
			if !held(base, def, f.Name) || !held(cand, def, f.Name) {
				continue // a --save-result file without that statistic
			}
			i := slices.IndexFunc(cf, func(c Figure) bool { return c.Name == f.Name })
			if i < 0 {
				missing = append(missing, fmt.Sprintf("candidate: no %s (%s)", f.Name, def))
				continue
			}
			f.Definitions, f.Delta = def, delta(f.Delta.Base, cf[i].Delta.Base)
			pc.Figures = append(pc.Figures, f)
		}
	}
	return missing
}

// Comparison is a baseline run against a candidate run, point by point.
//
// Its JSON form (vetbench tokens -baseline -json) is schema CompareSchema;
// docs/tokens.md lists the fields.
type Comparison struct {
	Schema string             `json:"schema"`
	Points []*PointComparison `json:"points"`
	// OnlyBase and OnlyCand are points measured on one side only.
	OnlyBase []Key `json:"only_baseline"`
	OnlyCand []Key `json:"only_candidate"`
	// Judged is the verdict once judged (Judge); WriteText prints it.
	Judged *Verdict `json:"verdict,omitempty"`
}

// CompareSchema names the JSON form of a Comparison; fields are added,
// never renamed or removed, under this name.
const CompareSchema = "vetbench.tokens-compare/v1"

// Judge judges the comparison against margin (Verdict) and keeps the
// verdict, for WriteText and the JSON form.
func (c *Comparison) Judge(margin float64) Verdict {
	v := c.Verdict(margin)
	c.Judged = &v
	return v
}

// Compare matches points by key and compares each pair. Two receipts of
// one key on the same side are an error: which one counts would be a
// guess.
func Compare(base, cand []*Receipt) (*Comparison, error) {
	index := func(side string, rs []*Receipt) (map[Key]*Receipt, error) {
		m := map[Key]*Receipt{}
		for _, r := range rs {
			if _, dup := m[r.Key()]; dup {
				return nil, fmt.Errorf("compare: %s has point %s twice", side, r.Key())
			}
			m[r.Key()] = r
		}
		return m, nil
	}
	bm, err := index("baseline", base)
	if err != nil {
		return nil, err
	}
	cm, err := index("candidate", cand)
	if err != nil {
		return nil, err
	}
	c := &Comparison{Schema: CompareSchema, Points: []*PointComparison{}, OnlyBase: []Key{}, OnlyCand: []Key{}}
	for k, b := range bm {
		cr, ok := cm[k]
		if !ok {
			c.OnlyBase = append(c.OnlyBase, k)
			continue
		}
		pc, err := ComparePoint(b, cr)
		if err != nil {
			return nil, err
		}
		c.Points = append(c.Points, pc)
	}
	for k := range cm {
		if _, ok := bm[k]; !ok {
			c.OnlyCand = append(c.OnlyCand, k)
		}
	}
	slices.SortFunc(c.Points, func(a, b *PointComparison) int { return compareKeys(a.Key, b.Key) })
	slices.SortFunc(c.OnlyBase, compareKeys)
	slices.SortFunc(c.OnlyCand, compareKeys)
	return c, nil
}

func compareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Workload, b.Workload), cmp.Compare(a.OutputTokens, b.OutputTokens), cmp.Compare(a.Concurrency, b.Concurrency), cmp.Compare(a.NumPrompts, b.NumPrompts))
}

// WriteText prints the comparison, one line per point, then the identity
// differences (once when every point shares them) and the problems.
func (c *Comparison) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "point\tfigure\tdefinitions\tbaseline → candidate")
	for _, p := range c.Points {
		for _, f := range p.Figures {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Key, f.Name, f.Definitions, fmtDelta(f.Delta, 2))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	notes := func(label string, get func(*PointComparison) []string) {
		common := map[string]int{}
		for _, p := range c.Points {
			for _, s := range get(p) {
				common[s]++
			}
		}
		var all []string
		for s, n := range common {
			if n == len(c.Points) {
				all = append(all, s)
			}
		}
		slices.Sort(all)
		for _, s := range all {
			fmt.Fprintf(&b, "%s: %s\n", label, s)
		}
		for _, p := range c.Points {
			for _, s := range get(p) {
				if common[s] != len(c.Points) {
					fmt.Fprintf(&b, "%s (%s): %s\n", label, p.Key, s)
				}
			}
		}
	}
	notes("identity differs", func(p *PointComparison) []string { return p.IdentityDiff })
	notes("unverified (one side does not record it)", func(p *PointComparison) []string { return p.Unverified })
	for _, p := range c.Points {
		for _, s := range p.Problems {
			fmt.Fprintf(&b, "problem (%s): %s\n", p.Key, s)
		}
		for _, s := range p.FellBehind {
			fmt.Fprintf(&b, "warning (%s): %s\n", p.Key, s)
		}
	}
	for _, k := range c.OnlyBase {
		fmt.Fprintf(&b, "only in baseline: %s\n", k)
	}
	for _, k := range c.OnlyCand {
		fmt.Fprintf(&b, "only in candidate: %s\n", k)
	}
	if v := c.Judged; v != nil {
		fmt.Fprintf(&b, "verdict: %s (margin %.1f%%)\n", v.Outcome, 100*v.Margin)
		for _, r := range v.Reasons {
			fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Text is WriteText into a string.
func (c *Comparison) Text() string {
	var b strings.Builder
	_ = c.WriteText(&b)
	return b.String()
}

func fmtDelta(d Delta, prec int) string {
	rel := "n/a"
	if !math.IsNaN(d.Rel) {
		rel = fmt.Sprintf("%+.1f%%", d.Rel*100)
	}
	return fmt.Sprintf("%.*f → %.*f (%s)", prec, d.Base, prec, d.Cand, rel)
}

// Outcomes of a comparison's verdict, as the exit contract reads them.
const (
	Pass            = "pass"              // exit 0
	Worse           = "worse"             // exit 1
	CouldNotCompare = "could not compare" // exit 2
)

// Verdict is a comparison judged against a margin.
type Verdict struct {
	Outcome string   `json:"outcome"`
	Margin  float64  `json:"margin"`
	Reasons []string `json:"reasons,omitempty"`
}

// Verdict judges the comparison: could not compare when a baseline point
// was not measured, nothing was compared, an identity field differs or
// the baseline's own figures are not clean; else worse when the
// candidate had failed or short requests or stopped, or any figure is
// worse than the baseline's by more than margin (a share: 0.05 = 5%);
// else pass. Nothing is skipped silently: every reason is listed.
func (c *Comparison) Verdict(margin float64) Verdict {
	v := Verdict{Outcome: Pass, Margin: margin}
	var cannot, worse []string
	for _, k := range c.OnlyBase {
		cannot = append(cannot, fmt.Sprintf("baseline point %s has no candidate", k))
	}
	if len(c.Points) == 0 {
		cannot = append(cannot, "no point is on both sides")
	}
	for _, p := range c.Points {
		for _, d := range p.IdentityDiff {
			cannot = append(cannot, fmt.Sprintf("%s: identity differs: %s", p.Key, d))
		}
		base := p.Problems[:len(p.Problems)-p.CandProblems]
		for _, s := range base {
			cannot = append(cannot, fmt.Sprintf("%s: %s", p.Key, s))
		}
		for _, s := range p.Problems[len(base):] {
			worse = append(worse, fmt.Sprintf("%s: %s", p.Key, s))
		}
		for _, f := range p.Figures {
			if w := f.Worse(); !math.IsNaN(w) && w > margin {
				worse = append(worse, fmt.Sprintf("%s: %s (%s) worse by %.1f%%: %s", p.Key, f.Name, f.Definitions, 100*w, fmtDelta(f.Delta, 2)))
			}
		}
	}
	switch {
	case len(cannot) > 0:
		v.Outcome, v.Reasons = CouldNotCompare, append(cannot, worse...)
	case len(worse) > 0:
		v.Outcome, v.Reasons = Worse, append(worse, c.behindReasons()...)
	}
	return v
}

// behindReasons are a worse verdict's last reasons when a side's twin fell
// behind its model: what is slower may be the machine that ran it.
func (c *Comparison) behindReasons() []string {
	var out []string
	for _, p := range c.Points {
		sides := map[string]bool{}
		for _, w := range p.FellBehind {
			side, _, _ := strings.Cut(w, ":")
			sides[side] = true
		}
		for _, side := range []string{"baseline", "candidate"} {
			if sides[side] {
				out = append(out, fmt.Sprintf("%s: the %s's twin fell behind its model: part of the difference may be the machine that ran it, not the software", p.Key, side))
			}
		}
	}
	return out
}

// RunSchema names the JSON form of a measured run (vetbench tokens
// -json without -baseline); fields are added, never renamed or removed,
// under this name.
const RunSchema = "vetbench.tokens-run/v1"

// Measured is a measured run as vetbench tokens -json prints it: whether
// every point ran and verified, and the points' receipts in order.
type Measured struct {
	Schema   string     `json:"schema"`
	Passed   bool       `json:"passed"`
	Receipts []*Receipt `json:"receipts"`
}

// NewMeasured is the run of recs; passed says every point ran and
// verified.
func NewMeasured(recs []*Receipt, passed bool) *Measured {
	if recs == nil {
		recs = []*Receipt{}
	}
	return &Measured{Schema: RunSchema, Passed: passed, Receipts: recs}
}
