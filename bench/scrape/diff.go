package scrape

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/tally"
)

// Diff turns two readings into the window's figures. It never fails: what it
// cannot compute is left out and said in Status and Problems.
//
//   - Status "ok": every figure was computed.
//   - Status "partial: …": some figures are missing (a series absent, bucket
//     edges changed, …); each one is named in Problems, the rest stand.
//   - Status "unknown: …": no deltas at all — a reading failed, or the
//     server restarted or reset its counters inside the window (a counter
//     went backwards, a <name>_created stamp or the process start time
//     changed), so no delta can be trusted. Gauges, being point readings,
//     are kept.
//
// Counters and histograms are summed over every label (model_name, engine,
// finished_reason, …); <name>_created samples are creation timestamps and are
// only compared, never summed. Hit rates are Δhits/Δqueries, nil when there
// were no queries.
func Diff(before, after Snapshot) receipts.Server {
	if srv, ok := unreadable(before, after); ok {
		return srv
	}
	d := &differ{before: before, after: after}
	srv := receipts.Server{Gauges: d.gauges()}
	d.checkRestart()

	// The figures are read in this order so that Problems keep it.
	counters, success, queries, hits := d.counters()
	extra := d.extra(success)
	histograms := d.histograms()

	d.dropNonFinite(&srv)
	srv.Problems = d.problems
	if len(d.restart) > 0 {
		srv.Status = "unknown: server restarted or counters reset during the window"
		return srv
	}
	srv.Counters = counters
	srv.Histograms = histograms
	if len(extra) > 0 {
		srv.Extra = extra
	}
	srv.Engines = engineFigures(success, queries, hits)
	d.dropNonFinite(&srv) // before the hit rates, which read the counters
	d.problems = append(d.problems, tally.HitRates(&srv)...)
	srv.Problems = d.problems
	srv.Status = StatusOK
	if n := len(d.problems); n > 0 {
		srv.Status = fmt.Sprintf("partial: %d problem(s), see problems", n)
	}
	return srv
}

// unreadable is the receipt of a window with no deltas at all, because a
// reading failed or is not a vLLM page; ok false when both are usable.
func unreadable(before, after Snapshot) (receipts.Server, bool) {
	var why []string
	if before.Err != nil {
		why = append(why, "before reading: "+before.Err.Error())
	} else if before.Families == nil {
		why = append(why, "before reading: not taken")
	}
	if after.Err != nil {
		why = append(why, "after reading: "+after.Err.Error())
	} else if after.Families == nil {
		why = append(why, "after reading: not taken")
	}
	if len(why) > 0 {
		return receipts.Server{Status: "unknown: scrape failed: " + strings.Join(why, "; "), Problems: why}, true
	}
	for _, s := range []struct {
		which string
		snap  Snapshot
	}{{"before", before}, {"after", after}} {
		if !hasVLLM(s.snap) {
			why = append(why, fmt.Sprintf("%s reading (%s) has no vllm: metrics", s.which, s.snap.URL))
		}
	}
	if len(why) > 0 {
		return receipts.Server{Status: "unknown: not a vLLM /metrics page: " + strings.Join(why, "; "), Problems: why}, true
	}
	return receipts.Server{}, false
}

// counters are the summed deltas of the vLLM counters, and the per-series
// deltas of the three that the per-engine figures split by label.
func (d *differ) counters() (counters map[string]float64, success, queries, hits []seriesDelta) {
	counters = map[string]float64{}
	for _, spec := range counterSpecs() {
		deltas, ok := d.counter(spec)
		if !ok {
			continue
		}
		counters[spec.key] = sum(deltas)
		switch spec.key {
		case RequestSuccess:
			success = deltas
		case PrefixCacheQueries:
			queries = deltas
		case PrefixCacheHits:
			hits = deltas
		}
	}
	return counters, success, queries, hits
}

// extra are the figures outside the fixed counter set: the external
// prefix cache (and its hit rate), requests by finished_reason and a
// twin's report of its clock.
func (d *differ) extra(success []seriesDelta) map[string]float64 {
	extra := map[string]float64{}
	for _, spec := range extraSpecs() {
		if deltas, ok := d.counter(spec); ok {
			extra[spec.key] = sum(deltas)
		}
	}
	for reason, v := range groupBy(success, "finished_reason") {
		if reason != "" {
			extra[ExtraRequestSuccessPrefix+reason] = v
		}
	}
	if rate := d.hitRate(extra, ExtraExternalHits, ExtraExternalQueries, "external prefix cache"); rate != nil {
		extra[ExtraExternalHitRate] = *rate
	}
	return extra
}

// histograms are the window's histogram deltas, by key.
func (d *differ) histograms() map[string]receipts.Histogram {
	histograms := map[string]receipts.Histogram{}
	for _, spec := range histogramSpecs() {
		if h, ok := d.histogram(spec); ok {
			histograms[spec.key] = h
		}
	}
	return histograms
}

type differ struct {
	before, after Snapshot
	problems      []string
	// restart holds evidence that the server restarted or reset counters.
	restart []string
}

func (d *differ) problemf(format string, args ...any) {
	d.problems = append(d.problems, fmt.Sprintf(format, args...))
}

func (d *differ) resetf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	d.problems = append(d.problems, s)
	d.restart = append(d.restart, s)
}

// checkRestart compares what identifies the server process: its start time
// and the model it serves.
func (d *differ) checkRestart() {
	b, errB := gaugeValues(d.before, processStartTimeGauge)
	a, errA := gaugeValues(d.after, processStartTimeGauge)
	if errB == nil && errA == nil && len(b) == 1 && len(a) == 1 {
		for k := range a {
			if bv, ok := b[k]; ok && bv.value != a[k].value {
				d.resetf("%s changed from %s to %s: the server restarted", processStartTimeGauge, num(bv.value), num(a[k].value))
			}
		}
	}
	mb, ma := ModelNames(d.before), ModelNames(d.after)
	if !slices.Equal(mb, ma) {
		d.resetf("model_name labels changed from %q to %q: a different server or model answered", mb, ma)
	}
}

// dropNonFinite removes every figure a receipt cannot hold: NaN or an
// infinity (a sample exposed as +Inf, a delta that overflows) and a
// histogram with a negative count or sum, each with a problem, so the
// window's receipt is still written and says what is missing.
func (d *differ) dropNonFinite(srv *receipts.Server) {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	for _, m := range []map[string]float64{srv.Counters, srv.Extra} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if bad(m[k]) {
				d.problemf("%s: delta %s is not a finite number", k, num(m[k]))
				delete(m, k)
			}
		}
	}
	for _, e := range slices.Sorted(maps.Keys(srv.Engines)) {
		info := srv.Engines[e]
		for _, f := range []struct {
			name string
			v    float64
		}{{"request_success", info.RequestSuccess}, {"prefix_cache_queries", info.PrefixCacheQueries}, {"prefix_cache_hits", info.PrefixCacheHits}} {
			if bad(f.v) {
				d.problemf("engine %s: %s delta %s is not a finite number", e, f.name, num(f.v))
				delete(srv.Engines, e)
				break
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(srv.Gauges)) {
		g := srv.Gauges[k]
		for _, p := range []**float64{&g.Before, &g.After} {
			if *p != nil && bad(**p) {
				d.problemf("gauge %s: %s is not a finite number", k, num(**p))
				*p = nil
			}
		}
		srv.Gauges[k] = g
	}
	for _, k := range slices.Sorted(maps.Keys(srv.Histograms)) {
		h := srv.Histograms[k]
		if bad(h.Count) || h.Count < 0 || bad(h.Sum) || h.Sum < 0 {
			msg := fmt.Sprintf("%s: count %s and sum %s are not finite numbers >= 0", k, num(h.Count), num(h.Sum))
			d.problemf("%s", msg)
			srv.Histograms[k] = receipts.Histogram{Status: "unknown: " + msg}
			continue
		}
		for _, q := range []*receipts.Quantiles{h.UpperBound, h.Interpolated} {
			if q == nil {
				continue
			}
			for _, p := range []**float64{&q.P50, &q.P95, &q.P99} {
				if *p != nil && bad(**p) {
					*p = nil
				}
			}
		}
	}
	for _, r := range []**float64{&srv.PrefixCacheHitRate, &srv.MMCacheHitRate} {
		if *r != nil && bad(**r) {
			*r = nil
		}
	}
}

// seriesDelta is one series' change over the window.
type seriesDelta struct {
	labels map[string]string
	delta  float64
}

func sum(ds []seriesDelta) float64 {
	var t float64
	for _, d := range ds {
		t += d.delta
	}
	return t
}

func groupBy(ds []seriesDelta, label string) map[string]float64 {
	out := map[string]float64{}
	for _, d := range ds {
		out[d.labels[label]] += d.delta
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// counter returns the per-series deltas of one counter, or false with the
// reason recorded.
func (d *differ) counter(spec counterSpec) ([]seriesDelta, bool) {
	fb, nameB, errB := findCounter(d.before, spec.name)
	fa, nameA, errA := findCounter(d.after, spec.name)
	for _, err := range []error{errB, errA} {
		if err != nil {
			d.problemf("%v", err)
			return nil, false
		}
	}
	switch {
	case fb == nil && fa == nil:
		if !spec.optional {
			d.problemf("%s_total absent from both readings", spec.name)
		}
		return nil, false
	case fb == nil:
		d.problemf("%s present only in the after reading", nameA)
		return nil, false
	case fa == nil:
		d.problemf("%s present only in the before reading", nameB)
		return nil, false
	}
	sb, errB := scalarSeries(fb)
	sa, errA := scalarSeries(fa)
	for _, err := range []error{errB, errA} {
		if err != nil {
			d.problemf("%s: %v", nameA, err)
			return nil, false
		}
	}
	createdB, createdA := createdSeries(d.before, spec.name), createdSeries(d.after, spec.name)
	ok := true
	var out []seriesDelta
	for _, k := range unionKeys(sb, sa) {
		pb, inB := sb[k]
		pa, inA := sa[k]
		switch {
		case !inA:
			d.problemf("%s%s present only in the before reading", nameB, k)
			ok = false
			continue
		case !inB:
			d.problemf("%s%s present only in the after reading: its value before the window is unknown", nameA, k)
			ok = false
			continue
		case math.IsNaN(pb.value) || math.IsNaN(pa.value):
			d.problemf("%s%s is NaN", nameA, k)
			ok = false
			continue
		case pa.value < pb.value:
			d.resetf("%s%s went backwards (%s before, %s after): counters were reset", nameA, k, num(pb.value), num(pa.value))
			ok = false
			continue
		}
		if !d.sameCreated(createdB, createdA, spec.name, k) {
			ok = false
			continue
		}
		out = append(out, seriesDelta{labels: pa.labels, delta: pa.value - pb.value})
	}
	return out, ok
}

// sameCreated checks a series' <name>_created stamp; a changed (or
// appeared/vanished) stamp means the series was recreated, so its delta
// would mix two lives.
func (d *differ) sameCreated(b, a map[string]point, name, key string) bool {
	cb, inB := b[key]
	ca, inA := a[key]
	switch {
	case !inB && !inA:
		return true
	case inB != inA:
		d.resetf("%s_created%s present in only one reading: the series was recreated", name, key)
		return false
	case cb.value != ca.value:
		d.resetf("%s_created%s changed (%s before, %s after): the series was recreated", name, key, num(cb.value), num(ca.value))
		return false
	}
	return true
}

// findCounter looks a counter up under its exposed name <name>_total, or the
// bare name when that is typed counter (a stub or an OpenMetrics-minded
// exporter). Both at once is ambiguous. A family of another type under the
// _total name is refused: that is how a _created gauge or an unrelated
// histogram would be summed into a count.
func findCounter(s Snapshot, name string) (*dto.MetricFamily, string, error) {
	total := s.Families[name+"_total"]
	bare := s.Families[name]
	if bare != nil && bare.GetType() != dto.MetricType_COUNTER {
		bare = nil
	}
	switch {
	case total != nil && bare != nil:
		return nil, "", fmt.Errorf("both %s_total and %s are exposed as counters: ambiguous", name, name)
	case total != nil:
		if t := total.GetType(); t != dto.MetricType_COUNTER && t != dto.MetricType_UNTYPED {
			return nil, "", fmt.Errorf("%s_total is a %s, not a counter", name, strings.ToLower(t.String()))
		}
		return total, name + "_total", nil
	case bare != nil:
		return bare, name, nil
	}
	return nil, "", nil
}

func createdSeries(s Snapshot, name string) map[string]point {
	f := s.Families[name+"_created"]
	if f == nil {
		return nil
	}
	pts, err := scalarSeries(f)
	if err != nil {
		return nil
	}
	return pts
}

// point is one scalar sample.
type point struct {
	labels map[string]string
	value  float64
}

// scalarSeries returns a counter, gauge or untyped family's samples keyed by
// their label set.
func scalarSeries(f *dto.MetricFamily) (map[string]point, error) {
	out := map[string]point{}
	for _, m := range f.GetMetric() {
		var v float64
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			v = m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			v = m.GetGauge().GetValue()
		case dto.MetricType_UNTYPED:
			v = m.GetUntyped().GetValue()
		default:
			return nil, fmt.Errorf("%s is a %s, not a scalar", f.GetName(), strings.ToLower(f.GetType().String()))
		}
		lb := labelMap(m)
		k := labelKey(lb, "")
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s%s exposed twice", f.GetName(), k)
		}
		out[k] = point{labels: lb, value: v}
	}
	return out, nil
}

func labelMap(m *dto.Metric) map[string]string {
	lb := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		lb[l.GetName()] = l.GetValue()
	}
	return lb
}

// labelKey renders a label set as {a="x",b="y"}, sorted, leaving out skip.
func labelKey(lb map[string]string, skip string) string {
	// Hot: every series of both readings passes here (and every input of
	// FuzzDiff), so no fmt and one buffer.
	var stack [8]string
	keys := stack[:0]
	for k := range lb {
		if k != skip {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	b := make([]byte, 0, 64)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, k...)
		b = append(b, '=')
		b = strconv.AppendQuote(b, lb[k])
	}
	b = append(b, '}')
	return string(b)
}

func unionKeys[V any](a, b map[string]V) []string {
	set := map[string]struct{}{}
	for k := range a {
		set[k] = struct{}{}
	}
	for k := range b {
		set[k] = struct{}{}
	}
	return slices.Sorted(maps.Keys(set))
}

// hitRate is Δhits/Δqueries from m (tally.HitRatio); hits above queries is
// recorded as a problem, not clipped.
func (d *differ) hitRate(m map[string]float64, hitsKey, queriesKey, what string) *float64 {
	r, err := tally.HitRatio(m, hitsKey, queriesKey)
	if err != nil {
		d.problemf("%s: %v", what, err)
	}
	return r
}

// gauges reads each gauge in both readings.
func (d *differ) gauges() map[string]receipts.GaugePair {
	out := map[string]receipts.GaugePair{}
	for _, spec := range gaugeSpecs() {
		var pair receipts.GaugePair
		for _, r := range []struct {
			which string
			snap  Snapshot
			dst   **float64
		}{{"before", d.before, &pair.Before}, {"after", d.after, &pair.After}} {
			pts, err := gaugeValues(r.snap, spec.name)
			switch {
			case err != nil:
				d.problemf("%s reading: %v", r.which, err)
			case pts == nil:
				d.problemf("%s absent from the %s reading", spec.name, r.which)
			case len(pts) > 0:
				v := math.Inf(-1)
				if !spec.max {
					v = 0
				}
				for _, p := range pts {
					if spec.max {
						v = max(v, p.value)
					} else {
						v += p.value
					}
				}
				*r.dst = ptr(v)
			}
		}
		out[spec.key] = pair
	}
	return out
}

// gaugeValues returns a gauge's series; nil, nil when the family is absent.
func gaugeValues(s Snapshot, name string) (map[string]point, error) {
	f := s.Families[name]
	if f == nil {
		return nil, nil
	}
	if t := f.GetType(); t != dto.MetricType_GAUGE && t != dto.MetricType_UNTYPED {
		return nil, fmt.Errorf("%s is a %s, not a gauge", name, strings.ToLower(t.String()))
	}
	return scalarSeries(f)
}

func hasVLLM(s Snapshot) bool {
	for name := range s.Families {
		if strings.HasPrefix(name, "vllm:") {
			return true
		}
	}
	return false
}

// ModelNames returns the distinct model_name label values on vllm: series,
// sorted: the model the server says it was measuring.
func ModelNames(s Snapshot) []string {
	set := map[string]struct{}{}
	for name, f := range s.Families {
		if !strings.HasPrefix(name, "vllm:") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "model_name" {
					set[l.GetValue()] = struct{}{}
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// num formats a sample value the way an exposition would show it.
func num(v float64) string { return fmt.Sprintf("%g", v) }

// engineFigures splits the window's figures by data-parallel engine, when
// there are several: each engine has its own prefix cache, so its hit rate
// is its own hits over its own queries (tally.HitRatio), and the overall
// rate is the engines' summed hits over their summed queries.
func engineFigures(success, queries, hits []seriesDelta) map[string]receipts.EngineInfo {
	reqs, q, h := groupBy(success, "engine"), groupBy(queries, "engine"), groupBy(hits, "engine")
	names := map[string]bool{}
	for _, m := range []map[string]float64{reqs, q, h} {
		for e := range m {
			names[e] = true
		}
	}
	if len(names) < 2 {
		return nil
	}
	out := map[string]receipts.EngineInfo{}
	for e := range names {
		info := receipts.EngineInfo{RequestSuccess: reqs[e], PrefixCacheQueries: q[e], PrefixCacheHits: h[e]}
		info.PrefixCacheHitRate, _ = tally.HitRatio(map[string]float64{"h": h[e], "q": q[e]}, "h", "q")
		out[e] = info
	}
	return out
}
