// Package speed decides whether a candidate is slower than a baseline from
// their `go test -bench` outputs (several runs each, e.g. -count 10).
//
// Load reads the outputs with golang.org/x/perf/benchfmt; Decide compares
// every benchmark × unit with a known direction (`Unit <u> better=higher`
// or `better=lower` lines; sec/op, B/op, allocs/op built in) with
// golang.org/x/perf/benchmath: a metric fails when the candidate's median
// is worse by more than Policy.Margin and a Mann–Whitney U test gives
// p < Policy.Alpha, held family-wise across the gated metrics (Holm). The
// Report renders as text and as JSON under the stable contract
// "vetbench.gate/v1". Nothing here runs benchmarks or reads the
// environment: the caller brings the outputs.
package speed

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/vetbench/vetbench/receipts/internal/docfile"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// ReportSchema names the JSON form of a Report.
const ReportSchema = "vetbench.gate/v1"

// Samples are one side's benchmark results: values per benchmark and
// unit, in the order first seen, and the unit metadata (better=, assume=).
type Samples struct {
	// Name is what errors call the input (a file name).
	Name   string
	units  benchfmt.UnitMetadataMap
	values map[string]map[string][]float64
	names  []string            // benchmarks, first-seen order
	unitsO map[string][]string // units per benchmark, first-seen order
	config map[string][]string // file config key -> distinct values
	// failed says the output ends FAIL: a point of its run did not pass.
	failed bool
}

// Load reads go test -bench output; name is what errors call it. A
// malformed benchmark line is an error: a gate that silently drops samples
// could pass a regression. So is an input without a single result.
//
// An output cut short is refused too: one that ends mid-line, and go test
// output (it has a "pkg:" line) whose last line is not go test's own end
// (PASS, FAIL, ok …): a run killed while writing, or a file copied before
// its run ended, would otherwise compare fewer runs, or fewer metrics on
// its last line, as if they were all.
func Load(r io.Reader, name string) (*Samples, error) {
	s := &Samples{Name: name, values: map[string]map[string][]float64{}, unitsO: map[string][]string{}, config: map[string][]string{}}
	tail := &tailReader{r: &capReader{r: r, left: MaxBytes}}
	rd := benchfmt.NewReader(tail, name)
	var bad []string
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			bad = append(bad, rec.Error())
		case *benchfmt.Result:
			bench := string(rec.Name.Full())
			if _, ok := s.values[bench]; !ok {
				s.values[bench] = map[string][]float64{}
				s.names = append(s.names, bench)
			}
			for _, v := range rec.Values {
				if err := checkValue(rec, v); err != nil {
					bad = append(bad, err.Error())
					continue
				}
				if _, ok := s.values[bench][v.Unit]; !ok {
					s.unitsO[bench] = append(s.unitsO[bench], v.Unit)
				}
				s.values[bench][v.Unit] = append(s.values[bench][v.Unit], v.Value)
			}
			for _, c := range rec.Config {
				if !c.File {
					continue
				}
				if val := string(c.Value); !slices.Contains(s.config[c.Key], val) {
					s.config[c.Key] = append(s.config[c.Key], val)
				}
			}
		}
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(bad) > maxBad {
		bad = append(bad[:maxBad], fmt.Sprintf("… and %d more", len(bad)-maxBad))
	}
	if err := tail.cut(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s: malformed benchmark lines:\n  %s", name, strings.Join(bad, "\n  "))
	}
	s.units = rd.Units()
	s.failed = tail.failed()
	legacyDispatch(s.config)
	if len(s.names) == 0 {
		return nil, fmt.Errorf("%s: no benchmark results", name)
	}
	return s, nil
}

// legacyDispatch reads an output's older "fan-out: on|off" line as the
// dispatch it stated (fan-out, in-order), unless the output says its
// dispatch itself: outputs from before the typevet dispatch compare with
// newer ones, and a typevet run is refused against either.
func legacyDispatch(config map[string][]string) {
	old, ok := config[KeyFanOut]
	if !ok {
		return
	}
	delete(config, KeyFanOut)
	if _, ok := config[KeyDispatch]; ok {
		return
	}
	for _, v := range old {
		d := v // an unknown value stays itself, and differs
		switch v {
		case "on":
			d = "fan-out"
		case "off":
			d = "in-order"
		}
		if !slices.Contains(config[KeyDispatch], d) {
			config[KeyDispatch] = append(config[KeyDispatch], d)
		}
	}
}

// ErrCut is an output that ends before its run did.
var ErrCut = errors.New("output cut short")

// tailReader passes bytes through and keeps what Load needs to tell a
// whole output from a cut one: whether it is go test output (a "pkg:"
// line), its last non-blank line, and whether its last byte ends a line.
type tailReader struct {
	r       io.Reader
	line    []byte // the line being read (its first 256 bytes)
	last    string // the last non-blank line
	goTest  bool
	open    bool // bytes after the last newline
	started bool
}

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	for _, c := range p[:n] {
		t.started = true
		if c == '\n' {
			t.endLine()
			continue
		}
		t.open = true
		if len(t.line) < 256 {
			t.line = append(t.line, c)
		}
	}
	return n, err
}

func (t *tailReader) endLine() {
	if l := strings.TrimSpace(string(t.line)); l != "" {
		t.last = l
		t.goTest = t.goTest || strings.HasPrefix(l, "pkg:")
	}
	t.line, t.open = t.line[:0], false
}

// failed says the output ends as go test ends a run that failed.
func (t *tailReader) failed() bool {
	l := t.last
	return l == "FAIL" || strings.HasPrefix(l, "FAIL ") || strings.HasPrefix(l, "FAIL\t")
}

// cut says why the output read looks cut short, or nil.
func (t *tailReader) cut() error {
	if t.open {
		line := strings.TrimSpace(string(t.line))
		t.endLine()
		if line != "" {
			return fmt.Errorf("%w: the last line %q has no end", ErrCut, line)
		}
	}
	if !t.goTest {
		return nil
	}
	l := t.last
	if l == "PASS" || l == "FAIL" || strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "ok\t") ||
		strings.HasPrefix(l, "FAIL ") || strings.HasPrefix(l, "FAIL\t") {
		return nil
	}
	return fmt.Errorf("%w: go test output that does not end as go test ends it (PASS, FAIL or ok …), but with %q", ErrCut, l)
}

// LoadFile is Load of the file at path.
func LoadFile(path string) (*Samples, error) {
	f, size, err := docfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > MaxBytes {
		return nil, fmt.Errorf("%s: %w: %d bytes, limit %d bytes (%d MiB)", path, ErrTooLarge, size, MaxBytes, MaxBytes>>20)
	}
	return Load(f, path)
}

// MaxBytes bounds one benchmark output: 32 MiB, as every document. A
// -count 10 run of the whole suite writes ~40 KB; go test -bench -count
// 1000 of it would be ~4 MB.
const MaxBytes = docfile.MaxBytes

// ErrTooLarge is an output over MaxBytes (it is not read past the cap).
var ErrTooLarge = errors.New("benchmark output too large")

// capReader fails a read past left bytes.
type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("%w: more than %d bytes (%d MiB)", ErrTooLarge, MaxBytes, MaxBytes>>20)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// maxBad bounds the malformed lines an error lists.
const maxBad = 20

// checkValue refuses a value no benchmark can measure: NaN or ±Inf (the
// statistics below would hang on NaN — benchmath's Mann–Whitney U never
// ends — or pass ±Inf as "same"), and a negative time, size, count or
// rate. The error names the file and line.
func checkValue(rec *benchfmt.Result, v benchfmt.Value) error {
	file, line := rec.Pos()
	switch {
	case math.IsNaN(v.Value) || math.IsInf(v.Value, 0):
		return fmt.Errorf("%s:%d: %s: %s is %v, not a finite number", file, line, rec.Name.Full(), v.Unit, v.Value)
	case v.Value < 0 && nonNegative(v.Unit):
		return fmt.Errorf("%s:%d: %s: %s is %v, below 0", file, line, rec.Name.Full(), v.Unit, v.Value)
	}
	return nil
}

// nonNegative says whether a unit cannot go below 0: go test's own
// (ns/op, B/op, allocs/op, MB/s) and the rates, times, ratios and counts
// vetbench reports (…/s, …-sec, …-ms, …-ratio, counts).
func nonNegative(unit string) bool {
	switch unit {
	case "ns/op", "sec/op", "B/op", "allocs/op", "MB/s", "B/s",
		"preemptions", "moved-items", "off-format", "failed-items", "discarded-items", "goodput":
		return true
	}
	for _, suffix := range []string{"/s", "-sec", "-ms", "-ratio"} {
		if strings.HasSuffix(unit, suffix) && !strings.HasPrefix(unit, "-") {
			return true
		}
	}
	return false
}

// Benchmarks lists the benchmark names in the order first seen.
func (s *Samples) Benchmarks() []string { return slices.Clone(s.names) }

// Values are the runs of one benchmark × unit, in input order.
func (s *Samples) Values(benchmark, unit string) []float64 {
	return slices.Clone(s.values[benchmark][unit])
}

// TestedRuns is how many runs of benchmark × unit s holds for the U test
// to compare: 0 when it holds none, or declares the unit compared exactly
// (assume=exact). A gate yet to measure its other side counts what this
// side can already reach (FewRunsAhead).
func (s *Samples) TestedRuns(benchmark, unit string) int {
	if s.units.GetAssumption(unit) != benchmath.AssumeNothing {
		return 0
	}
	return len(s.values[benchmark][unit])
}

// Summary is the gate's summary of one benchmark × unit of s under p, as
// Decide gives it for that side of the Metric (benchmath's center, the
// median for a unit without assume=, and its interval); nil when s holds
// no such values. A report that shows the figure takes it from here, so it
// is the gate's.
func (s *Samples) Summary(benchmark, unit string, p Policy) *Summary {
	vs, ok := s.values[benchmark][unit]
	if !ok {
		return nil
	}
	return summarize(s.units.GetAssumption(unit), benchmath.NewSample(slices.Clone(vs), &benchmath.Thresholds{CompareAlpha: p.Alpha}), p.Confidence)
}

// SummarizeValues is Summary of values of a unit without assume= (a
// figure read from receipts rather than benchmark output); nil for none.
func SummarizeValues(values []float64, p Policy) *Summary {
	if len(values) == 0 {
		return nil
	}
	return summarize(benchmath.AssumeNothing, benchmath.NewSample(slices.Clone(values), &benchmath.Thresholds{CompareAlpha: p.Alpha}), p.Confidence)
}

// VaryingConfig lists, sorted, the file configuration keys (goos, pkg,
// target…) whose values differ between the two inputs or within one.
// benchstat splits its tables on such keys and would compare nothing, so
// a caller showing benchstat tables passes them to -ignore. The decision
// here does not look at configuration.
func VaryingConfig(base, cand *Samples) []string {
	var ignore []string
	for k, vs := range base.config {
		if !slices.Equal(vs, cand.config[k]) || len(vs) > 1 {
			ignore = append(ignore, k)
		}
	}
	for k := range cand.config {
		if _, ok := base.config[k]; !ok {
			ignore = append(ignore, k)
		}
	}
	slices.Sort(ignore)
	return ignore
}

// Policy says when the candidate is slower.
type Policy struct {
	// Margin is the relative change in the bad direction beyond which a
	// significant change fails (0.05 = 5%).
	Margin float64 `json:"margin"`
	// Alpha is the significance level of the Mann-Whitney U test.
	Alpha float64 `json:"alpha"`
	// Confidence is the level of the shown intervals.
	Confidence float64 `json:"confidence"`
	// Holm applies Holm's step-down correction across the gated metrics,
	// so Alpha bounds the chance that an unchanged candidate fails at all
	// (family-wise), not per metric: a gate over 8 metrics at 0.05 each
	// would otherwise fail equal candidates far more often than 5%.
	Holm bool `json:"holm"`
	// AllowIdentityDrift compares outputs whose identity configuration
	// differs (IdentityCheck.Differs), listing what differs, instead of
	// refusing.
	AllowIdentityDrift bool `json:"allow_identity_drift"`
	// AllowFewRuns decides on the tested metrics whose runs can reach
	// significance and lists the others as too_few_runs, instead of leaving
	// the gate without a verdict for them (see Power). With none able to,
	// there is no verdict all the same.
	AllowFewRuns bool `json:"allow_few_runs"`
	// Floors are absolute targets, whatever the baseline did: unit → the
	// least median the candidate must reach on every benchmark reporting
	// it, for units where higher is better (a stated SLO goodput:
	// "goodput": 0.95). A floor no candidate benchmark reports leaves the
	// gate without a verdict: a stated target is never passed unchecked.
	Floors map[string]float64 `json:"floors,omitempty"`
}

// Policy defaults: a candidate fails on a change of more than 5% in the
// bad direction at α = 0.05 family-wise; intervals are 95%.
const (
	DefaultMargin     = 0.05
	DefaultAlpha      = 0.05
	DefaultConfidence = 0.95
)

// DefaultPolicy is the gate's policy unless told otherwise.
func DefaultPolicy() Policy {
	return Policy{Margin: DefaultMargin, Alpha: DefaultAlpha, Confidence: DefaultConfidence, Holm: true}
}

// Validate reports a policy that cannot be applied.
func (p Policy) Validate() error {
	switch {
	case math.IsNaN(p.Margin) || p.Margin < 0:
		return fmt.Errorf("speed policy: margin %v, want >= 0", p.Margin)
	case !(p.Alpha > 0 && p.Alpha < 1):
		return fmt.Errorf("speed policy: alpha %v, want in (0,1)", p.Alpha)
	case !(p.Confidence > 0 && p.Confidence < 1):
		return fmt.Errorf("speed policy: confidence %v, want in (0,1)", p.Confidence)
	}
	for unit, f := range p.Floors {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("speed policy: floor on %s is %v, want a finite number", unit, f)
		}
	}
	return nil
}

// Verdict is one metric's outcome.
type Verdict string

// Metric verdicts. Worse fails the gate; so does New for a nonzero exact
// better=lower count. Missing (for a gated metric), FewRuns and
// DirectionConflict leave the gate without a verdict.
const (
	Worse             Verdict = "worse"
	Better            Verdict = "better"
	Same              Verdict = "same"
	NotGated          Verdict = "not_gated"
	Missing           Verdict = "missing_in_candidate"
	New               Verdict = "new_in_candidate"
	FewRuns           Verdict = "too_few_runs"
	DirectionConflict Verdict = "direction_conflict"
)

// Metric is one benchmark × unit decision.
type Metric struct {
	Benchmark string   `json:"benchmark"`
	Unit      string   `json:"unit"`
	Better    string   `json:"better"` // higher, lower or "" (not gated)
	Baseline  *Summary `json:"baseline"`
	Candidate *Summary `json:"candidate"`
	// Delta is (candidate − baseline)/|baseline| of the centers; null when
	// the baseline center is 0.
	Delta   *float64 `json:"delta"`
	P       *float64 `json:"p"`
	Verdict Verdict  `json:"verdict"`
	// MinP is the smallest p its run counts can give (MinP); null for a
	// metric no test decides.
	MinP *float64 `json:"min_p"`
	// Significant says p is below alpha after the Holm correction.
	Significant bool     `json:"significant"`
	Warnings    []string `json:"warnings,omitempty"`

	dir    int
	exact  bool
	assume benchmath.Assumption
}

// Summary is one side of a metric: benchmath's center (median) and
// confidence interval over N runs; for an exact count whose runs differ,
// its mean and range (summarize).
type Summary struct {
	Center float64 `json:"center"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	N      int     `json:"n"`
	Range  string  `json:"range"` // benchstat's ±x%
}

// Report is the gate's decision. Its JSON form is a stable contract
// (schema "vetbench.gate/v1"); see the README for each field.
type Report struct {
	Schema   string   `json:"schema"`
	Policy   Policy   `json:"policy"`
	Metrics  []Metric `json:"metrics"`
	Gated    int      `json:"gated"`
	Worse    int      `json:"worse"`
	Failures []string `json:"failures"`
	// Problems are why no verdict could be given.
	Problems []string `json:"problems"`
	Passed   bool     `json:"passed"`
	// Identity is what the outputs' configuration lines say about
	// comparing them.
	Identity IdentityCheck `json:"identity"`
	// Power is what the runs can reach against what the correction needs.
	Power Power `json:"power"`
	// Notes are facts a reader of the verdict needs that do not change it
	// (a side whose twin fell behind its model: FellBehind).
	Notes []string `json:"notes,omitempty"`

	// baseRunFailed and candRunFailed are set by AddRuns.
	baseRunFailed, candRunFailed bool
}

// AddFailure fails the report for a reason found outside the outputs (a
// candidate run that exited non-zero).
func (r *Report) AddFailure(msg string) {
	r.Failures = append(r.Failures, msg)
	r.Passed = false
}

// AddProblem leaves the report without a verdict for a reason found
// outside the outputs (a baseline run that exited non-zero).
func (r *Report) AddProblem(msg string) {
	r.Problems = append(r.Problems, msg)
	r.Passed = false
}

// NoVerdict says the inputs could not be decided on (Problems lists why):
// too few runs, nothing to gate, conflicting directions. It is never a
// pass.
func (r *Report) NoVerdict() bool { return len(r.Problems) > 0 }

// Failed says the candidate is slower (or lost a gated metric) and there
// was a verdict.
func (r *Report) Failed() bool { return !r.Passed && !r.NoVerdict() }

// Decide compares every benchmark × unit with a known direction. It fails
// a metric whose candidate center is worse than the baseline's by more
// than the margin with p < alpha (Mann-Whitney U, no assumption on the
// distribution; exact comparison for assume=exact units). A metric whose
// runs can never reach the strictest threshold the correction applies
// (alpha/m with Holm over m tested metrics: Power) is too_few_runs and makes
// the report NoVerdict, never a silent pass, unless p.AllowFewRuns.
//
// Outputs whose identity configuration differs (CheckIdentity) are not
// compared unless p.AllowIdentityDrift: the report then holds no metrics
// and one problem naming what differs.
func Decide(base, cand *Samples, p Policy) *Report {
	rep := &Report{Schema: ReportSchema, Policy: p, Metrics: []Metric{}, Failures: []string{}, Problems: []string{},
		Identity: CheckIdentity(base, cand)}
	if d := rep.Identity.Differs; len(d) > 0 {
		if !p.AllowIdentityDrift {
			rep.Problems = append(rep.Problems, "identity differs, not the same experiment: "+strings.Join(d, "; ")+
				" (allow identity drift to compare anyway)")
			return rep
		}
		rep.Identity.Allowed = true
	}
	failedRuns(base, cand, rep)
	thr := &benchmath.Thresholds{CompareAlpha: p.Alpha}
	for _, bench := range base.names {
		for _, unit := range base.unitsO[bench] {
			rep.Metrics = append(rep.Metrics, compareMetric(base, cand, bench, unit, thr, p, rep))
		}
	}
	// Verdicts come after every comparison: significance corrects the
	// p-values over all of them at once.
	significance(rep.Metrics, p)
	rep.Power = power(rep.Metrics, p)
	for i := range rep.Metrics {
		if m := &rep.Metrics[i]; m.Verdict == "" {
			judge(m, p, rep)
		}
	}
	fewRunsProblems(rep, p)
	newMetrics(base, cand, thr, p, rep)
	floors(cand, p, thr, rep)
	if rep.Gated == 0 && len(rep.Problems) == 0 {
		rep.Problems = append(rep.Problems, "nothing to gate: no benchmark metric with a known direction is present on both sides (declare units with `Unit <unit> better=higher|lower`)")
	}
	rep.Passed = len(rep.Failures) == 0 && len(rep.Problems) == 0
	return rep
}

// failedRuns reads an output that ends FAIL as gate -run reads a run that
// failed (Report.AddRuns): a baseline with a point that did not pass leaves
// nothing to compare with, a candidate's fails whatever its figures.
func failedRuns(base, cand *Samples, rep *Report) {
	const why = "the output ends FAIL: a point of its run did not pass (failed or stopped work)"
	if base.failed {
		rep.Problems = append(rep.Problems, "baseline: "+why)
	}
	if cand.failed {
		rep.Failures = append(rep.Failures, "candidate: "+why)
	}
}

// compareMetric compares one baseline metric with the candidate's: its
// summaries, p-value and delta, or the verdict that it cannot be compared
// (directions conflict, the candidate lacks it), with a problem where that
// leaves a gated metric without a verdict.
func compareMetric(base, cand *Samples, bench, unit string, thr *benchmath.Thresholds, p Policy, rep *Report) Metric {
	m := Metric{Benchmark: bench, Unit: unit}
	dir, conflict := direction(base.units, cand.units, unit)
	m.Better = map[int]string{1: "higher", -1: "lower"}[dir]
	assume := assumption(base.units, cand.units, unit)
	bs := benchmath.NewSample(slices.Clone(base.values[bench][unit]), thr)
	m.Baseline = summarize(assume, bs, p.Confidence)
	cv, ok := cand.values[bench][unit]
	switch {
	case conflict:
		m.Verdict = DirectionConflict
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s %s: baseline and candidate declare different better= directions", bench, unit))
		return m
	case !ok:
		// A cut output, or a point that did not run: nothing to
		// compare it with, so no verdict (not "worse").
		m.Verdict = Missing
		if dir != 0 {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s %s: missing from the candidate (output cut short, or the point did not run)", bench, unit))
		}
		return m
	}
	cs := benchmath.NewSample(slices.Clone(cv), thr)
	m.Candidate = summarize(assume, cs, p.Confidence)
	cmp := assume.Compare(bs, cs)
	pv := cmp.P
	m.P = &pv
	for _, w := range cmp.Warnings {
		m.Warnings = append(m.Warnings, w.Error())
	}
	switch {
	case m.Baseline.Center != 0:
		// Relative to the baseline's size: c/b − 1 flips the sign of a
		// change below 0 (−100 → −200 is −100%, not +100%).
		d := (m.Candidate.Center - m.Baseline.Center) / math.Abs(m.Baseline.Center)
		m.Delta = &d
	case m.Candidate.Center == 0:
		d := 0.0
		m.Delta = &d
	}
	m.dir, m.exact, m.assume = dir, assume == benchmath.AssumeExact, assume
	return m
}

// newMetrics adds the candidate's metrics the baseline never recorded:
// shown as new, and failed only where they are a count of bad events.
func newMetrics(base, cand *Samples, thr *benchmath.Thresholds, p Policy, rep *Report) {
	for _, bench := range cand.names {
		for _, unit := range cand.unitsO[bench] {
			if _, ok := base.values[bench][unit]; ok {
				continue
			}
			assume := cand.units.GetAssumption(unit)
			m := Metric{Benchmark: bench, Unit: unit, Verdict: New,
				Candidate: summarize(assume, benchmath.NewSample(slices.Clone(cand.values[bench][unit]), thr), p.Confidence)}
			// An exact count of bad events (failed-items, better=lower) that
			// the candidate has and the baseline never recorded fails: a
			// baseline from before the count existed vouches for none.
			if assume == benchmath.AssumeExact && cand.units.GetBetter(unit) < 0 && m.Candidate.Center > 0 {
				rep.Failures = append(rep.Failures, fmt.Sprintf("%s %s: %s in the candidate, not recorded in the baseline", bench, unit, fmtVal(m.Candidate.Center)))
			}
			rep.Metrics = append(rep.Metrics, m)
		}
	}
}

// floors holds the candidate to the policy's absolute targets: a
// benchmark whose median is below its unit's floor fails.
func floors(cand *Samples, p Policy, thr *benchmath.Thresholds, rep *Report) {
	for _, unit := range slices.Sorted(maps.Keys(p.Floors)) {
		floor := p.Floors[unit]
		var reporting []string
		for _, bench := range cand.names {
			if _, ok := cand.values[bench][unit]; ok {
				reporting = append(reporting, bench)
			}
		}
		switch {
		case len(reporting) == 0:
			rep.Problems = append(rep.Problems, fmt.Sprintf("floor on %s: no candidate benchmark reports it (was the target it counts against stated in the run?)", unit))
			continue
		case cand.units.GetBetter(unit) <= 0:
			rep.Problems = append(rep.Problems, fmt.Sprintf("floor on %s: the candidate does not declare it better=higher", unit))
			continue
		}
		for _, bench := range reporting {
			v := cand.values[bench][unit]
			center := summarize(cand.units.GetAssumption(unit), benchmath.NewSample(slices.Clone(v), thr), p.Confidence).Center
			if center < floor {
				rep.Failures = append(rep.Failures, fmt.Sprintf("%s %s: candidate %s, below the stated target %s", bench, unit, fmtVal(center), fmtVal(floor)))
			}
		}
	}
}

// significance marks which compared metrics are significant: p < alpha,
// or with Holm, p_(k) < alpha/(m−k) over the m gated metrics sorted by p,
// stopping at the first that is not. Exact units (assume=exact) differ or
// not; they take no part in the correction.
func significance(ms []Metric, p Policy) {
	var idx []int
	for i, m := range ms {
		switch {
		case tested(m):
			idx = append(idx, i)
		case m.Verdict == "" && m.P != nil && m.dir != 0 && m.exact:
			ms[i].Significant = m.Candidate.Center != m.Baseline.Center
		}
	}
	if !p.Holm {
		for _, i := range idx {
			ms[i].Significant = *ms[i].P < p.Alpha
		}
		return
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(*ms[a].P, *ms[b].P) })
	for k, i := range idx {
		if *ms[i].P >= p.Alpha/float64(len(idx)-k) {
			break
		}
		ms[i].Significant = true
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// judge classes one metric present on both sides.
func judge(m *Metric, p Policy, rep *Report) {
	if m.dir == 0 {
		m.Verdict = NotGated
		return
	}
	rep.Gated++
	if underpowered(m, rep.Power) {
		m.Verdict = FewRuns
		rep.Power.TooFewRuns++
		return
	}
	b, c := m.Baseline.Center, m.Candidate.Center
	// bad > 0 means the candidate moved in the worse direction.
	var bad float64
	switch {
	case m.Delta != nil:
		bad = -float64(m.dir) * *m.Delta
	case (c-b)*float64(m.dir) < 0:
		bad = math.Inf(1) // from 0 to worse
	default:
		bad = math.Inf(-1)
	}
	switch {
	case m.Significant && bad > p.Margin+marginSlack:
		m.Verdict = Worse
		rep.Worse++
		rep.Failures = append(rep.Failures, fmt.Sprintf("%s %s: candidate %s worse (%s → %s, p=%.3f)", m.Benchmark, m.Unit, pct(m.Delta), fmtVal(b), fmtVal(c), *m.P))
	case m.Significant && -bad > p.Margin+marginSlack:
		m.Verdict = Better
	default:
		m.Verdict = Same
	}
}

// assumption is the baseline's assume= for unit, or the candidate's where
// only the candidate declares one: as better= merges (direction), a side
// without the Unit line takes the other's.
func assumption(base, cand benchfmt.UnitMetadataMap, unit string) benchmath.Assumption {
	if base.Get(unit, "assume") == nil && cand.Get(unit, "assume") != nil {
		return cand.GetAssumption(unit)
	}
	return base.GetAssumption(unit)
}

// marginSlack is what a delta must exceed the margin by to be beyond it:
// the rounding of (c − b)/|b| (2 → 2.1 is 0.050000000000000044), so a
// change of exactly the margin is not "more than" it.
const marginSlack = 1e-12

// direction merges the better= metadata of both sides: +1 higher is
// better, −1 lower is better, 0 unknown. Built-in defaults apply (sec/op,
// B/op, allocs/op lower; B/s higher).
func direction(a, b benchfmt.UnitMetadataMap, unit string) (dir int, conflict bool) {
	da, db := a.GetBetter(unit), b.GetBetter(unit)
	switch {
	case da == db:
		return da, false
	case da == 0:
		return db, false
	case db == 0:
		return da, false
	}
	return 0, true
}

// MinUTestP is the smallest two-sided p-value an exact Mann-Whitney U
// test can give with n1 and n2 samples, in closed form: 2 / C(n1+n2, n1).
// The gate asks benchmath instead (MinP); this checks it.
func MinUTestP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	lc, _ := math.Lgamma(float64(n1 + n2 + 1))
	l1, _ := math.Lgamma(float64(n1 + 1))
	l2, _ := math.Lgamma(float64(n2 + 1))
	return math.Min(1, 2/math.Exp(lc-l1-l2))
}

// summarize is benchmath's summary of s under a, but for an exact count
// whose runs differ (benchmath warns): its mean, not benchmath's mode, so a
// count of bad events (failed-items) in fewer than half of the runs is not
// read as none.
func summarize(a benchmath.Assumption, s *benchmath.Sample, confidence float64) *Summary {
	sm := a.Summary(s, confidence)
	if vs := s.Values; a == benchmath.AssumeExact && vs[0] != vs[len(vs)-1] {
		sm.Center = mean(vs)
	}
	lo, hi := sm.Lo, sm.Hi
	// Too few samples give an infinite interval; JSON cannot hold that.
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		lo, hi = sm.Center, sm.Center
	}
	return &Summary{Center: sm.Center, Lo: lo, Hi: hi, N: len(s.Values), Range: "±" + sm.PctRangeString()}
}

func mean(vs []float64) float64 {
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	return sum / float64(len(vs))
}

func pct(d *float64) string {
	if d == nil {
		return "changed from 0"
	}
	return fmt.Sprintf("%+.2f%%", 100**d)
}

func fmtVal(v float64) string { return fmt.Sprintf("%.4g", v) }

// WriteText renders the decision table and the verdict for a person.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	corr := "per metric"
	if r.Policy.Holm {
		corr = "family-wise, Holm"
	}
	fmt.Fprintf(&b, "speed gate: a metric fails when the candidate is worse by more than %.1f%% with p < %g (Mann-Whitney U, %s)\n\n", 100*r.Policy.Margin, r.Policy.Alpha, corr)
	if len(r.Metrics) > 0 {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "benchmark\tunit\tbetter\tbaseline\tcandidate\tdelta\tp\tverdict")
		for _, m := range r.Metrics {
			p := "-"
			switch {
			case m.exact:
				p = "exact"
			case m.P != nil:
				p = fmt.Sprintf("%.3f", *m.P)
			}
			delta := "-"
			if m.Candidate != nil && m.Baseline != nil {
				delta = pct(m.Delta)
			}
			better := m.Better
			if better == "" {
				better = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Benchmark, m.Unit, better, showSummary(m.Baseline), showSummary(m.Candidate), delta, p, strings.ToUpper(string(m.Verdict)))
		}
		tw.Flush()
		b.WriteString("\n")
	}
	id := r.Identity
	for _, s := range id.Differs {
		verb := "differs"
		if id.Allowed {
			verb = "differs (allowed)"
		}
		fmt.Fprintf(&b, "identity %s: %s\n", verb, s)
	}
	for _, s := range id.Changed {
		fmt.Fprintf(&b, "changed: %s\n", s)
	}
	for _, s := range id.Unverified {
		fmt.Fprintf(&b, "unverified: %s\n", s)
	}
	if len(id.Differs)+len(id.Changed)+len(id.Unverified) > 0 {
		b.WriteString("\n")
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n\n", n)
	}
	if pw := r.Power; pw.TooFewRuns > 0 && len(r.Problems) == 0 {
		fmt.Fprintf(&b, "too few runs (allowed: not decided): %d of %d tested metrics cannot reach p < %.3g; -count %d or more decides them\n\n", pw.TooFewRuns, pw.Tested, pw.Threshold, pw.MinCount)
	}
	switch {
	case len(r.Problems) > 0:
		fmt.Fprintf(&b, "NO VERDICT (%d):\n", len(r.Problems))
		for _, s := range r.Problems {
			fmt.Fprintf(&b, "  %s\n", s)
		}
		if len(r.Failures) > 0 {
			fmt.Fprintf(&b, "and %d failures:\n", len(r.Failures))
			for _, s := range r.Failures {
				fmt.Fprintf(&b, "  %s\n", s)
			}
		}
	case len(r.Failures) > 0:
		fmt.Fprintf(&b, "FAIL: %d of %d gated metrics:\n", len(r.Failures), r.Gated)
		for _, s := range r.Failures {
			fmt.Fprintf(&b, "  %s\n", s)
		}
	case r.Power.TooFewRuns > 0:
		fmt.Fprintf(&b, "PASS: %d of %d gated metrics decided, none worse by more than %.1f%%; %d too few runs (allowed)\n", r.Gated-r.Power.TooFewRuns, r.Gated, 100*r.Policy.Margin, r.Power.TooFewRuns)
	default:
		fmt.Fprintf(&b, "PASS: %d gated metrics, none worse by more than %.1f%%\n", r.Gated, 100*r.Policy.Margin)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func showSummary(s *Summary) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%s %s n=%d", fmtVal(s.Center), s.Range, s.N)
}
