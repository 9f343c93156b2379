package metrics

import (
	"fmt"
	"io"
	"runtime"

	"golang.org/x/perf/benchfmt"

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

// Writer writes benchmark results in the Go benchmark format, as go test
// -bench prints them (golang.org/x/perf/benchfmt), so that vetbench gate,
// benchstat and the report read what it writes as they read go test's
// output: first the Unit lines and the configuration lines (goos, goarch,
// pkg and the caller's), then one line per result, named as go test names
// them (BenchmarkJudgments/<point>-<GOMAXPROCS>).
type Writer struct {
	w       io.Writer
	bw      *benchfmt.Writer
	config  []benchfmt.Config
	started bool
}

// NewWriter writes to w. config are key/value pairs for configuration lines
// after goos, goarch and pkg ("model", "google/gemma-4-31B-it").
func NewWriter(w io.Writer, config ...string) *Writer {
	cfg := []benchfmt.Config{
		{Key: "goos", Value: []byte(runtime.GOOS), File: true},
		{Key: "goarch", Value: []byte(runtime.GOARCH), File: true},
		{Key: "pkg", Value: []byte(Package), File: true},
	}
	for i := 0; i+1 < len(config); i += 2 {
		cfg = append(cfg, benchfmt.Config{Key: config[i], Value: []byte(config[i+1]), File: true})
	}
	return &Writer{w: w, bw: benchfmt.NewWriter(w), config: cfg}
}

// Write writes one result line: point (PointName) measured iters times,
// with its metrics.
func (w *Writer) Write(point string, iters int, ms []Metric) error {
	if !w.started {
		w.started = true
		if err := WriteUnits(w.w); err != nil {
			return err
		}
	}
	res := &benchfmt.Result{Config: w.config, Name: benchfmt.Name(FullName(point)), Iters: max(iters, 1)}
	for _, m := range ms {
		res.Values = append(res.Values, benchfmt.Value{Value: m.Value, Unit: m.Unit})
	}
	return w.bw.Write(res)
}

// FullName is point's benchmark name as go test prints it without the
// Benchmark prefix: Judgments/<point>, and -<GOMAXPROCS> unless that is 1.
func FullName(point string) string {
	name := Benchmark + "/" + point
	if p := runtime.GOMAXPROCS(0); p != 1 {
		name += fmt.Sprintf("-%d", p)
	}
	return name
}
