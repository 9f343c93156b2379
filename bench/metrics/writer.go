package metrics

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/receipts"
)

// Benchmark is the name of the benchmark that measures judgments
// (BenchmarkJudgments in package bench).
const Benchmark = "Judgments"

// Package is the import path go test prints as the pkg: line of that
// benchmark's output.
const Package = "github.com/vetbench/vetbench/bench"

// PointName is a point's sub-benchmark name: set=<set>/c=<level>, and
// /arm=<arm> when the run measures more than one arm (armed). Every writer
// of benchmark lines names points this way, so the outputs of go test,
// vetbench run and vetbench gate -run compare point by point.
func PointName(set string, c int, arm receipts.Arm, armed bool) string {
	s := fmt.Sprintf("set=%s/c=%d", set, c)
	if armed {
		if arm == "" {
			arm = receipts.ArmCold
		}
		s += "/arm=" + string(arm)
	}
	return s
}

// RatePointName is an open-loop point's sub-benchmark name:
// set=<set>/rate=<judgments/s>, /max=<cap> when capped, and the arm as
// PointName adds it; benchstat's -col /rate lays the rates out.
func RatePointName(set string, rate float64, maxConcurrency int, arm receipts.Arm, armed bool) string {
	s := fmt.Sprintf("set=%s/rate=%s", set, strconv.FormatFloat(rate, 'g', -1, 64))
	if maxConcurrency > 0 {
		s += fmt.Sprintf("/max=%d", maxConcurrency)
	}
	if armed {
		if arm == "" {
			arm = receipts.ArmCold
		}
		s += "/arm=" + string(arm)
	}
	return s
}

// Writer writes benchmark results in the Go benchmark format, line for
// line as go test -bench prints them, so that vetbench gate, benchstat and
// the report read what it writes as they read go test's output: first the
// Unit lines and the configuration lines (goos, goarch, pkg and the
// caller's), then one line per result, named as go test names them
// (BenchmarkJudgments/<point>-<GOMAXPROCS>), the iterations, and the
// metrics sorted by unit with go test's number formats.
type Writer struct {
	w       io.Writer
	config  []string
	units   []Unit // beyond Units(): the token benchmarks'
	started bool
}

// NewWriter writes to w. config are key/value pairs for configuration lines
// after goos, goarch and pkg ("model", "google/gemma-4-31B-it").
func NewWriter(w io.Writer, config ...string) *Writer {
	cfg := []string{"goos", runtime.GOOS, "goarch", runtime.GOARCH, "pkg", Package}
	return &Writer{w: w, config: append(cfg, config...)}
}

// AddUnits declares more units (the token benchmarks') in the header; call
// it before the first Write.
func (w *Writer) AddUnits(us ...Unit) { w.units = append(w.units, us...) }

// Write writes one result line: point (PointName) measured iters times,
// with its metrics.
func (w *Writer) Write(point string, iters int, ms []Metric) error {
	return w.WriteNamed(Benchmark, point, iters, ms)
}

// WriteNamed is Write for another benchmark of the package (Tokens,
// Matrix): Benchmark<benchmark>/<point>.
func (w *Writer) WriteNamed(benchmark, point string, iters int, ms []Metric) error {
	var b strings.Builder
	if !w.started {
		w.started = true
		for _, u := range append(Units(), w.units...) {
			b.WriteString(u.Line() + "\n")
		}
		for i := 0; i+1 < len(w.config); i += 2 {
			fmt.Fprintf(&b, "%s: %s\n", w.config[i], w.config[i+1])
		}
	}
	fmt.Fprintf(&b, "Benchmark%s\t%8d", fullName(benchmark, point), max(iters, 1))
	sorted := slices.Clone(ms)
	slices.SortStableFunc(sorted, func(a, b Metric) int { return strings.Compare(a.Unit, b.Unit) })
	for _, m := range sorted {
		b.WriteString("\t")
		prettyPrint(&b, m.Value, m.Unit)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w.w, b.String())
	return err
}

// End writes the line go test ends its output with: PASS, or FAIL when
// the run did not pass (a failed point, an interrupt). The speed gate
// reads an output without it as cut short (a run killed before its end),
// so End is written once, after the last result, and never by a run that
// is still going.
func (w *Writer) End(passed bool) error {
	if !w.started {
		// Nothing was measured: an empty file is no result (rundir replaces
		// it), where a lone FAIL would read as one.
		return nil
	}
	end := "PASS\n"
	if !passed {
		end = "FAIL\n"
	}
	_, err := io.WriteString(w.w, end)
	return err
}

// prettyPrint is the testing package's: ten places before the decimal
// point, four significant figures for small numbers.
func prettyPrint(w io.Writer, x float64, unit string) {
	var format string
	switch y := math.Abs(x); {
	case y == 0 || y >= 999.95:
		format = "%10.0f %s"
	case y >= 99.995:
		format = "%12.1f %s"
	case y >= 9.9995:
		format = "%13.2f %s"
	case y >= 0.99995:
		format = "%14.3f %s"
	case y >= 0.099995:
		format = "%15.4f %s"
	case y >= 0.0099995:
		format = "%16.5f %s"
	case y >= 0.00099995:
		format = "%17.6f %s"
	default:
		format = "%18.7f %s"
	}
	fmt.Fprintf(w, format, x, unit)
}

// FullName is point's benchmark name as go test prints it without the
// Benchmark prefix: Judgments/<point>, and -<GOMAXPROCS> unless that is 1.
func FullName(point string) string { return fullName(Benchmark, point) }

func fullName(benchmark, point string) string {
	name := benchmark + "/" + point
	if p := runtime.GOMAXPROCS(0); p != 1 {
		name += fmt.Sprintf("-%d", p)
	}
	return name
}
