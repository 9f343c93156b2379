package scrape

import (
	"fmt"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/vetbench/vetbench/receipts"
)

// histPoint is one histogram series.
type histPoint struct {
	labels     map[string]string
	count, sum float64
	buckets    []bucket // sorted by upper edge
}

func (h histPoint) edges() []float64 {
	out := make([]float64, len(h.buckets))
	for i, b := range h.buckets {
		out[i] = b.upper
	}
	return out
}

// histogram computes one histogram's window delta. It reports false when the
// histogram is optional and absent from both readings.
func (d *differ) histogram(spec histogramSpec) (receipts.Histogram, bool) {
	fb, fa := d.before.Families[spec.name], d.after.Families[spec.name]
	switch {
	case fb == nil && fa == nil:
		if spec.optional {
			return receipts.Histogram{}, false
		}
		return d.unknownHist("%s absent from both readings", spec.name), true
	case fb == nil:
		return d.unknownHist("%s present only in the after reading", spec.name), true
	case fa == nil:
		return d.unknownHist("%s present only in the before reading", spec.name), true
	}
	sb, err := histSeries(fb)
	if err != nil {
		return d.unknownHist("before reading: %v", err), true
	}
	sa, err := histSeries(fa)
	if err != nil {
		return d.unknownHist("after reading: %v", err), true
	}
	agg, failed := d.histSum(spec.name, sb, sa)
	if failed != nil {
		return *failed, true
	}
	return d.histFigures(spec.name, agg), true
}

// unknownHist is a histogram left out, with the problem that says why.
func (d *differ) unknownHist(format string, args ...any) receipts.Histogram {
	msg := fmt.Sprintf(format, args...)
	d.problemf("%s", msg)
	return receipts.Histogram{Status: "unknown: " + msg}
}

// histSum is the window delta of every series of a histogram, summed; a
// series that cannot be differenced (present once, edges changed,
// recreated, counts backwards) leaves the whole histogram out: failed is
// then what the receipt holds for it.
func (d *differ) histSum(name string, sb, sa map[string]histPoint) (agg *histPoint, failed *receipts.Histogram) {
	fail := func(h receipts.Histogram) (*histPoint, *receipts.Histogram) { return nil, &h }
	createdB, createdA := createdSeries(d.before, name), createdSeries(d.after, name)
	for _, k := range unionKeys(sb, sa) {
		pb, inB := sb[k]
		pa, inA := sa[k]
		switch {
		case !inA:
			return fail(d.unknownHist("%s%s present only in the before reading", name, k))
		case !inB:
			return fail(d.unknownHist("%s%s present only in the after reading: its counts before the window are unknown", name, k))
		case !slices.Equal(pb.edges(), pa.edges()):
			return fail(d.unknownHist("%s%s bucket edges changed between readings (%s before, %s after)", name, k, edgeList(pb.edges()), edgeList(pa.edges())))
		}
		if !d.sameCreated(createdB, createdA, name, k) {
			return fail(receipts.Histogram{Status: "unknown: series recreated"})
		}
		delta, backwards := pa.minus(pb)
		if backwards {
			d.resetf("%s%s counts went backwards (count %s before, %s after): counters were reset", name, k, num(pb.count), num(pa.count))
			return fail(receipts.Histogram{Status: "unknown: counters reset"})
		}
		if agg == nil {
			agg = &delta
			continue
		}
		if !slices.Equal(agg.edges(), delta.edges()) {
			return fail(d.unknownHist("%s series have different bucket edges (%s and %s%s)", name, edgeList(agg.edges()), k, edgeList(delta.edges())))
		}
		agg.count += delta.count
		agg.sum += delta.sum
		for i := range agg.buckets {
			agg.buckets[i].cum += delta.buckets[i].cum
		}
	}
	if agg == nil {
		return fail(d.unknownHist("%s has no series", name))
	}
	return agg, nil
}

// minus is the change from b to a, series of the same edges; backwards
// when the count or any bucket fell (a reset counter).
func (a histPoint) minus(b histPoint) (delta histPoint, backwards bool) {
	delta = histPoint{count: a.count - b.count, sum: a.sum - b.sum, buckets: make([]bucket, len(a.buckets))}
	backwards = delta.count < 0
	for i := range a.buckets {
		delta.buckets[i] = bucket{upper: a.buckets[i].upper, cum: a.buckets[i].cum - b.buckets[i].cum}
		backwards = backwards || delta.buckets[i].cum < 0
	}
	return delta, backwards
}

// histFigures are the count, sum and quantiles of a summed window delta
// that adds up.
func (d *differ) histFigures(name string, agg *histPoint) receipts.Histogram {
	if err := agg.check(); err != nil {
		return d.unknownHist("%s window delta: %v", name, err)
	}
	h := receipts.Histogram{Status: StatusOK, Count: agg.count, Sum: agg.sum}
	if agg.count == 0 {
		h.Status = StatusEmpty
		return h
	}
	h.UpperBound = quantiles(agg.buckets, agg.count, upperBoundQuantile)
	h.Interpolated = quantiles(agg.buckets, agg.count, interpolatedQuantile)
	return h
}

// check refuses a delta whose buckets are not cumulative or do not add up to
// its count.
func (h histPoint) check() error {
	prev := 0.0
	for _, b := range h.buckets {
		if b.cum < prev {
			return fmt.Errorf("bucket le=%s holds %s, fewer than the bucket below (%s)", num(b.upper), num(b.cum), num(prev))
		}
		prev = b.cum
	}
	if n := len(h.buckets); n > 0 {
		last := h.buckets[n-1]
		if math.IsInf(last.upper, 1) && last.cum != h.count {
			return fmt.Errorf("bucket le=+Inf holds %s but count is %s", num(last.cum), num(h.count))
		}
		if last.cum > h.count {
			return fmt.Errorf("bucket le=%s holds %s, more than count %s", num(last.upper), num(last.cum), num(h.count))
		}
	}
	return nil
}

// histSeries returns a histogram family's series keyed by label set.
func histSeries(f *dto.MetricFamily) (map[string]histPoint, error) {
	if f.GetType() != dto.MetricType_HISTOGRAM {
		return nil, fmt.Errorf("%s is a %s, not a histogram", f.GetName(), strings.ToLower(f.GetType().String()))
	}
	out := map[string]histPoint{}
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		p := histPoint{labels: labelMap(m), sum: h.GetSampleSum()}
		p.count = float64(h.GetSampleCount())
		if h.SampleCountFloat != nil {
			p.count = h.GetSampleCountFloat()
		}
		for _, b := range h.GetBucket() {
			cum := float64(b.GetCumulativeCount())
			if b.CumulativeCountFloat != nil {
				cum = b.GetCumulativeCountFloat()
			}
			p.buckets = append(p.buckets, bucket{upper: b.GetUpperBound(), cum: cum})
		}
		slices.SortFunc(p.buckets, func(a, b bucket) int {
			switch {
			case a.upper < b.upper:
				return -1
			case a.upper > b.upper:
				return 1
			}
			return 0
		})
		k := labelKey(p.labels, "")
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s%s exposed twice", f.GetName(), k)
		}
		out[k] = p
	}
	return out, nil
}

func edgeList(edges []float64) string {
	parts := make([]string, len(edges))
	for i, e := range edges {
		parts[i] = num(e)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
