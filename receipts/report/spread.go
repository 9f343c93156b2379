package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

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
	name, _ := r.benchName(k)
	var vs []float64
	for _, rc := range r.passes(k) {
		if v, ok := f.of(rc); ok {
			vs = append(vs, v)
		}
	}
	return b.spreadOf(r, name, f.unit, vs)
}

// spreadOf is one figure's Spread: the lines of benchmark name in the
// run's bench.txt when it has any in unit, else vs (one value per pass's
// receipt, in unit); false when neither holds a value.
func (b *builder) spreadOf(r *Run, name, unit string, vs []float64) (Spread, bool) {
	if name != "" && r.Bench != nil {
		if bv := r.Bench.Values(name, unit); len(bv) > 0 {
			sm := r.Bench.Summary(name, unit, b.opt.Speed)
			return Spread{Median: sm.Center, Min: slices.Min(bv), Max: slices.Max(bv), N: len(bv), From: BenchName}, true
		}
	}
	if len(vs) == 0 {
		return Spread{}, false
	}
	sm := speed.SummarizeValues(vs, b.opt.Speed)
	return Spread{Median: sm.Center, Min: slices.Min(vs), Max: slices.Max(vs), N: len(vs), From: "receipts"}, true
}

// scaled is the spread in another unit (seconds as milliseconds), kept
// to 12 significant digits: 0.001097 s reads 1.097 ms, not
// 1.0970000000000002, in the CSV.
func (sp Spread) scaled(k float64) Spread {
	to := func(v float64) float64 {
		r, _ := strconv.ParseFloat(strconv.FormatFloat(k*v, 'g', 12, 64), 64)
		return r
	}
	sp.Median, sp.Min, sp.Max = to(sp.Median), to(sp.Min), to(sp.Max)
	return sp
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

// source says where a run's spreads came from, for a section's note.
func (sp Spread) source() string {
	switch {
	case sp.N == 1:
		return "one pass, no spread (run with -count N to see one)"
	case sp.From != BenchName:
		return fmt.Sprintf("%d passes' receipts", sp.N)
	}
	return fmt.Sprintf("%d -count passes in %s, the medians vetbench gate compares", sp.N, BenchName)
}

// spreadSources joins each run's source ("both runs: …" when they agree).
func spreadSources(labels, froms []string) string {
	if len(froms) == 2 && froms[0] == froms[1] {
		return "both runs: " + froms[0]
	}
	parts := []string{}
	for i := range labels {
		parts = append(parts, labels[i]+": "+froms[i])
	}
	return strings.Join(parts, "; ")
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
