package report

import (
	"fmt"
	"slices"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/speed"
)

// figure is one per-point figure the curves show: its unit in bench.txt
// (what the speed gate reads) and its value in a receipt.
type figure struct {
	unit string
	of   func(*receipts.Receipt) (float64, bool)
}

var (
	figJPS = figure{"judgments/s", func(r *receipts.Receipt) (float64, bool) {
		return r.Throughput.JudgmentsPerSecond, true
	}}
	figImages = figure{"images/s", func(r *receipts.Receipt) (float64, bool) {
		return r.Throughput.ImagesPerSecond, true
	}}
	figP50    = figure{"p50-sec", latency(func(r *receipts.Receipt) float64 { return r.Throughput.Latency.P50 })}
	figP95    = figure{"p95-sec", latency(func(r *receipts.Receipt) float64 { return r.Throughput.Latency.P95 })}
	figP99    = figure{"p99-sec", latency(func(r *receipts.Receipt) float64 { return r.Throughput.Latency.P99 })}
	figPrefix = figure{"prefix-hit-ratio", func(r *receipts.Receipt) (float64, bool) {
		v := hit(r, false)
		return deref(v), v != nil
	}}
	figMM = figure{"mm-hit-ratio", func(r *receipts.Receipt) (float64, bool) {
		v := hit(r, true)
		return deref(v), v != nil
	}}
)

func latency(f func(*receipts.Receipt) float64) func(*receipts.Receipt) (float64, bool) {
	return func(r *receipts.Receipt) (float64, bool) { return f(r), r.Throughput.Latency.N > 0 }
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// Spread is one figure of one point over a run's passes.
type Spread struct {
	// Median is the speed gate's center of the passes (speed.Summary):
	// with a bench.txt, the very figure vetbench gate compares.
	Median float64
	// Min and Max bound the passes' values; N counts them.
	Min, Max float64
	N        int
	// From says where the values came from: BenchName (one line per
	// -count pass) or "receipts" (one receipt per pass directory).
	From string
}

// spread is figure f of point k over run r's passes: from the run's
// bench.txt when it has the point (the gate's values, so the curve's
// figure is the gate's median), else from its receipts of every pass.
func (b *builder) spread(r *Run, k Key, f figure) (Spread, bool) {
	if name, ok := r.benchName(k); ok && r.Bench != nil {
		if vs := r.Bench.Values(name, f.unit); len(vs) > 0 {
			sm := r.Bench.Summary(name, f.unit, b.opt.Speed)
			return Spread{Median: sm.Center, Min: slices.Min(vs), Max: slices.Max(vs), N: len(vs), From: BenchName}, true
		}
	}
	var vs []float64
	for _, rc := range r.passes(k) {
		if v, ok := f.of(rc); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return Spread{}, false
	}
	sm := speed.SummarizeValues(vs, b.opt.Speed)
	return Spread{Median: sm.Center, Min: slices.Min(vs), Max: slices.Max(vs), N: len(vs), From: "receipts"}, true
}

// point is a chart point of a spread: the median, the min–max bar, and
// hover text naming both and where they came from.
func (sp Spread) point(c int, format func(float64) string, unit string) Point {
	tip := fmt.Sprintf("c=%d: %s%s", c, format(sp.Median), unit)
	if sp.N > 1 {
		tip = fmt.Sprintf("c=%d: median %s%s, min–max %s–%s over %d passes (%s)", c, format(sp.Median), unit, format(sp.Min), format(sp.Max), sp.N, sp.From)
	}
	return Point{X: float64(c), Y: sp.Median, Lo: sp.Min, Hi: sp.Max, Tip: tip}
}

// passCounts says, for a chart's legend, over how many passes the bars
// run ("min–max of 5 passes", "min–max of 3–5 passes").
func passCounts(ns []int) string {
	if len(ns) == 0 {
		return ""
	}
	lo, hi := slices.Min(ns), slices.Max(ns)
	if lo == hi {
		return fmt.Sprintf("min–max of %d passes", lo)
	}
	return fmt.Sprintf("min–max of %d–%d passes", lo, hi)
}
