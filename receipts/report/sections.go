package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/answers"
	"github.com/vetbench/vetbench/receipts/speed"
	"github.com/vetbench/vetbench/receipts/tally"
)

// curve is one run × arm of one set, in level order.
type curve struct {
	run  *Run
	arm  string
	name string
	pts  []*receipts.Receipt
}

func (b *builder) curves(set string) []curve {
	var cs []curve
	for _, arm := range b.arms() {
		for _, r := range b.runs() {
			c := curve{run: r, arm: arm, name: b.seriesName(r, arm)}
			for _, p := range r.Entries {
				if k := p.Key(); k.Set == set && k.Arm == arm {
					c.pts = append(c.pts, p.Receipt)
				}
			}
			if len(c.pts) > 0 {
				cs = append(cs, c)
			}
		}
	}
	return cs
}

// style gives the candidate a dashed line in the baseline's colour
// family: the run is the line style, the arm the colour.
func (b *builder) style(c curve, i int) (color string, dashed bool) {
	arm := 0
	for j, a := range b.arms() {
		if a == c.arm {
			arm = j
		}
	}
	dashed = b.pair() && c.run == b.cand
	if b.pair() {
		return palette[(2*arm+btoi(dashed))%len(palette)], dashed
	}
	return palette[i%len(palette)], false
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

func (b *builder) scaleNote() string {
	var parts []string
	for _, r := range b.runs() {
		if s := timeScale(r); s > 1 {
			parts = append(parts, fmt.Sprintf("%s ×%s", r.Label, num(s)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "time-scaled twin (" + strings.Join(parts, ", ") + "): not real-time figures"
}

func (b *builder) setSection(set string) Section {
	cs := b.curves(set)
	note := b.scaleNote()
	line := func(title, ylabel string, y func(*receipts.Receipt) (float64, bool), tip func(float64) string) LineChart {
		ch := LineChart{Title: set + ": " + title, Note: note, XLabel: "concurrency (judgments in flight)", YLabel: ylabel, LogX: true}
		for i, c := range cs {
			col, dash := b.style(c, i)
			s := Series{Name: c.name, Color: col, Dashed: dash}
			for _, r := range c.pts {
				if v, ok := y(r); ok {
					s.Points = append(s.Points, Point{X: float64(r.Pins.Concurrency), Y: v, Tip: fmt.Sprintf("c=%d: %s", r.Pins.Concurrency, tip(v))})
				}
			}
			ch.Series = append(ch.Series, s)
		}
		return ch
	}
	thr := line("throughput", "judgments/s", func(r *receipts.Receipt) (float64, bool) {
		return r.Throughput.JudgmentsPerSecond, true
	}, func(v float64) string { return num(v) + " judgments/s" })
	lat := line("p95 latency of a judgment", "p95 latency (s)", func(r *receipts.Receipt) (float64, bool) {
		return r.Throughput.Latency.P95, r.Throughput.Latency.N > 0
	}, func(v float64) string { return num(v) + " s" })
	hits := LineChart{Title: set + ": cache hit rates", XLabel: "concurrency (judgments in flight)", YLabel: "hit rate", LogX: true, YMax: 1, YPercent: true}
	for i, c := range cs {
		col, dash := b.style(c, i)
		for _, kind := range []struct {
			name string
			mm   bool
		}{{"prefix", false}, {"mm", true}} {
			s := Series{Name: c.name + " " + kind.name, Color: col, Dashed: dash}
			if kind.mm {
				// The mm curve of a run is the prefix curve's colour, lighter.
				s.Color = lighter(col)
			}
			for _, r := range c.pts {
				if v := hit(r, kind.mm); v != nil {
					s.Points = append(s.Points, Point{X: float64(r.Pins.Concurrency), Y: *v, Tip: fmt.Sprintf("c=%d: %.1f%%", r.Pins.Concurrency, 100**v)})
				}
			}
			hits.Series = append(hits.Series, s)
		}
	}
	counting := b.prefixCountingNote(cs)
	hits.Note = counting
	s := Section{ID: "set-" + set, Title: "Set " + set, Charts: []Chart{thr, lat, hits, b.movedChart(set)}}
	if note != "" {
		s.Notes = append(s.Notes, "Speed figures of a "+note+".")
	}
	if counting != "" {
		s.Notes = append(s.Notes, strings.ToUpper(counting[:1])+counting[1:]+".")
	}
	s.Tables = append(s.Tables, b.speedTable(set, cs), b.healthTable(set, cs))
	at, mt := b.answerTables(set)
	s.Tables = append(s.Tables, at, mt)
	return s
}

func (b *builder) speedTable(set string, cs []curve) Table {
	t := Table{Caption: "Speed and caches per point", CSV: "speed_" + set + ".csv",
		Header: []string{"run", "arm", "c", "judgments", "judgments/s", "images/s", "p50 s", "p95 s", "p99 s", "prefix hit", "mm hit", "time scale"}}
	for _, c := range cs {
		for _, r := range c.pts {
			tp := r.Throughput
			t.Rows = append(t.Rows, []Cell{{Text: c.run.Label}, {Text: orDash(c.arm)}, itoa(r.Pins.Concurrency), itoa(tp.Judgments),
				f2(tp.JudgmentsPerSecond), f2(tp.ImagesPerSecond), f4(tp.Latency.P50), f4(tp.Latency.P95), f4(tp.Latency.P99),
				ratio(hit(r, false)), ratio(hit(r, true)), {Text: num(max(1, r.Target.TimeScale)), Raw: raw(max(1, r.Target.TimeScale))}})
		}
	}
	return t
}

func (b *builder) healthTable(set string, cs []curve) Table {
	t := Table{Caption: "Failures, stops and self-checks per point", CSV: "checks_" + set + ".csv",
		Header: []string{"run", "arm", "c", "judgments", "failed", "discarded", "stopped", "server /metrics", "Little's law", "reconciliation", "warnings"}}
	for _, c := range cs {
		for _, r := range c.pts {
			tp := r.Throughput
			w := count(len(r.Warnings))
			if w.Tone == Bad {
				w.Tone = Warn
			}
			failed := count(tp.Failed)
			if by := tally.FailureClasses(tp); by != "" {
				failed.Text += " (" + by + ")" // grouped by error class
			}
			t.Rows = append(t.Rows, []Cell{{Text: c.run.Label}, {Text: orDash(c.arm)}, itoa(r.Pins.Concurrency), itoa(tp.Judgments),
				failed, count(tp.Discarded), stoppedText(r), serverText(r), littleText(r), reconText(r), w})
		}
	}
	return t
}

// comparison is one series of answer comparisons of a set.
type comparison struct {
	name    string
	entries map[Key]answers.SweepEntry
}

func (b *builder) comparisons() []comparison {
	var out []comparison
	if b.pair() {
		out = append(out, comparison{b.cand.Label + " vs " + b.base.Label, b.cross})
	}
	for _, r := range b.runs() {
		out = append(out, comparison{r.Label + " vs its c=1", b.levels[r.Label]})
	}
	return out
}

func (b *builder) movedChart(set string) LineChart {
	ch := LineChart{Title: set + ": verdicts moved", XLabel: "concurrency (judgments in flight)", YLabel: "moved verdicts", LogX: true, YIntegers: true}
	for _, cmp := range b.comparisons() {
		for _, arm := range b.arms() {
			s := Series{Name: cmp.name}
			if len(b.arms()) > 1 && arm != "" {
				s.Name += " (" + arm + ")"
			}
			for _, k := range b.keys() {
				e, ok := cmp.entries[k]
				if k.Set != set || k.Arm != arm || !ok || e.Report == nil {
					continue
				}
				m := e.Report.VerdictsMoved
				s.Points = append(s.Points, Point{X: float64(k.C), Y: float64(m.Total()), Tip: fmt.Sprintf("c=%d: %d near-tie, %d confident", k.C, m.NearTie, m.Confident)})
			}
			ch.Series = append(ch.Series, s)
		}
	}
	return ch
}

func (b *builder) answerTables(set string) (Table, Table) {
	sum := Table{Caption: "Answers per level", CSV: "answers_" + set + ".csv",
		Header: []string{"comparison", "arm", "c", "result", "items", "moved near-tie", "moved confident", "Nouls beyond tolerance", "max |ΔP(true)|", "detail"}}
	moved := Table{Caption: "Moved answers", CSV: "moved_" + set + ".csv",
		Header: []string{"comparison", "arm", "c", "item", "question", "baseline → candidate", "class", "baseline margin", "|ΔP(true)|"}}
	for _, cmp := range b.comparisons() {
		for _, k := range b.keys() {
			e, ok := cmp.entries[k]
			if k.Set != set || !ok {
				continue
			}
			head := []Cell{{Text: cmp.name}, {Text: orDash(k.Arm)}, {Text: fmt.Sprintf("%d vs %d", e.CandidateConcurrency, e.BaselineConcurrency)}}
			if e.Report == nil {
				sum.Rows = append(sum.Rows, append(head, Cell{Text: "NOT COMPARED", Tone: Bad}, Cell{Text: "—"}, Cell{Text: "—"}, Cell{Text: "—"}, Cell{Text: "—"}, Cell{Text: "—"}, Cell{Text: e.Err}))
				continue
			}
			r := e.Report
			res := Cell{Text: "PASS", Tone: OK}
			if r.Failed() {
				res = Cell{Text: "FAIL", Tone: Bad}
			}
			detail := strings.Join(firstN(r.FailureLines, 3), "; ")
			if len(r.FailureLines) > 3 {
				detail += fmt.Sprintf("; … %d more", len(r.FailureLines)-3)
			}
			nt := itoa(r.VerdictsMoved.NearTie)
			if r.VerdictsMoved.NearTie > 0 {
				nt.Tone = Warn
			}
			sum.Rows = append(sum.Rows, append(head, res, itoa(r.ItemsCompared), nt, count(r.VerdictsMoved.Confident), count(r.NoulBeyondTolerance),
				Cell{Text: fmt.Sprintf("%.6f", r.MaxNoulDelta), Raw: raw(r.MaxNoulDelta)}, Cell{Text: detail}))
			for _, ch := range r.Moved {
				moved.Rows = append(moved.Rows, changeRow(head, ch, ch.Class))
			}
			for _, ch := range r.NoulDrift {
				if ch.Class != "" {
					continue // listed with the moved verdicts
				}
				moved.Rows = append(moved.Rows, changeRow(head, ch, "noul_beyond_tolerance"))
			}
		}
	}
	return sum, moved
}

func changeRow(head []Cell, ch answers.Change, class string) []Cell {
	tone := Bad
	if class == answers.NearTie {
		tone = Warn
	}
	margin := Cell{Text: "—"}
	if m := ch.Baseline.Margin; m != nil {
		margin = Cell{Text: fmt.Sprintf("%.4f", *m), Raw: raw(*m)}
	}
	nd := Cell{Text: "—"}
	if d := ch.NoulDelta; d != nil {
		nd = Cell{Text: fmt.Sprintf("%.6f", *d), Raw: raw(*d)}
	}
	row := append([]Cell{}, head...)
	return append(row, Cell{Text: ch.Item}, Cell{Text: ch.Question}, Cell{Text: ch.Baseline.Label + " → " + ch.Candidate.Label}, Cell{Text: class, Tone: tone}, margin, nd)
}

// decideGate runs the speed gate when both runs carry benchmark output.
func (b *builder) decideGate() {
	if b.pair() && b.base.Bench != nil && b.cand.Bench != nil {
		b.gate = speed.Decide(b.base.Bench, b.cand.Bench, b.opt.Speed)
	}
}

// gateRow is the summary's line for the speed gate.
func (b *builder) gateRow() ([]Cell, bool) {
	g := b.gate
	if g == nil {
		return nil, false
	}
	name := Cell{Text: b.base.Label + " vs " + b.cand.Label + ": speed gate"}
	switch {
	case !b.comparable():
		return []Cell{name, {Text: "NOT COMPARABLE", Tone: Bad}, {Text: "identity differs: no verdict"}}, true
	case g.NoVerdict():
		return []Cell{name, {Text: "NO VERDICT", Tone: Warn}, {Text: strings.Join(firstN(g.Problems, 2), "; ")}}, true
	case g.Failed():
		return []Cell{name, {Text: "FAIL", Tone: Bad}, {Text: fmt.Sprintf("%d of %d gated metrics worse: %s", len(g.Failures), g.Gated, strings.Join(firstN(g.Failures, 2), "; "))}}, true
	}
	return []Cell{name, {Text: "PASS", Tone: OK}, {Text: fmt.Sprintf("%d gated metrics, none worse by more than %.1f%%", g.Gated, 100*g.Policy.Margin)}}, true
}

func (b *builder) gateSection() (Section, bool) {
	g := b.gate
	if g == nil {
		return Section{}, false
	}
	corr := "per metric"
	if g.Policy.Holm {
		corr = "family-wise, Holm"
	}
	s := Section{ID: "speed-gate", Title: "Speed gate (" + BenchName + ")", Notes: []string{
		fmt.Sprintf("%s vs %s. A metric fails when the candidate is worse by more than %.1f%% with p < %g (Mann–Whitney U, %s); decided by receipts/speed, as vetbench gate does.",
			b.base.BenchFile, b.cand.BenchFile, 100*g.Policy.Margin, g.Policy.Alpha, corr)}}
	ban := Banner{Tone: OK, Title: "PASS"}
	switch {
	case !b.comparable():
		ban = Banner{Tone: Bad, Title: "NOT COMPARABLE: the runs' identities differ, so the table below is no verdict"}
	case g.NoVerdict():
		ban = Banner{Tone: Warn, Title: "NO VERDICT", Lines: capLines(g.Problems, 6)}
	case g.Failed():
		ban = Banner{Tone: Bad, Title: fmt.Sprintf("FAIL: %d of %d gated metrics worse", len(g.Failures), g.Gated), Lines: capLines(g.Failures, 12)}
	default:
		ban.Title = fmt.Sprintf("PASS: %d gated metrics, none worse by more than %.1f%%", g.Gated, 100*g.Policy.Margin)
	}
	s.Notes = append(s.Notes, "The gate is over every run in the two "+BenchName+" files; the curves above are of the receipts, one pass per point.")
	if sn := b.scaleNote(); sn != "" {
		s.Notes = append(s.Notes, "Figures of a "+sn+".")
	}
	s.Banners = []Banner{ban}
	t := Table{Caption: "Per benchmark and metric", CSV: "gate.csv", Header: []string{"benchmark", "unit", "better", "baseline", "candidate", "delta", "p", "verdict"}}
	for _, m := range g.Metrics {
		delta := Cell{Text: "—"}
		if m.Delta != nil {
			delta = Cell{Text: fmt.Sprintf("%+.2f%%", 100**m.Delta), Raw: raw(*m.Delta)}
		}
		p := Cell{Text: "—"}
		if m.P != nil {
			p = Cell{Text: fmt.Sprintf("%.3f", *m.P), Raw: raw(*m.P)}
		}
		v := Cell{Text: strings.ToUpper(string(m.Verdict))}
		switch m.Verdict {
		case speed.Worse, speed.Missing:
			v.Tone = Bad
		case speed.FewRuns, speed.DirectionConflict:
			v.Tone = Warn
		case speed.Better:
			v.Tone = OK
		}
		t.Rows = append(t.Rows, []Cell{{Text: m.Benchmark}, {Text: m.Unit}, {Text: orDash(m.Better)}, summaryCell(m.Baseline), summaryCell(m.Candidate), delta, p, v})
	}
	t.CSVOnly = true
	s.Tables = []Table{gatePivot(g), t}
	return s, true
}

// gatePivot lays the gate out as benchmarks × units: the change of the
// candidate's median, toned by the verdict; the figures in the hover text
// and in gate.csv.
func gatePivot(g *speed.Report) Table {
	var benches, units []string
	byKey := map[[2]string]speed.Metric{}
	for _, m := range g.Metrics {
		if !slices.Contains(benches, m.Benchmark) {
			benches = append(benches, m.Benchmark)
		}
		if !slices.Contains(units, m.Unit) {
			units = append(units, m.Unit)
		}
		byKey[[2]string{m.Benchmark, m.Unit}] = m
	}
	t := Table{Caption: "Candidate vs baseline median per benchmark and metric (hover for the figures; all of them in gate.csv)", Header: append([]string{"benchmark"}, units...)}
	for _, bn := range benches {
		row := []Cell{{Text: bn}}
		for _, u := range units {
			m, ok := byKey[[2]string{bn, u}]
			if !ok {
				row = append(row, Cell{Text: "—"})
				continue
			}
			c := Cell{Text: "—"}
			if m.Delta != nil {
				c.Text = fmt.Sprintf("%+.1f%%", 100**m.Delta)
			}
			switch m.Verdict {
			case speed.Worse:
				c.Text += " worse"
				c.Tone = Bad
			case speed.Missing:
				c.Text, c.Tone = "missing", Bad
			case speed.Better:
				c.Text += " better"
				c.Tone = OK
			case speed.FewRuns:
				c.Text += " (few runs)"
				c.Tone = Warn
			case speed.DirectionConflict:
				c.Text, c.Tone = "direction conflict", Warn
			case speed.New:
				c.Text = "new"
			}
			c.Tip = fmt.Sprintf("%s %s (better %s): %s → %s", bn, u, orDash(m.Better), summaryCell(m.Baseline).Text, summaryCell(m.Candidate).Text)
			if m.P != nil {
				c.Tip += fmt.Sprintf(", p=%.3f", *m.P)
			}
			c.Tip += ", " + string(m.Verdict)
			row = append(row, c)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func summaryCell(s *speed.Summary) Cell {
	if s == nil {
		return Cell{Text: "—"}
	}
	return Cell{Text: fmt.Sprintf("%s %s n=%d", num(s.Center), s.Range, s.N), Raw: raw(s.Center)}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// capLines keeps a banner short: n lines, then how many more there are.
func capLines(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("… and %d more (each metric's verdict is in the table below and in gate.csv)", len(s)-n))
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// lighter mixes a #rrggbb colour halfway to white.
func lighter(c string) string {
	var r, g, bl int
	if _, err := fmt.Sscanf(c, "#%02x%02x%02x", &r, &g, &bl); err != nil {
		return c
	}
	return fmt.Sprintf("#%02x%02x%02x", (r+255)/2, (g+255)/2, (bl+255)/2)
}

// prefixCountingNote says when the baseline's and the candidate's prefix
// hit rates may not compare because their builds straddle vllm#48860
// (receipts.PrefixCountingNote); "" without a candidate or hit rates.
func (b *builder) prefixCountingNote(cs []curve) string {
	if b.cand == nil {
		return ""
	}
	build := func(run *Run) (string, bool) {
		for _, c := range cs {
			if c.run != run {
				continue
			}
			for _, r := range c.pts {
				if hit(r, false) != nil {
					return r.Pins.ServerBuild, true
				}
			}
		}
		return "", false
	}
	bb, okB := build(b.base)
	cb, okC := build(b.cand)
	if !okB || !okC {
		return ""
	}
	return receipts.PrefixCountingNote(bb, cb)
}
