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
	unknown := func(format string, args ...any) (receipts.Histogram, bool) {
		msg := fmt.Sprintf(format, args...)
		d.problemf("%s", msg)
		return receipts.Histogram{Status: "unknown: " + msg}, true
	}
	fb, fa := d.before.Families[spec.name], d.after.Families[spec.name]
	switch {
	case fb == nil && fa == nil:
		if spec.optional {
			return receipts.Histogram{}, false
		}
		return unknown("%s absent from both readings", spec.name)
	case fb == nil:
		return unknown("%s present only in the after reading", spec.name)
	case fa == nil:
		return unknown("%s present only in the before reading", spec.name)
	}
	sb, err := histSeries(fb)
	if err != nil {
		return unknown("before reading: %v", err)
	}
	sa, err := histSeries(fa)
	if err != nil {
		return unknown("after reading: %v", err)
	}
	createdB, createdA := createdSeries(d.before, spec.name), createdSeries(d.after, spec.name)

	var agg *histPoint
	for _, k := range unionKeys(sb, sa) {
		pb, inB := sb[k]
		pa, inA := sa[k]
		switch {
		case !inA:
			return unknown("%s%s present only in the before reading", spec.name, k)
		case !inB:
			return unknown("%s%s present only in the after reading: its counts before the window are unknown", spec.name, k)
		case !slices.Equal(pb.edges(), pa.edges()):
			return unknown("%s%s bucket edges changed between readings (%s before, %s after)", spec.name, k, edgeList(pb.edges()), edgeList(pa.edges()))
		}
		if !d.sameCreated(createdB, createdA, spec.name, k) {
			return receipts.Histogram{Status: "unknown: series recreated"}, true
		}
		delta := histPoint{count: pa.count - pb.count, sum: pa.sum - pb.sum, buckets: make([]bucket, len(pa.buckets))}
		backwards := delta.count < 0
		for i := range pa.buckets {
			delta.buckets[i] = bucket{upper: pa.buckets[i].upper, cum: pa.buckets[i].cum - pb.buckets[i].cum}
			backwards = backwards || delta.buckets[i].cum < 0
		}
		if backwards {
			d.resetf("%s%s counts went backwards (count %s before, %s after): counters were reset", spec.name, k, num(pb.count), num(pa.count))
			return receipts.Histogram{Status: "unknown: counters reset"}, true
		}
		if agg == nil {
			agg = &delta
			continue
		}
		if !slices.Equal(agg.edges(), delta.edges()) {
			return unknown("%s series have different bucket edges (%s and %s%s)", spec.name, edgeList(agg.edges()), k, edgeList(delta.edges()))
		}
		agg.count += delta.count
		agg.sum += delta.sum
		for i := range agg.buckets {
			agg.buckets[i].cum += delta.buckets[i].cum
		}
	}
	if agg == nil {
		return unknown("%s has no series", spec.name)
	}
	if err := agg.check(); err != nil {
		return unknown("%s window delta: %v", spec.name, err)
	}
	h := receipts.Histogram{Status: StatusOK, Count: agg.count, Sum: agg.sum}
	if agg.count == 0 {
		h.Status = StatusEmpty
		return h, true
	}
	h.UpperBound = quantiles(agg.buckets, agg.count, upperBoundQuantile)
	h.Interpolated = quantiles(agg.buckets, agg.count, interpolatedQuantile)
	return h, true
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
