package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/receipts/matrix"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// The streaming figures: token-throughput points (receipts/tokens) as
// curves against concurrency, and speed matrices (receipts/matrix) as heat
// maps. Each is one Section built from the library's own figures.

// TokensEntry is one token-throughput receipt of a run.
type TokensEntry struct {
	File    string
	Receipt *tokens.Receipt
}

// MatrixEntry is one speed matrix of a run.
type MatrixEntry struct {
	File   string
	Matrix *matrix.Matrix
}

// tokenGroup is one workload × output length: a chart's x axis.
type tokenGroup struct {
	workload string
	output   int
}

func (b *builder) tokenGroups() []tokenGroup {
	var gs []tokenGroup
	for _, r := range b.runs() {
		for _, e := range r.Tokens {
			g := tokenGroup{e.Receipt.Point.Workload, e.Receipt.Point.OutputTokens}
			if !slices.Contains(gs, g) {
				gs = append(gs, g)
			}
		}
	}
	slices.SortFunc(gs, func(a, b tokenGroup) int {
		return cmp.Or(cmp.Compare(a.workload, b.workload), cmp.Compare(a.output, b.output))
	})
	return gs
}

func (r *Run) tokensOf(g tokenGroup) []*tokens.Receipt {
	var out []*tokens.Receipt
	for _, e := range r.Tokens {
		if e.Receipt.Point.Workload == g.workload && e.Receipt.Point.OutputTokens == g.output {
			out = append(out, e.Receipt)
		}
	}
	slices.SortFunc(out, func(a, b *tokens.Receipt) int { return cmp.Compare(a.Point.Concurrency, b.Point.Concurrency) })
	return out
}

func (r *Run) allTokens() []*tokens.Receipt {
	var out []*tokens.Receipt
	for _, e := range r.Tokens {
		out = append(out, e.Receipt)
	}
	return out
}

// compareTokens compares the runs' token points (receipts/tokens); nil
// without a pair of runs that both hold some.
func (b *builder) compareTokens() error {
	if !b.pair() || len(b.base.Tokens) == 0 || len(b.cand.Tokens) == 0 {
		return nil
	}
	c, err := tokens.Compare(b.base.allTokens(), b.cand.allTokens())
	if err != nil {
		return fmt.Errorf("report: token throughput: %w", err)
	}
	b.tokenCmp = c
	for _, p := range c.Points {
		for _, d := range p.IdentityDiff {
			b.otherDiff = append(b.otherDiff, "token throughput "+p.Key.String()+": "+d)
		}
	}
	return nil
}

func (b *builder) tokensSection() (Section, bool) {
	groups := b.tokenGroups()
	if len(groups) == 0 {
		return Section{}, false
	}
	s := Section{ID: "tokens", Title: "Token throughput (streaming decode)"}
	note := b.tokensScaleNote()
	if note != "" {
		s.Notes = append(s.Notes, "Figures of a "+note+".")
	}
	if sn := b.tokenSpreadNote(); sn != "" {
		s.Notes = append(s.Notes, sn)
	}
	for _, g := range groups {
		s.Charts = append(s.Charts, b.tokenCharts(g, note)...)
	}
	s.Tables = append(s.Tables, b.tokenPoints(groups))
	if b.tokenCmp != nil {
		s.Tables = append(s.Tables, b.tokenComparison())
	}
	return s, true
}

// tokenCharts are one workload × output length's curves: aggregate tok/s
// and batch time per token against concurrency, one series per run.
func (b *builder) tokenCharts(g tokenGroup, note string) []Chart {
	name := fmt.Sprintf("%s, %d output tokens", g.workload, g.output)
	agg := LineChart{Title: "aggregate output tok/s: " + name, Note: note, XLabel: "concurrency (requests at once)", YLabel: "output tok/s", LogX: true}
	tpot := LineChart{Title: "batch ms per token (mean_tpot_ms): " + name, Note: note, XLabel: "concurrency (requests at once)", YLabel: "batch ms per token", LogX: true}
	var ns []int
	for i, r := range b.runs() {
		col := palette[i%len(palette)]
		sa, st := Series{Name: r.Label, Color: col}, Series{Name: r.Label, Color: col}
		for _, t := range r.tokensOf(g) {
			c := t.Point.Concurrency
			if sp, ok := b.tokenSpread(r, t, tokAggregate); ok {
				sa.Points = append(sa.Points, sp.point(c, num, " tok/s"))
				ns = append(ns, sp.N)
			}
			if sp, ok := b.tokenSpread(r, t, tokBatch); ok {
				st.Points = append(st.Points, sp.scaled(1000).point(c, num, " ms"))
			}
		}
		agg.Series, tpot.Series = append(agg.Series, sa), append(tpot.Series, st)
	}
	agg.SpreadLabel, tpot.SpreadLabel = passCounts(ns), passCounts(ns)
	return []Chart{agg, tpot}
}

// tokenPoints is every token point of every run: the medians of its
// passes (as the curves), its requests, failures and stops over them all.
func (b *builder) tokenPoints(groups []tokenGroup) Table {
	pts := Table{Caption: "Token-throughput points: medians of the passes (as the curves)", CSV: "tokens.csv", Header: []string{"run", "workload", "output tokens", "c", "repeats", "passes",
		"aggregate tok/s", "per-request tok/s", "batch ms per token", "median TTFT ms (vllm bench serve)", "requests", "failed", "short", "stopped"}}
	for _, g := range groups {
		for _, r := range b.runs() {
			for _, t := range r.tokensOf(g) {
				med := func(f tokenFigure, scale float64) Cell {
					if sp, ok := b.tokenSpread(r, t, f); ok {
						return f2(sp.scaled(scale).Median)
					}
					return Cell{Text: "—"}
				}
				agg, _ := b.tokenSpread(r, t, tokAggregate)
				passes := r.tokenPasses(t)
				var requests, failed, short int
				for _, p := range passes {
					requests, failed, short = requests+p.Summary.Requests, failed+p.Summary.Failed, short+p.Summary.Short
				}
				pts.Rows = append(pts.Rows, []Cell{{Text: r.Label}, {Text: g.workload}, itoa(g.output), itoa(t.Point.Concurrency), itoa(t.Point.Repeats),
					{Text: fmt.Sprintf("%d (%s)", len(passes), orDash(agg.From)), Raw: strconv.Itoa(len(passes))},
					med(tokAggregate, 1), med(tokPerRequest, 1), med(tokBatch, 1000), med(tokTTFT, 1000), itoa(requests), count(failed), count(short), stoppedCell(passes)})
			}
		}
	}
	return pts
}

// stoppedCell names the passes of a token point that stopped early, and
// why; "—" when none did.
func stoppedCell(passes []*tokens.Receipt) Cell {
	var lines []string
	for k, t := range passes {
		if st := t.Stopped; st != nil {
			line := fmt.Sprintf("%s after %d of %d repeats: %s", st.Reason, st.Runs, t.Point.Repeats, st.Message)
			if len(passes) > 1 {
				line = fmt.Sprintf("pass %d: %s", k+1, line)
			}
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return Cell{Text: "—"}
	}
	return Cell{Text: strings.Join(lines, "; "), Tone: Bad}
}

// tokenComparison is receipts/tokens' comparison of the runs, point by
// point, and the points only one side measured.
func (b *builder) tokenComparison() Table {
	c := b.tokenCmp
	caption := "Token throughput, " + b.cand.Label + " vs " + b.base.Label + " (receipts/tokens)"
	if len(b.base.TokenPasses)+len(b.cand.TokenPasses) > 0 {
		caption += ", first pass of each (the curves and the speed gate use every pass)"
	}
	t := Table{Caption: caption, CSV: "tokens_compare.csv",
		Header: []string{"point", "aggregate tok/s", "per-request tok/s", "batch ms per token", "median TTFT ms (vllm bench serve)", "identity", "problems"}}
	for _, p := range c.Points {
		// No difference among the fields both record; what only one side
		// records is unverified, not equal.
		id := Cell{Text: "no difference recorded"}
		switch {
		case len(p.IdentityDiff) > 0:
			id = Cell{Text: strings.Join(p.IdentityDiff, "; "), Tone: Bad}
		case len(p.Unverified) > 0:
			id = Cell{Text: "unverified: " + strings.Join(p.Unverified, "; "), Tone: Warn}
		}
		prob := Cell{Text: strings.Join(p.Problems, "; ")}
		if prob.Text != "" {
			prob.Tone = Bad
		}
		t.Rows = append(t.Rows, []Cell{{Text: p.Key.String()}, figCell(p, "aggregate_output_tok_s", 1), figCell(p, "per_request_output_tok_s", 1),
			figCell(p, "mean_batch_ms_per_token", -1), figCell(p, "median_ttft_ms", -1), id, prob})
	}
	for _, side := range []struct {
		name string
		ks   []tokens.Key
	}{{b.base.Label + " only", c.OnlyBase}, {b.cand.Label + " only", c.OnlyCand}} {
		for _, k := range side.ks {
			t.Rows = append(t.Rows, []Cell{{Text: k.String()}, {Text: "—"}, {Text: "—"}, {Text: "—"}, {Text: "—"}, {Text: "—"}, {Text: "measured by the " + side.name, Tone: Warn}})
		}
	}
	return t
}

// deltaCell shows base → cand and the change; better is +1 when higher is
// better, −1 when lower is. The tone only marks the direction of a change
// beyond 5%: the token figures carry no significance test here.
func deltaCell(d tokens.Delta, better int) Cell {
	c := Cell{Text: num(d.Base) + " → " + num(d.Cand)}
	if math.IsNaN(d.Rel) {
		return c
	}
	c.Text += fmt.Sprintf(" (%+.1f%%)", 100*d.Rel)
	switch {
	case float64(better)*d.Rel < -0.05:
		c.Tone = Warn
	case float64(better)*d.Rel > 0.05:
		c.Tone = OK
	}
	return c
}

func (b *builder) tokensScaleNote() string {
	var parts []string
	for _, r := range b.runs() {
		s := 1.0
		for _, e := range r.Tokens {
			s = max(s, e.Receipt.Target.TimeScale)
		}
		for _, e := range r.Matrices {
			s = max(s, e.Matrix.Target.TimeScale)
		}
		if s > 1 {
			parts = append(parts, fmt.Sprintf("%s ×%s", r.Label, num(s)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "time-scaled twin (" + strings.Join(parts, ", ") + "): not real-time figures"
}

// MatrixHeatMap lays a speed matrix out as a heat map: rows contexts,
// columns requests at once, colour total tok/s (log scale), the status
// label in each cell and its reason on hover.
func MatrixHeatMap(title string, m *matrix.Matrix) HeatMap {
	h := HeatMap{Title: title, RowLabel: "context", ColLabel: "requests at once", Unit: "tok/s", LogColor: true, Rows: m.Contexts()}
	cs := m.Concurrencies()
	for _, c := range cs {
		h.Cols = append(h.Cols, strconv.Itoa(c))
	}
	for _, ctx := range h.Rows {
		var row []HeatCell
		for _, c := range cs {
			cell := m.Cell(ctx, c)
			if cell == nil {
				row = append(row, HeatCell{Status: "not run"})
				continue
			}
			row = append(row, HeatCell{Value: cell.TotalTokS, Status: cell.Status.Label(), Tip: cell.Reason})
		}
		h.Cells = append(h.Cells, row)
	}
	return h
}

func (b *builder) matrixSection() (Section, bool) {
	s := Section{ID: "matrix", Title: "Speed matrix (sustained decode)"}
	note := b.tokensScaleNote()
	for _, r := range b.runs() {
		for i, e := range r.Matrices {
			m := e.Matrix
			name := r.Label
			if len(r.Matrices) > 1 {
				name += " " + strconv.Itoa(i+1)
			}
			h := MatrixHeatMap("speed matrix, "+name+": total output tok/s", m)
			h.Note = note
			s.Charts = append(s.Charts, h)
			line := name + ": " + e.File + ", identity " + shortDigest(m.IdentityDigest())
			if m.Description != "" {
				line += ". " + m.Description
			}
			if r.LaterMatrices > 0 && i == len(r.Matrices)-1 {
				line += fmt.Sprintf(". The first pass's; %d more in %s/pass2 … are not drawn (the speed gate reads every pass's %s lines)", r.LaterMatrices, r.ReceiptDir, BenchName)
			}
			s.Notes = append(s.Notes, line)
			if m.Stopped != nil {
				s.Banners = append(s.Banners, Banner{Tone: Bad, Title: name + ": the matrix stopped early", Lines: []string{m.Stopped.Reason + ": " + m.Stopped.Message}})
			}
			csvName := strings.ReplaceAll(name, " ", "_")
			t := HeatMapTable(h, "matrix_"+csvName+".csv")
			t.Caption = "Cells, " + name
			t.Header = append(t.Header, "reason")
			for j := range t.Rows {
				t.Rows[j] = append(t.Rows[j], Cell{Text: t.Rows[j][3].Tip})
			}
			t.CSVOnly = true
			pf := Table{Caption: "Prefill, " + name, CSV: "prefill_" + csvName + ".csv", Header: []string{"context", "prefill tok/s", "TTFT ms", "status"}}
			for _, p := range m.Prefill {
				pf.Rows = append(pf.Rows, []Cell{{Text: p.Context}, optCell(p.TokS), optCell(p.TTFTMs), {Text: p.Status.Label(), Tip: p.Reason}})
			}
			s.Tables = append(s.Tables, t, pf)
		}
	}
	if len(s.Charts) == 0 {
		return Section{}, false
	}
	if note != "" {
		s.Notes = append([]string{"Figures of a " + note + "."}, s.Notes...)
	}
	return s, true
}

func optCell(v *float64) Cell {
	if v == nil {
		return Cell{Text: "—"}
	}
	return Cell{Text: num(*v), Raw: raw(*v)}
}

// figCell is a compared figure's delta cell; "—" when the comparison has
// no such figure (a side lacks its definition).
func figCell(p *tokens.PointComparison, name string, sign int) Cell {
	if f, ok := p.Figure(name); ok {
		return deltaCell(f.Delta, sign)
	}
	return Cell{Text: "—"}
}
