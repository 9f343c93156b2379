// Package report lays out one benchmark run, or a baseline and a
// candidate run, as a self-contained HTML page (inline CSS and SVG, no
// script, no network) and as CSV tables.
//
// It decides nothing: which answers moved comes from receipts/answers,
// whether the candidate is slower from receipts/speed, token-throughput
// changes from receipts/tokens, whether two receipts are the same
// experiment from receipts; the checks (Little's law, reconciliation) and
// matrix statuses are the receipts' own. Load reads a run directory
// (judgment receipts, token-throughput receipts and speed matrices, told
// apart by schema, and bench.txt); Build turns two Runs into a Report of
// Sections. A Section holds Charts (LineChart, HeatMap) and Tables, so
// another figure is a function that returns a Section, appended to
// Report.Sections before WriteHTML and CSVFiles; LineTable and
// HeatMapTable give a chart's data as a CSV table.
package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/answers"
	"github.com/vetbench/vetbench/receipts/matrix"
	"github.com/vetbench/vetbench/receipts/speed"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// Report is what the page shows, in order: the title, banners, the
// sections, the warnings.
type Report struct {
	Title    string
	Subtitle string
	// Banners stand above everything (an identity mismatch).
	Banners  []Banner
	Sections []Section
	// Warnings are every receipt's warnings and the report's own, each
	// naming its run and point.
	Warnings []string
}

// Section is one titled part of the page. Its tables with a CSV name are
// also written as CSV files.
type Section struct {
	// ID is the HTML anchor; unique within a report.
	ID      string
	Title   string
	Banners []Banner
	Notes   []string
	Charts  []Chart
	Tables  []Table
}

// Banner is a boxed message: why two runs cannot be compared, a verdict.
type Banner struct {
	Tone  Tone
	Title string
	Lines []string
}

// Table is a captioned grid of text cells.
type Table struct {
	Caption string
	// CSV names the file the table is written to ("speed_checks.csv");
	// empty keeps it out of the CSV output.
	CSV string
	// CSVOnly keeps a long table off the page (the page shows a digest).
	CSVOnly bool
	Header  []string
	Rows    [][]Cell
}

// Cell is one table cell.
type Cell struct {
	Text string
	Tone Tone
	// Raw is the CSV form when it differs from Text (full precision).
	Raw string
	// Tip is hover text on the page.
	Tip string
}

// Tone colours a cell or banner.
type Tone string

// Tones.
const (
	Plain Tone = ""
	OK    Tone = "ok"
	Warn  Tone = "warn"
	Bad   Tone = "bad"
)

// Options are the policies the verdicts shown are taken under.
type Options struct {
	Answers answers.Policy
	Speed   speed.Policy
}

// DefaultOptions are the compare and gate commands' defaults.
func DefaultOptions() Options {
	return Options{Answers: answers.DefaultPolicy(), Speed: speed.DefaultPolicy()}
}

// Build lays out base and, when cand is not nil, its comparison with
// cand: per set, speed and hit rates against concurrency, moved answers
// (candidate against baseline, and each level against c=1 within a run),
// the self-checks, failures and stops of every point; the speed gate when
// both runs carry benchmark output; an identity banner when the two runs
// are not the same experiment.
func Build(base, cand *Run, opt Options) (*Report, error) {
	if base == nil {
		return nil, fmt.Errorf("report: no baseline run")
	}
	if err := opt.Answers.Validate(); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if err := opt.Speed.Validate(); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	b := &builder{base: base, cand: cand, opt: opt, rep: &Report{}}
	if err := b.compareAnswers(); err != nil {
		return nil, err
	}
	if err := b.compareTokens(); err != nil {
		return nil, err
	}
	b.identity()
	b.decideGate()
	b.title()
	b.summary()
	b.rep.Sections = append(b.rep.Sections, b.runsSection())
	for _, set := range b.sets() {
		b.rep.Sections = append(b.rep.Sections, b.setSection(set))
	}
	if s, ok := b.endpointsSection(); ok {
		b.rep.Sections = append(b.rep.Sections, s)
	}
	if s, ok := b.tokensSection(); ok {
		b.rep.Sections = append(b.rep.Sections, s)
	}
	if s, ok := b.matrixSection(); ok {
		b.rep.Sections = append(b.rep.Sections, s)
	}
	if s, ok := b.gateSection(); ok {
		b.rep.Sections = append(b.rep.Sections, s)
	}
	b.warnings()
	return b.rep, nil
}

type builder struct {
	base, cand *Run
	opt        Options
	rep        *Report
	// cross are candidate-vs-baseline comparisons; levels[run label] are
	// each level against c=1 within that run. Keyed by point.
	cross  map[Key]answers.SweepEntry
	levels map[string]map[Key]answers.SweepEntry
	// idDiff are identity differences between the runs, each with the
	// points where it holds.
	idDiff   map[string][]Key
	idPoints int
	// otherDiff are identity differences of the token points.
	otherDiff []string
	tokenCmp  *tokens.Comparison
	gate      *speed.Report
}

func (b *builder) runs() []*Run {
	if b.cand == nil {
		return []*Run{b.base}
	}
	return []*Run{b.base, b.cand}
}

func (b *builder) pair() bool { return b.cand != nil }

// keys are every point of either run, in order.
func (b *builder) keys() []Key {
	seen := map[Key]bool{}
	var ks []Key
	for _, r := range b.runs() {
		for _, p := range r.Entries {
			if k := p.Key(); !seen[k] {
				seen[k] = true
				ks = append(ks, k)
			}
		}
	}
	slices.SortFunc(ks, compareKeys)
	return ks
}

func (b *builder) sets() []string {
	var s []string
	for _, k := range b.keys() {
		if !slices.Contains(s, k.Set) {
			s = append(s, k.Set)
		}
	}
	return s
}

func (b *builder) arms() []string {
	var s []string
	for _, k := range b.keys() {
		if !slices.Contains(s, k.Arm) {
			s = append(s, k.Arm)
		}
	}
	slices.SortFunc(s, func(x, y string) int { return cmp2(armRank(x), armRank(y), x, y) })
	return s
}

func cmp2(a, b int, x, y string) int {
	if a != b {
		return a - b
	}
	return strings.Compare(x, y)
}

// seriesName names a run's curve; the arm is added when the runs hold
// more than one.
func (b *builder) seriesName(r *Run, arm string) string {
	if len(b.arms()) > 1 && arm != "" {
		return r.Label + " (" + arm + ")"
	}
	return r.Label
}

func (b *builder) compareAnswers() error {
	b.cross = map[Key]answers.SweepEntry{}
	b.levels = map[string]map[Key]answers.SweepEntry{}
	for _, arm := range b.arms() {
		for _, r := range b.runs() {
			rs := r.arm(arm)
			if len(rs) == 0 {
				continue
			}
			sw, err := answers.CompareLevels(rs, b.opt.Answers)
			if err != nil {
				return fmt.Errorf("report: %s: %w", r.Label, err)
			}
			if b.levels[r.Label] == nil {
				b.levels[r.Label] = map[Key]answers.SweepEntry{}
			}
			for _, e := range sw.Entries {
				b.levels[r.Label][Key{Set: e.Set, Arm: arm, C: e.CandidateConcurrency}] = e
			}
		}
		if !b.pair() {
			continue
		}
		bs, cs := b.base.arm(arm), b.cand.arm(arm)
		if len(bs) == 0 && len(cs) == 0 {
			continue
		}
		var entries []answers.SweepEntry
		switch {
		case len(bs) == 0 || len(cs) == 0:
			// CompareSweep wants receipts on both sides; say per point
			// which side lacks them.
			for _, k := range b.keys() {
				if k.Arm != arm {
					continue
				}
				side := "baseline"
				if len(cs) == 0 {
					side = "candidate"
				}
				entries = append(entries, answers.SweepEntry{Set: k.Set, BaselineConcurrency: k.C, CandidateConcurrency: k.C,
					Err: fmt.Sprintf("set %s c=%d: no %s receipt", k.Set, k.C, side)})
			}
		default:
			sw, err := answers.CompareSweep(bs, cs, b.opt.Answers)
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			entries = sw.Entries
		}
		for _, e := range entries {
			b.cross[Key{Set: e.Set, Arm: arm, C: e.CandidateConcurrency}] = e
		}
	}
	return nil
}

// identity lists what differs between the runs' receipts point by point.
func (b *builder) identity() {
	b.idDiff = map[string][]Key{}
	if !b.pair() {
		return
	}
	for _, k := range b.keys() {
		br, ok1 := b.base.point(k)
		cr, ok2 := b.cand.point(k)
		if !ok1 || !ok2 {
			continue
		}
		b.idPoints++
		for _, d := range receipts.CompareIdentity(br, cr).Differences {
			b.idDiff[d] = append(b.idDiff[d], k)
		}
	}
	if len(b.idDiff) == 0 && len(b.otherDiff) == 0 {
		return
	}
	ban := Banner{Tone: Bad, Title: "Identity mismatch: the two runs are not the same experiment"}
	ban.Lines = append(ban.Lines, "Answers are not compared and the speed gate gives no verdict; figures are shown side by side for reading only. What differs (baseline → candidate):")
	for _, d := range slices.Sorted(maps.Keys(b.idDiff)) {
		ban.Lines = append(ban.Lines, d+" ("+b.where(b.idDiff[d])+")")
	}
	ban.Lines = append(ban.Lines, capLines(slices.Compact(slices.Sorted(slices.Values(b.otherDiff))), 12)...)
	if b.opt.Answers.AllowIdentityDrift {
		ban.Lines[0] = "Identity drift allowed: answers are compared anyway and the speed gate's verdict is shown; read both knowing that what differs below differs. What differs (baseline → candidate):"
	}
	b.rep.Banners = append(b.rep.Banners, ban)
}

func (b *builder) where(ks []Key) string {
	if len(ks) == b.idPoints {
		return "every point"
	}
	var s []string
	for _, k := range ks {
		s = append(s, k.String())
	}
	return strings.Join(s, ", ")
}

func (b *builder) comparable() bool {
	return len(b.idDiff) == 0 && len(b.otherDiff) == 0 || b.opt.Answers.AllowIdentityDrift
}

func (b *builder) title() {
	if b.pair() {
		b.rep.Title = "vetbench report: " + b.base.Label + " vs " + b.cand.Label
		b.rep.Subtitle = b.base.Dir + " → " + b.cand.Dir
		return
	}
	b.rep.Title = "vetbench report: " + b.base.Label
	b.rep.Subtitle = b.base.Dir
}

// distinct lists the distinct values f gives over a run's receipts.
func distinct(r *Run, f func(*receipts.Receipt) string) string {
	var vs []string
	for _, p := range r.Entries {
		if v := f(p.Receipt); v != "" && !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	if len(vs) == 0 {
		return "—"
	}
	return strings.Join(vs, ", ")
}

// timeScale is the run's largest twin time scale (1 when none is
// recorded).
func timeScale(r *Run) float64 {
	s := 1.0
	for _, p := range r.Entries {
		s = max(s, p.Receipt.Target.TimeScale)
	}
	return s
}

func scaleText(s float64) string {
	if s <= 1 {
		return "1 (real time)"
	}
	return "×" + num(s) + " (time-scaled twin: rates ×" + num(s) + ", latencies ÷" + num(s) + " of model time)"
}

// fact is what one document of a run — a judgment receipt, a token
// receipt, a speed matrix — records about what ran; "" where it records
// nothing.
type fact struct {
	source, runID                 string
	target                        receipts.Target
	model, revision, build, flags string
	scoring, harness, gpu         string
}

// facts are the run's documents' records of what ran, judgment receipts
// first, then token receipts and speed matrices.
func (r *Run) facts() []fact {
	var fs []fact
	for _, p := range r.Entries {
		x := p.Receipt
		fs = append(fs, fact{source: x.Source, runID: x.RunID, target: x.Target, model: receipts.Weights(x.Pins), revision: x.Pins.ModelRevision,
			build: x.Pins.ServerBuild, flags: x.Identity.ServerFlags, scoring: x.Pins.ScoringMode, harness: x.Identity.HarnessVersion})
	}
	for _, e := range r.Tokens {
		x := e.Receipt
		fs = append(fs, fact{source: x.Source, runID: x.RunID, target: x.Target, model: x.Identity.Model, build: x.Identity.ServerBuild,
			flags: x.Identity.ServerFlags, harness: x.Identity.HarnessVersion, gpu: x.Identity.GPU})
	}
	for _, e := range r.Matrices {
		x := e.Matrix
		fs = append(fs, fact{source: x.Source, runID: x.RunID, target: x.Target, model: x.Identity.Model, build: x.Identity.ServerBuild,
			flags: x.Identity.ServerFlags, harness: cmpOr(x.Identity.HarnessVersion, x.Identity.Tool), gpu: x.Identity.GPU})
	}
	return fs
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// distinctFacts lists the distinct values f gives over a run's facts.
func distinctFacts(r *Run, f func(fact) string) string {
	var vs []string
	for _, x := range r.facts() {
		if v := f(x); v != "" && !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	slices.Sort(vs)
	if len(vs) == 0 {
		return "—"
	}
	return strings.Join(vs, ", ")
}

// runField is one row of the runs table.
type runField struct {
	name string
	f    func(*Run) string
}

// of is a row of a fact's distinct values over each run's documents.
func of(name string, f func(fact) string) runField {
	return runField{name, func(r *Run) string { return distinctFacts(r, f) }}
}

func runFields() []runField {
	return []runField{
		{"directory", func(r *Run) string { return r.Dir }},
		{"receipts", receiptsText},
		{"benchmark output", func(r *Run) string {
			if r.BenchFile == "" {
				return "none (no " + BenchName + ")"
			}
			return r.BenchFile
		}},
		of("source", func(x fact) string { return x.source }),
		of("target kind", func(x fact) string { return string(x.target.Kind) }),
		of("twin profile", func(x fact) string { return x.target.Profile }),
		{"time scale", func(r *Run) string {
			s := 1.0
			for _, x := range r.facts() {
				s = max(s, x.target.TimeScale)
			}
			return scaleText(s)
		}},
		of("replay", func(x fact) string { return x.target.Replay }),
		of("model", func(x fact) string { return x.model }),
		of("model revision", func(x fact) string { return x.revision }),
		of("server build", func(x fact) string { return x.build }),
		of("GPU", func(x fact) string { return x.gpu }),
		of("scoring mode", func(x fact) string { return x.scoring }),
		of("server flags", func(x fact) string { return x.flags }),
		of("harness", func(x fact) string { return x.harness }),
		of("run ids", func(x fact) string { return x.runID }),
		{"sets × levels", setsText},
		{"token points", tokenPointsText},
	}
}

func receiptsText(r *Run) string {
	var parts []string
	if n := len(r.Entries); n > 0 {
		p := fmt.Sprintf("%d judgment receipts", n)
		if m := len(r.Passes); m > 0 {
			p += fmt.Sprintf(" (pass 1; %d more passes in pass2…)", m)
		}
		parts = append(parts, p)
	}
	if n := len(r.Tokens); n > 0 {
		parts = append(parts, fmt.Sprintf("%d token-throughput points", n))
	}
	if n := len(r.Matrices); n > 0 {
		parts = append(parts, fmt.Sprintf("%d speed matrices", n))
	}
	return "in " + r.ReceiptDir + ": " + strings.Join(parts, "; ")
}

func setsText(r *Run) string {
	var s []string
	last := Key{}
	for i, p := range r.Entries {
		k := p.Key()
		if i > 0 && k.Set == last.Set && k.Arm == last.Arm {
			s[len(s)-1] += fmt.Sprintf(",%d", k.C)
		} else {
			head := k.Set
			if k.Arm == "warm" {
				head += " warm"
			}
			s = append(s, fmt.Sprintf("%s c=%d", head, k.C))
		}
		last = k
	}
	if len(s) == 0 {
		return "—"
	}
	return strings.Join(s, "; ")
}

// tokenPointsText lists a run's token points as workload, output tokens
// and levels.
func tokenPointsText(r *Run) string {
	var s []string
	for _, g := range (&builder{base: r}).tokenGroups() {
		var cs []string
		for _, t := range r.tokensOf(g) {
			cs = append(cs, strconv.Itoa(t.Point.Concurrency))
		}
		s = append(s, fmt.Sprintf("%s ×%d tokens c=%s", g.workload, g.output, strings.Join(cs, ",")))
	}
	if len(s) == 0 {
		return "—"
	}
	return strings.Join(s, "; ")
}

func (b *builder) runsSection() Section {
	s := Section{ID: "runs", Title: "Runs and targets", Tables: []Table{b.whatRan()}}
	if len(b.sets()) > 0 {
		s.Tables = append(s.Tables, b.identityDigests())
	}
	for _, r := range b.runs() {
		if ts := timeScale(r); ts > 1 {
			s.Notes = append(s.Notes, fmt.Sprintf("The %s ran on a twin time-scaled ×%s: its judgments/s are %s times what the modelled hardware would do and its latencies 1/%s; compare such figures only with runs of the same scale.", r.Label, num(ts), num(ts), num(ts)))
		}
	}
	return s
}

// whatRan is the runs side by side, one row per field; a target that
// differs between them is marked.
func (b *builder) whatRan() Table {
	t := Table{Caption: "What ran", CSV: "runs.csv", Header: []string{"field"}}
	for _, r := range b.runs() {
		t.Header = append(t.Header, r.Label)
	}
	for _, f := range runFields() {
		row := []Cell{{Text: f.name}}
		var vals []string
		for _, r := range b.runs() {
			v := f.f(r)
			vals = append(vals, v)
			c := Cell{Text: v}
			// Run ids are one per point: the page says how many, the CSV
			// lists them.
			if parts := strings.Split(v, ", "); f.name == "run ids" && len(parts) > 2 {
				c = Cell{Text: fmt.Sprintf("%d distinct (%s, …)", len(parts), parts[0]), Raw: v}
			}
			row = append(row, c)
		}
		// Speeds of different targets are different figures even when the
		// answers' identity agrees.
		if b.pair() && vals[0] != vals[1] && targetField(f.name) {
			row[2].Tone = Warn
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// identityDigests is each set's identity digest per run and, for a pair,
// how many identity fields differ.
func (b *builder) identityDigests() Table {
	id := Table{Caption: "Identity digest per set (equal digests: the same experiment)", CSV: "identity.csv", Header: []string{"set"}}
	for _, r := range b.runs() {
		id.Header = append(id.Header, r.Label)
	}
	if b.pair() {
		id.Header = append(id.Header, "differences")
	}
	for _, set := range b.sets() {
		row := []Cell{{Text: set}}
		var ds []string
		for _, r := range b.runs() {
			d := distinct(r, func(x *receipts.Receipt) string {
				if x.Set != set {
					return ""
				}
				return x.IdentityDigest()
			})
			ds = append(ds, d)
			row = append(row, Cell{Text: shortDigest(d), Raw: d})
		}
		if b.pair() {
			row = append(row, b.digestDiff(set, ds))
		}
		id.Rows = append(id.Rows, row)
	}
	return id
}

func (b *builder) digestDiff(set string, ds []string) Cell {
	n := 0
	for _, ks := range b.idDiff {
		if slices.ContainsFunc(ks, func(k Key) bool { return k.Set == set }) {
			n++
		}
	}
	switch {
	case n > 0:
		return Cell{Text: fmt.Sprintf("%d fields differ", n), Tone: Bad}
	case ds[0] != ds[1]:
		// Digests differ on fields only one side records.
		return Cell{Text: "none recorded by both", Tone: Warn}
	}
	return Cell{Text: "none", Tone: OK}
}

func targetField(name string) bool {
	switch name {
	case "target kind", "twin profile", "time scale", "replay":
		return true
	}
	return false
}

func shortDigest(d string) string {
	var out []string
	for _, p := range strings.Split(d, ", ") {
		if len(p) > 12 {
			p = p[:12] + "…"
		}
		out = append(out, p)
	}
	return strings.Join(out, ", ")
}

// summary is the first thing to read: one line per verdict and per kind
// of trouble.
func (b *builder) summary() {
	t := Table{Caption: "Verdicts", CSV: "summary.csv", Header: []string{"check", "result", "detail"}}
	if b.pair() && len(b.base.Entries) > 0 && len(b.cand.Entries) > 0 {
		t.Rows = append(t.Rows, entriesRow(b.base.Label+" vs "+b.cand.Label+": answers", b.crossEntries()))
	}
	for _, r := range b.runs() {
		if len(r.Entries) > 0 {
			t.Rows = append(t.Rows, entriesRow(r.Label+": answers at each level vs c=1", b.levelEntries(r)))
		}
	}
	if row, ok := b.gateRow(); ok {
		t.Rows = append(t.Rows, row)
	}
	// Failures, stops and self-checks of every point.
	for _, r := range b.runs() {
		if len(r.Entries) == 0 {
			continue
		}
		var failed, discarded, stopped, checks int
		for _, p := range r.Entries {
			x := p.Receipt
			failed += x.Throughput.Failed
			discarded += x.Throughput.Discarded
			if x.Stopped != nil {
				stopped++
			}
			if ll, rc := littleText(x), reconText(x); ll.Tone == Bad || rc.Tone == Bad {
				checks++
			}
		}
		res := Cell{Text: "clean", Tone: OK}
		if failed+discarded+stopped+checks > 0 {
			res = Cell{Text: "trouble", Tone: Bad}
		}
		t.Rows = append(t.Rows, []Cell{{Text: r.Label + ": failures and self-checks"}, res,
			{Text: fmt.Sprintf("%d points; %d failed judgments, %d discarded, %d points stopped early, %d with a failed self-check", len(r.Entries), failed, discarded, stopped, checks)}})
	}
	for _, r := range b.runs() {
		if len(r.Tokens) > 0 {
			var failed, short, stopped int
			for _, e := range r.Tokens {
				failed += e.Receipt.Summary.Failed
				short += e.Receipt.Summary.Short
				if e.Receipt.Stopped != nil {
					stopped++
				}
			}
			res := Cell{Text: "clean", Tone: OK}
			if failed+short+stopped > 0 {
				res = Cell{Text: "trouble", Tone: Bad}
			}
			t.Rows = append(t.Rows, []Cell{{Text: r.Label + ": token-throughput points"}, res,
				{Text: fmt.Sprintf("%d points; %d failed requests, %d short, %d points stopped early", len(r.Tokens), failed, short, stopped)}})
		}
		for _, e := range r.Matrices {
			counts := e.Matrix.Counts()
			var parts []string
			for _, st := range []matrix.Status{matrix.Valid, matrix.RequestsQueued, matrix.Looped, matrix.Failed, matrix.Skipped} {
				if n := counts[st]; n > 0 {
					parts = append(parts, fmt.Sprintf("%d %s", n, st.Label()))
				}
			}
			res := Cell{Text: "clean", Tone: OK}
			if counts[matrix.Failed]+counts[matrix.Looped] > 0 || e.Matrix.Stopped != nil {
				res = Cell{Text: "trouble", Tone: Bad}
			}
			detail := fmt.Sprintf("%d cells: %s", len(e.Matrix.Cells), strings.Join(parts, ", "))
			if e.Matrix.Stopped != nil {
				detail += "; stopped early"
			}
			t.Rows = append(t.Rows, []Cell{{Text: r.Label + ": speed matrix"}, res, {Text: detail}})
		}
	}
	b.rep.Sections = append(b.rep.Sections, Section{ID: "summary", Title: "Summary", Tables: []Table{t}})
	b.rep.Banners = append([]Banner{verdictBanner(t.Rows)}, b.rep.Banners...)
}

// verdictBanner is the page's first box: one line each for answers, speed
// and failures, from the summary's rows (check, result, detail), so the
// verdict is read before any table.
func verdictBanner(rows [][]Cell) Banner {
	parts := map[string][]string{}
	worst := map[string]Tone{}
	for _, row := range rows {
		kind := "failures"
		switch name := row[0].Text; {
		case strings.HasSuffix(name, ": speed gate"):
			kind = "speed"
		case strings.Contains(name, ": answers"):
			kind = "answers"
		}
		parts[kind] = append(parts[kind], row[0].Text+" — "+row[1].Text+": "+row[2].Text)
		if rank(row[1].Tone) > rank(worst[kind]) {
			worst[kind] = row[1].Tone
		}
	}
	ban := Banner{Tone: OK}
	var title []string
	for _, kind := range []string{"answers", "speed", "failures"} {
		word := map[Tone]string{OK: "pass", Warn: "no verdict", Bad: "FAIL", Plain: "nothing to compare"}[worst[kind]]
		if kind == "failures" {
			word = map[Tone]string{OK: "none", Bad: "TROUBLE", Plain: "—", Warn: "warnings"}[worst[kind]]
		}
		if len(parts[kind]) == 0 {
			word = "not measured"
			if kind == "speed" {
				word = "not gated (no bench.txt pair)"
			}
		}
		title = append(title, kind+": "+word)
		ban.Lines = append(ban.Lines, parts[kind]...)
		if rank(worst[kind]) > rank(ban.Tone) {
			ban.Tone = worst[kind]
		}
	}
	ban.Title = "Verdict — " + strings.Join(title, " · ")
	return ban
}

// rank orders tones by how bad they are.
func rank(t Tone) int { return map[Tone]int{Plain: 0, OK: 1, Warn: 2, Bad: 3}[t] }

func (b *builder) crossEntries() []answers.SweepEntry {
	var es []answers.SweepEntry
	for _, k := range b.keys() {
		if e, ok := b.cross[k]; ok {
			es = append(es, e)
		}
	}
	return es
}

func (b *builder) levelEntries(r *Run) []answers.SweepEntry {
	var es []answers.SweepEntry
	for _, k := range b.keys() {
		if e, ok := b.levels[r.Label][k]; ok {
			es = append(es, e)
		}
	}
	return es
}

func entriesRow(name string, es []answers.SweepEntry) []Cell {
	var pass, fail, nc, nt, conf int
	for _, e := range es {
		switch {
		case e.Err != "" || e.Report == nil:
			nc++
		case e.Report.Failed():
			fail++
		default:
			pass++
		}
		if e.Report != nil {
			nt += e.Report.VerdictsMoved.NearTie
			conf += e.Report.VerdictsMoved.Confident
		}
	}
	res := Cell{Text: "PASS", Tone: OK}
	switch {
	case len(es) == 0:
		res = Cell{Text: "nothing to compare", Tone: Plain}
	case nc > 0:
		res = Cell{Text: "NOT COMPARED", Tone: Bad}
	case fail > 0:
		res = Cell{Text: "FAIL", Tone: Bad}
	}
	return []Cell{{Text: name}, res, {Text: fmt.Sprintf("%d comparisons: %d pass, %d fail, %d not compared; verdicts moved: %d near-tie, %d confident", len(es), pass, fail, nc, nt, conf)}}
}

// Figures of a receipt, as cells.

func f2(v float64) Cell { return Cell{Text: strconv.FormatFloat(v, 'f', 2, 64), Raw: raw(v)} }
func f4(v float64) Cell { return Cell{Text: strconv.FormatFloat(v, 'f', 4, 64), Raw: raw(v)} }
func itoa(v int) Cell   { return Cell{Text: strconv.Itoa(v)} }

func raw(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func ratio(p *float64) Cell {
	if p == nil {
		return Cell{Text: "—"}
	}
	return Cell{Text: strconv.FormatFloat(100**p, 'f', 1, 64) + "%", Raw: raw(*p)}
}

func count(v int) Cell {
	c := itoa(v)
	if v > 0 {
		c.Tone = Bad
	}
	return c
}

func littleText(r *receipts.Receipt) Cell {
	if r.Checks == nil || r.Checks.LittlesLaw == nil {
		return Cell{Text: "not recorded"}
	}
	ll := r.Checks.LittlesLaw
	if ll.OK {
		return Cell{Text: fmt.Sprintf("ok (%.1f%%)", 100*ll.RelError), Tone: OK}
	}
	msg := strings.Join(ll.Problems, "; ")
	if msg == "" {
		msg = fmt.Sprintf("off by %.1f%%", 100*ll.RelError)
	}
	return Cell{Text: msg, Tone: Bad}
}

func reconText(r *receipts.Receipt) Cell {
	if r.Checks == nil || r.Checks.Reconciliation == nil {
		return Cell{Text: "not recorded"}
	}
	rc := r.Checks.Reconciliation
	if rc.OK {
		return Cell{Text: "ok", Tone: OK}
	}
	msg := rc.Verdict
	if rc.Detail != "" {
		msg += ": " + rc.Detail
	}
	return Cell{Text: msg, Tone: Bad}
}

func stoppedText(r *receipts.Receipt) Cell {
	st := r.Stopped
	if st == nil {
		return Cell{Text: "—"}
	}
	at := st.Item
	if st.Question != "" {
		at += " / " + st.Question
	}
	return Cell{Text: fmt.Sprintf("%s at %s (#%d): %s; %d discarded", st.Reason, at, st.Index, st.Message, st.Discarded), Tone: Bad}
}

func serverText(r *receipts.Receipt) Cell {
	if r.Server == nil {
		return Cell{Text: "no /metrics"}
	}
	c := Cell{Text: r.Server.Status}
	if r.Server.Status != "ok" {
		c.Tone = Warn
	}
	if len(r.Server.Problems) > 0 {
		c.Text += ": " + strings.Join(r.Server.Problems, "; ")
	}
	return c
}

func hit(r *receipts.Receipt, mm bool) *float64 {
	if r.Server == nil {
		return nil
	}
	if mm {
		return r.Server.MMCacheHitRate
	}
	return r.Server.PrefixCacheHitRate
}

func (b *builder) warnings() {
	for _, r := range b.runs() {
		for _, p := range r.Entries {
			for _, w := range p.Receipt.Warnings {
				b.rep.Warnings = append(b.rep.Warnings, fmt.Sprintf("%s %s: %s", r.Label, p.Key(), w))
			}
		}
	}
	for _, r := range b.runs() {
		for _, e := range r.Tokens {
			for _, w := range e.Receipt.Warnings {
				b.rep.Warnings = append(b.rep.Warnings, fmt.Sprintf("%s token point %s: %s", r.Label, e.Receipt.Key(), w))
			}
		}
		for _, e := range r.Matrices {
			for _, w := range e.Matrix.Warnings {
				b.rep.Warnings = append(b.rep.Warnings, fmt.Sprintf("%s speed matrix %s: %s", r.Label, e.File, w))
			}
		}
	}
	if b.pair() && (b.base.Bench == nil) != (b.cand.Bench == nil) {
		missing := b.base
		if b.cand.Bench == nil {
			missing = b.cand
		}
		b.rep.Warnings = append(b.rep.Warnings, fmt.Sprintf("%s has no %s: no speed gate", missing.Label, BenchName))
	}
	if b.pair() && timeScale(b.base) != timeScale(b.cand) {
		b.rep.Warnings = append(b.rep.Warnings, fmt.Sprintf("time scales differ (%s ×%s, %s ×%s): the speed figures are on different clocks", b.base.Label, num(timeScale(b.base)), b.cand.Label, num(timeScale(b.cand))))
	}
}
