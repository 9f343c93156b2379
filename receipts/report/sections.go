package report

import (
	"fmt"
	"slices"
	"strconv"
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

// color is a curve's colour: in a pair, the arm picks the colour family
// and the run its member; the chart gives each series its own marker
// and dash pattern by position.
func (b *builder) color(c curve, i int) string {
	if !b.pair() {
		return palette[i%len(palette)]
	}
	arm := 0
	for j, a := range b.arms() {
		if a == c.arm {
			arm = j
		}
	}
	return palette[(2*arm+btoi(c.run == b.cand))%len(palette)]
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
	const x = "concurrency (judgments in flight)"
	thr := b.curveChart(LineChart{Title: set + ": throughput", Note: note, XLabel: x, YLabel: "judgments/s (median of the passes)", LogX: true},
		cs, []curveFig{{fig: figJPS, format: num, unit: " judgments/s"}})
	lat := b.curveChart(LineChart{Title: set + ": p95 latency of a judgment", Note: note, XLabel: x, YLabel: "p95 latency (s, median)", LogX: true},
		cs, []curveFig{{fig: figP95, format: num, unit: " s"}})
	pct := func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
	hits := b.curveChart(LineChart{Title: set + ": cache hit rates", XLabel: x, YLabel: "hit rate", LogX: true, YMax: 1, YPercent: true},
		cs, []curveFig{{name: " prefix", fig: figPrefix, format: pct}, {name: " mm", fig: figMM, format: pct, light: true}})
	counting := b.prefixCountingNote(cs)
	hits.Note = counting
	s := Section{ID: "set-" + set, Title: "Set " + set, Charts: []Chart{thr, lat, hits, b.movedChart(set)}}
	if note != "" {
		s.Notes = append(s.Notes, "Speed figures of a "+note+".")
	}
	if counting != "" {
		s.Notes = append(s.Notes, strings.ToUpper(counting[:1])+counting[1:]+".")
	}
	s.Notes = append(s.Notes, b.spreadNote(cs))
	s.Tables = append(s.Tables, b.speedTable(set, cs), b.healthTable(set, cs))
	at, mt := b.answerTables(set)
	s.Tables = append(s.Tables, at, mt)
	return s
}

// curveFig is one figure drawn per curve: its name after the curve's,
// how its value reads, and whether its colour is the curve's lighter.
type curveFig struct {
	name   string
	fig    figure
	format func(float64) string
	unit   string
	light  bool
}

// curveChart adds to ch one series per curve and figure: at each level
// the median of the passes and their min–max.
func (b *builder) curveChart(ch LineChart, cs []curve, figs []curveFig) LineChart {
	var ns []int
	for i, c := range cs {
		for _, f := range figs {
			s := Series{Name: c.name + f.name, Color: b.color(c, i)}
			if f.light {
				s.Color = lighter(s.Color)
			}
			for _, r := range c.pts {
				k := Key{Set: r.Set, Arm: c.arm, C: r.Pins.Concurrency}
				if sp, ok := b.spread(c.run, k, f.fig); ok {
					s.Points = append(s.Points, sp.point(k.C, f.format, f.unit))
					ns = append(ns, sp.N)
				}
			}
			ch.Series = append(ch.Series, s)
		}
	}
	ch.SpreadLabel = passCounts(ns)
	return ch
}

// spreadNote says what the curves' points and bars are, per run.
func (b *builder) spreadNote(cs []curve) string {
	var labels, froms []string
	for _, r := range b.runs() {
		for _, c := range cs {
			if c.run != r || len(c.pts) == 0 {
				continue
			}
			sp, ok := b.spread(r, Key{Set: c.pts[0].Set, Arm: c.arm, C: c.pts[0].Pins.Concurrency}, figJPS)
			if !ok {
				continue
			}
			labels, froms = append(labels, r.Label), append(froms, sp.source())
			break
		}
	}
	return "Curves: the median of the passes at each level, bars their min–max (" + spreadSources(labels, froms) + "). Answers are compared on the first pass (receipts/)."
}

func (b *builder) speedTable(set string, cs []curve) Table {
	t := Table{Caption: "Speed and caches per point: medians of the passes (as the curves)", CSV: "speed_" + set + ".csv",
		Header: []string{"run", "arm", "c", "passes", "judgments/s", "min", "max", "images/s", "p50 s", "p95 s", "p99 s", "prefix hit", "mm hit", "time scale"}}
	pct := func(v float64) Cell { return ratio(&v) }
	for _, c := range cs {
		for _, r := range c.pts {
			k := Key{Set: set, Arm: c.arm, C: r.Pins.Concurrency}
			med := func(f figure, cell func(float64) Cell) Cell {
				if sp, ok := b.spread(c.run, k, f); ok {
					return cell(sp.Median)
				}
				return Cell{Text: "—"}
			}
			jps, _ := b.spread(c.run, k, figJPS)
			t.Rows = append(t.Rows, []Cell{{Text: c.run.Label}, {Text: orDash(c.arm)}, itoa(k.C), {Text: fmt.Sprintf("%d (%s)", jps.N, jps.From), Raw: strconv.Itoa(jps.N)},
				f2(jps.Median), f2(jps.Min), f2(jps.Max), med(figImages, f2), med(figP50, f4), med(figP95, f4), med(figP99, f4),
				med(figPrefix, pct), med(figMM, pct), {Text: num(max(1, r.Target.TimeScale)), Raw: raw(max(1, r.Target.TimeScale))}})
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

// movedChart is each comparison's moved verdicts per level, split as
// receipts/answers classifies them: confident moves (they fail) at the
// bottom of each bar, near-tie moves (the baseline's margin below the
// policy's, reported and not failed unless the policy is strict) above.
func (b *builder) movedChart(set string) BarChart {
	nearTie := fmt.Sprintf("near-tie (margin < %g)", b.opt.Answers.NearTieMargin)
	if !b.opt.Answers.FailNearTies {
		nearTie += ", does not fail"
	}
	ch := BarChart{Title: set + ": verdicts moved", XLabel: "concurrency (judgments in flight)", YLabel: "moved verdicts",
		Stack: []StackKind{{Name: "confident (fails)", Color: "#b2182b"}, {Name: nearTie, Color: "#f0b74a"}}}
	for _, k := range b.keys() {
		if k.Set != set {
			continue
		}
		for _, cmp := range b.comparisons() {
			e, ok := cmp.entries[k]
			if !ok || e.Report == nil {
				continue
			}
			g := cmp.name
			if len(b.arms()) > 1 && k.Arm != "" {
				g += " (" + k.Arm + ")"
			}
			m := e.Report.VerdictsMoved
			ch.Bars = append(ch.Bars, Bar{Category: strconv.Itoa(k.C), Group: g, Values: []float64{float64(m.Confident), float64(m.NearTie)},
				Tip: fmt.Sprintf("%s, c=%d: %d confident, %d near-tie", g, k.C, m.Confident, m.NearTie)})
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
	s.Notes = append(s.Notes, "The gate is over every run in the two "+BenchName+" files; the curves above draw the same medians, with the runs' min–max.")
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
	s.Tables = append(gatePivot(g), t)
	return s, true
}

// pivotUnits is how many metrics one pivot table holds: more go to the
// next table, so each fits a 1280 px page (a run reports up to 16 units).
const pivotUnits = 7

// gatePivot lays the gate out as benchmarks × units: the change of the
// candidate's median, toned by the verdict; the figures in the hover text
// and in gate.csv. The units are split over tables of pivotUnits.
func gatePivot(g *speed.Report) []Table {
	var units []string
	for _, m := range g.Metrics {
		if !slices.Contains(units, m.Unit) {
			units = append(units, m.Unit)
		}
	}
	var out []Table
	for i := 0; i < len(units); i += pivotUnits {
		t := gatePivotOf(g, units[i:min(len(units), i+pivotUnits)])
		if len(units) > pivotUnits {
			t.Caption += fmt.Sprintf(" (%d of %d)", i/pivotUnits+1, (len(units)+pivotUnits-1)/pivotUnits)
		}
		out = append(out, t)
	}
	return out
}

// shortBench is a benchmark's name without the Judgments/ prefix and the
// -GOMAXPROCS suffix (set=checks/c=4), for a table's row head.
func shortBench(name string) string {
	name = strings.TrimPrefix(name, "Judgments/")
	if i := strings.LastIndexByte(name, '-'); i > strings.LastIndexByte(name, '/') {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	return name
}

func gatePivotOf(g *speed.Report, units []string) Table {
	var benches []string
	byKey := map[[2]string]speed.Metric{}
	for _, m := range g.Metrics {
		if !slices.Contains(benches, m.Benchmark) {
			benches = append(benches, m.Benchmark)
		}
		byKey[[2]string{m.Benchmark, m.Unit}] = m
	}
	t := Table{Caption: "Candidate vs baseline median per benchmark and metric (hover for the figures; all of them in gate.csv)", Header: append([]string{"benchmark"}, units...)}
	for _, bn := range benches {
		row := []Cell{{Text: shortBench(bn), Tip: bn}}
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
