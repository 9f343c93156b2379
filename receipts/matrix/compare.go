package matrix

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// DefaultTolerance is the relative error a figure may have against its
// baseline before the comparison calls it out (±15 %).
const DefaultTolerance = 0.15

// Figure names of a comparison, in the order printed.
const (
	FigTotal      = "total tok/s"
	FigPerRequest = "per request tok/s"
	FigTTFT       = "TTFT ms"
	FigTBT        = "time between tokens ms"
)

// FigureNames lists the compared figures in order.
var FigureNames = []string{FigTotal, FigPerRequest, FigTTFT, FigTBT}

// FigureDiff is one figure of a cell in both matrices. Err is (candidate
// − baseline) ÷ baseline; nil when either side lacks the figure or the
// baseline is 0.
type FigureDiff struct {
	Name       string   `json:"name"`
	Base, Cand *float64 `json:"-"`
	Err        *float64 `json:"error,omitempty"`
	// Over: |Err| above the tolerance, or a baseline of 0 against a
	// candidate that is not.
	Over bool `json:"over_tolerance,omitempty"`
	// Absent: the baseline has the figure and the candidate does not,
	// though their statuses are equal (the figure could not be compared).
	Absent bool `json:"absent,omitempty"`
}

// Diff is one prefill row or sustained decode cell of the baseline and
// what the candidate has there.
type Diff struct {
	Phase       string `json:"phase"`
	Context     string `json:"context"`
	Concurrency int    `json:"requests_at_once"`
	Base        Status `json:"baseline_status"`
	// Cand is "" when the candidate lacks the cell (Missing).
	Cand    Status       `json:"candidate_status,omitempty"`
	Missing bool         `json:"missing,omitempty"`
	Figures []FigureDiff `json:"figures,omitempty"`
}

// Name is "prefill 8K" or "8K c=16".
func (d Diff) Name() string {
	if d.Phase == PhasePrefill {
		return "prefill " + d.Context
	}
	return fmt.Sprintf("%s c=%d", d.Context, d.Concurrency)
}

// StatusChanged reports a cell whose status differs.
func (d Diff) StatusChanged() bool { return !d.Missing && d.Base != d.Cand }

// Comparison is a candidate matrix read cell by cell against a baseline.
type Comparison struct {
	Tolerance float64 `json:"tolerance"`
	// Subset: cells the candidate did not measure were left out, not
	// counted missing (NotCompared lists them).
	Subset bool   `json:"subset,omitempty"`
	Diffs  []Diff `json:"cells"`
	// Extra are the candidate's cells the baseline does not have.
	Extra []string `json:"extra,omitempty"`
	// NotCompared are the baseline's cells left out under Subset.
	NotCompared []string `json:"not_compared,omitempty"`
	// Notes say what differs between the two runs' settings, then which
	// compared cells' twin fell behind its model, on which side.
	Notes []string `json:"notes,omitempty"`
	// BaseStopped and CandStopped say a side stopped early (its Stopped):
	// a stopped baseline is no verdict, a stopped candidate worse.
	BaseStopped string `json:"baseline_stopped,omitempty"`
	CandStopped string `json:"candidate_stopped,omitempty"`
}

// CompareOptions tune Compare.
type CompareOptions struct {
	// Tolerance is the relative error allowed per figure (0:
	// DefaultTolerance).
	Tolerance float64
	// Subset compares only the cells the candidate has; by default a
	// baseline cell the candidate lacks is missing and the comparison
	// cannot pass.
	Subset bool
}

// ErrNothingInCommon: the candidate has none of the baseline's cells.
var ErrNothingInCommon = errors.New("the matrices have no cell in common")

// Compare reads cand against base, prefill rows first, then every cell,
// in the baseline's order. Cells are matched by context label and
// concurrency; statuses must be equal; each figure both cells carry is
// compared. Errors are for unusable options and for matrices with no cell
// in common.
func Compare(base, cand *Matrix, o CompareOptions) (*Comparison, error) {
	tol := o.Tolerance
	if tol == 0 {
		tol = DefaultTolerance
	}
	if bad(tol) || tol < 0 {
		return nil, fmt.Errorf("tolerance %v: want a finite number >= 0", tol)
	}
	c := &Comparison{Tolerance: tol, Subset: o.Subset, Notes: settingsNotes(base, cand),
		BaseStopped: base.Stopped.text(), CandStopped: cand.Stopped.text()}
	common := 0
	for _, p := range base.Prefill {
		d := Diff{Phase: PhasePrefill, Context: p.Context, Concurrency: p.Requests, Base: p.Status}
		if q := cand.prefill(p.Context); q != nil {
			d.Cand = q.Status
			d.Figures = figures(tol, d, [][2]*float64{{p.TokS, q.TokS}, {}, {p.TTFTMs, q.TTFTMs}, {}})
			common++
		} else {
			d.Missing = true
		}
		c.add(d)
	}
	for _, b := range base.Cells {
		d := Diff{Phase: PhaseSustained, Context: b.Context, Concurrency: b.Concurrency, Base: b.Status}
		if k := cand.Cell(b.Context, b.Concurrency); k != nil {
			d.Cand = k.Status
			d.Figures = figures(tol, d, [][2]*float64{
				{b.TotalTokS, k.TotalTokS}, {b.PerRequestTokS, k.PerRequestTokS},
				{b.TTFTMs, k.TTFTMs}, {b.TimeBetweenTokensMs, k.TimeBetweenTokensMs}})
			common++
			c.Notes = append(c.Notes, behindNotes(d.Name(), &b, k)...)
		} else {
			d.Missing = true
		}
		c.add(d)
	}
	for _, p := range cand.Prefill {
		if base.prefill(p.Context) == nil {
			c.Extra = append(c.Extra, "prefill "+p.Context)
		}
	}
	for _, k := range cand.Cells {
		if base.Cell(k.Context, k.Concurrency) == nil {
			c.Extra = append(c.Extra, cellKey{k.Context, k.Concurrency}.String())
		}
	}
	if common == 0 {
		return c, fmt.Errorf("%w (baseline %s; candidate %s)", ErrNothingInCommon, gridText(base), gridText(cand))
	}
	return c, nil
}

// behindNotes are the notes for a cell whose twin fell behind its model
// on either side (receipts.TwinBehind): its figures are the machine's as
// much as the model's, whatever the verdict.
func behindNotes(name string, base, cand *Cell) []string {
	var out []string
	for _, side := range []struct {
		name string
		cell *Cell
	}{{"baseline", base}, {"candidate", cand}} {
		for _, w := range receipts.FellBehind(side.cell.Warnings) {
			out = append(out, fmt.Sprintf("%s: %s: %s", name, side.name, w))
		}
	}
	return out
}

// text is how a comparison quotes the stop ("" for none).
func (s *Stopped) text() string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("stopped early (%s: %s)", judgments.Printable(s.Reason), judgments.Printable(s.Message))
}

func (c *Comparison) add(d Diff) {
	if d.Missing && c.Subset {
		c.NotCompared = append(c.NotCompared, d.Name())
		return
	}
	c.Diffs = append(c.Diffs, d)
}

func (m *Matrix) prefill(context string) *Prefill {
	for i := range m.Prefill {
		if m.Prefill[i].Context == context {
			return &m.Prefill[i]
		}
	}
	return nil
}

// figures compares the pairs in FigureNames order; a nil pair is a figure
// the phase does not have.
func figures(tol float64, d Diff, pairs [][2]*float64) []FigureDiff {
	var out []FigureDiff
	measured := func(s Status) bool { return s == Valid || s == RequestsQueued }
	for i, p := range pairs {
		if p == [2]*float64{} {
			continue
		}
		f := FigureDiff{Name: FigureNames[i], Base: p[0], Cand: p[1]}
		switch {
		case p[0] == nil:
		case p[1] == nil:
			f.Absent = d.Base == d.Cand && measured(d.Base)
		case *p[0] == 0:
			f.Over = *p[1] != 0
		default:
			e := (*p[1] - *p[0]) / *p[0]
			f.Err = &e
			f.Over = math.Abs(e) > tol
		}
		if f.Base != nil || f.Cand != nil {
			out = append(out, f)
		}
	}
	return out
}

// Counts of a comparison.
type Counts struct {
	Compared, StatusChanged, OverTolerance, Missing, Absent int
}

// Counts tallies the comparison: cells compared, statuses changed, cells
// with a figure beyond the tolerance (statuses equal), cells missing from
// the candidate, figures that could not be compared.
func (c *Comparison) Counts() Counts {
	var n Counts
	for _, d := range c.Diffs {
		if d.Missing {
			n.Missing++
			continue
		}
		n.Compared++
		if d.StatusChanged() {
			n.StatusChanged++
			continue
		}
		if slices.ContainsFunc(d.Figures, func(f FigureDiff) bool { return f.Over }) {
			n.OverTolerance++
		}
		for _, f := range d.Figures {
			if f.Absent {
				n.Absent++
			}
		}
	}
	return n
}

// Incomplete reports a comparison that cannot pass for want of data: a
// baseline cell or figure the candidate lacks, or a baseline that stopped
// early.
func (c *Comparison) Incomplete() bool {
	n := c.Counts()
	return n.Missing > 0 || n.Absent > 0 || c.BaseStopped != ""
}

// Worse reports a status change, a figure beyond the tolerance or a
// candidate that stopped early.
func (c *Comparison) Worse() bool {
	n := c.Counts()
	return n.StatusChanged > 0 || n.OverTolerance > 0 || c.CandStopped != ""
}

// Verdict is the comparison in a word: INCOMPLETE (a cell or figure
// missing), DIFFERENT (a status changed or a figure beyond the
// tolerance), or SAME.
func (c *Comparison) Verdict() string {
	switch {
	case c.Incomplete():
		return "INCOMPLETE"
	case c.Worse():
		return "DIFFERENT"
	}
	return "SAME"
}

// WriteText prints the comparison cell by cell: statuses (= equal, ≠
// changed), then each figure as baseline → candidate (error), "!" past the
// tolerance; then the cells only one side has and a summary line.
func (c *Comparison) WriteText(w io.Writer) error {
	var b strings.Builder
	tol := pct(c.Tolerance)
	fmt.Fprintf(&b, "Against the baseline, cell by cell (baseline → candidate, error; ! beyond ±%s)\n", tol)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cell\tstatus\t"+strings.Join(FigureNames, "\t"))
	for _, d := range c.Diffs {
		row := []string{d.Name(), statusText(d)}
		for _, name := range FigureNames {
			row = append(row, figureText(d, name))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if len(c.NotCompared) > 0 {
		fmt.Fprintf(&b, "not measured, left out (-baseline-subset): %s\n", strings.Join(c.NotCompared, ", "))
	}
	if len(c.Extra) > 0 {
		fmt.Fprintf(&b, "not in the baseline: %s\n", strings.Join(c.Extra, ", "))
	}
	for _, s := range []struct{ side, text string }{{"baseline", c.BaseStopped}, {"candidate", c.CandStopped}} {
		if s.text != "" {
			fmt.Fprintf(&b, "%s %s\n", s.side, s.text)
		}
	}
	n := c.Counts()
	fmt.Fprintf(&b, "%d cells compared: %d with a status changed, %d with a figure beyond ±%s, %d missing from the candidate",
		n.Compared, n.StatusChanged, n.OverTolerance, tol, n.Missing)
	if n.Absent > 0 {
		fmt.Fprintf(&b, ", %d figures absent", n.Absent)
	}
	fmt.Fprintf(&b, ": %s\n", c.Verdict())
	_, err := io.WriteString(w, b.String())
	return err
}

func statusText(d Diff) string {
	switch {
	case d.Missing:
		return d.Base.Label() + " ≠ MISSING"
	case d.StatusChanged():
		return d.Base.Label() + " ≠ " + d.Cand.Label()
	}
	return d.Base.Label() + " ="
}

func figureText(d Diff, name string) string {
	i := slices.IndexFunc(d.Figures, func(f FigureDiff) bool { return f.Name == name })
	if i < 0 {
		return Missing
	}
	f := d.Figures[i]
	show := num1
	if strings.HasSuffix(name, "tok/s") {
		show = fmtTokS
	}
	s := show(f.Base) + " → " + show(f.Cand)
	switch {
	case f.Absent:
		s += " (absent)"
	case f.Err != nil:
		s += " (" + signedPct(*f.Err) + ")"
	case f.Over:
		s += " (baseline 0)"
	}
	if f.Over {
		s += " !"
	}
	return s
}

func num1(v *float64) string {
	if v == nil {
		return Missing
	}
	return commas(strconv.FormatFloat(*v, 'f', 1, 64))
}

func pct(v float64) string { return strconv.FormatFloat(v*100, 'f', -1, 64) + "%" }

func signedPct(v float64) string {
	s := strconv.FormatFloat(v*100, 'f', 1, 64) + "%"
	if v >= 0 {
		s = "+" + s
	}
	return s
}

// settingsNotes names the recorded settings that differ (window, output
// length, time scale): a comparison across them is still printed, but
// the reader should know.
func settingsNotes(base, cand *Matrix) []string {
	var out []string
	if a, b := base.DurationSeconds, cand.DurationSeconds; a > 0 && b > 0 && a != b {
		out = append(out, fmt.Sprintf("cell windows differ: baseline %gs, candidate %gs", a, b))
	}
	if a, b := base.MaxOutputTokens, cand.MaxOutputTokens; a > 0 && b > 0 && a != b {
		out = append(out, fmt.Sprintf("max output tokens differ: baseline %d, candidate %d", a, b))
	}
	if s := cand.Target.TimeScale; s > 1 {
		out = append(out, fmt.Sprintf("the candidate is a twin at ×%g time scale: its figures are model time", s))
	}
	return out
}

func gridText(m *Matrix) string {
	return fmt.Sprintf("%d prefill rows, contexts %s × levels %v", len(m.Prefill), strings.Join(m.Contexts(), ","), m.Concurrencies())
}
