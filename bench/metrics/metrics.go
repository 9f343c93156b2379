// Package metrics turns a receipt's figures into Go benchmark metrics
// (b.ReportMetric) and prints the benchstat unit metadata that says which
// direction is better and which counts are exact, so `go tool benchstat`
// compares runs without being told anything else.
package metrics

import (
	"fmt"
	"io"

	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/receipts"
)

// Units reported by vetbench benchmarks. No spaces (ReportMetric panics on
// whitespace); "-sec" so benchstat scales them as times.
const (
	JudgmentsPerSec = "judgments/s"      // kept judgments ÷ wall time
	ImagesPerSec    = "images/s"         // images judged ÷ wall time
	P50Sec          = "p50-sec"          // client judgment latency, nearest rank
	P95Sec          = "p95-sec"          //
	P99Sec          = "p99-sec"          //
	PrefixHitRatio  = "prefix-hit-ratio" // Δhits/Δqueries of the local prefix cache (tokens)
	MMHitRatio      = "mm-hit-ratio"     // Δhits/Δqueries of the multimodal cache (items)
	QueueSec        = "queue-sec"        // mean server queue time per request
	Preemptions     = "preemptions"      // server preemptions in the window (a count)
	MovedItems      = "moved-items"      // confident verdict moves against the golden receipt
	OffFormat       = "off-format"       // answers whose sampled token was no candidate (a count)
	FailedItems     = "failed-items"     // judgments that failed in the window (a count)
	DiscardedItems  = "discarded-items"  // judgments that finished after a stop, counted nowhere (a count)
	// Open loop and SLO (reported only when the receipt has them).
	ClientQueueSec = "client-queue-sec" // mean wait in the client queue (arrival → first request)
	Goodput        = "goodput"          // share of finished judgments within the stated SLO latency
	GoodPerSec     = "good-judgments/s" // judgments within the SLO ÷ wall time
)

// Directions of benchstat's better= key.
const (
	Higher = "higher"
	Lower  = "lower"
)

// Unit is a custom unit and its benchstat metadata.
type Unit struct {
	Name   string
	Better string // Higher or Lower
	// Exact marks counts: benchstat then assumes no noise (assume=exact), so
	// any change is significant.
	Exact bool
}

// Line is the unit's metadata line, e.g. "Unit p95-sec better=lower".
func (u Unit) Line() string {
	s := fmt.Sprintf("Unit %s better=%s", u.Name, u.Better)
	if u.Exact {
		s += " assume=exact"
	}
	return s
}

// Units lists every unit vetbench reports, in report order.
func Units() []Unit {
	return []Unit{
		{Name: JudgmentsPerSec, Better: Higher},
		{Name: ImagesPerSec, Better: Higher},
		{Name: P50Sec, Better: Lower},
		{Name: P95Sec, Better: Lower},
		{Name: P99Sec, Better: Lower},
		{Name: PrefixHitRatio, Better: Higher},
		{Name: MMHitRatio, Better: Higher},
		{Name: QueueSec, Better: Lower},
		{Name: Preemptions, Better: Lower, Exact: true},
		{Name: MovedItems, Better: Lower, Exact: true},
		{Name: OffFormat, Better: Lower, Exact: true},
		{Name: FailedItems, Better: Lower, Exact: true},
		{Name: DiscardedItems, Better: Lower, Exact: true},
		{Name: ClientQueueSec, Better: Lower},
		{Name: Goodput, Better: Higher},
		{Name: GoodPerSec, Better: Higher},
	}
}

// WriteUnits prints one metadata line per unit. Print it once before the
// benchmark lines (TestMain, when -test.bench is set); benchfmt reads Unit
// lines anywhere in the stream.
func WriteUnits(w io.Writer) error {
	for _, u := range Units() {
		if _, err := fmt.Fprintln(w, u.Line()); err != nil {
			return err
		}
	}
	return nil
}

// Metric is one figure in one unit.
type Metric struct {
	Value float64
	Unit  string
}

// FromReceipt returns the receipt's figures as metrics. A figure the
// receipt does not have (no server scrape, no latencies, a null hit rate)
// is left out, never reported as 0: benchstat would read a 0 as a change.
// The failed and discarded counts are always known and always reported, 0
// included, so a line never looks healthy over failed work and the speed
// gate sees an outage as one (exact counts: any rise fails).
func FromReceipt(r *receipts.Receipt) []Metric {
	if r == nil {
		return nil
	}
	tp := r.Throughput
	out := []Metric{{float64(tp.Failed), FailedItems}, {float64(tp.Discarded), DiscardedItems}}
	if tp.WallSeconds > 0 {
		out = append(out, Metric{tp.JudgmentsPerSecond, JudgmentsPerSec}, Metric{tp.ImagesPerSecond, ImagesPerSec})
	}
	if tp.Latency.N > 0 {
		out = append(out, Metric{tp.Latency.P50, P50Sec}, Metric{tp.Latency.P95, P95Sec}, Metric{tp.Latency.P99, P99Sec})
	}
	if q := tp.ClientQueue; q != nil && q.N > 0 {
		out = append(out, Metric{q.Mean, ClientQueueSec})
	}
	if slo := tp.SLO; slo != nil && slo.Of > 0 {
		out = append(out, Metric{slo.Goodput, Goodput})
		if tp.WallSeconds > 0 {
			out = append(out, Metric{slo.GoodPerSecond, GoodPerSec})
		}
	}
	if o := r.OffFormat; o != nil {
		// A model that answers off-format more often after an upgrade has
		// regressed even when its verdicts hold.
		out = append(out, Metric{float64(o.Total), OffFormat})
	}
	srv := r.Server
	if srv == nil {
		return out
	}
	if srv.PrefixCacheHitRate != nil {
		out = append(out, Metric{*srv.PrefixCacheHitRate, PrefixHitRatio})
	}
	if srv.MMCacheHitRate != nil {
		out = append(out, Metric{*srv.MMCacheHitRate, MMHitRatio})
	}
	if q, ok := srv.Histograms[scrape.HistQueue]; ok && q.Status == scrape.StatusOK && q.Count > 0 {
		out = append(out, Metric{q.Sum / q.Count, QueueSec})
	}
	if p, ok := srv.Counters[scrape.Preemptions]; ok {
		out = append(out, Metric{p, Preemptions})
	}
	return out
}

// Assured are the units FromReceipt reports for every point that kept a
// judgment, whatever the server, among those the speed gate decides with
// a test (no exact counts): the rates and latency percentiles, and the
// client queue of an open loop and goodput under a stated SLO (openLoop,
// slo). The server's figures (prefix-hit-ratio, queue-sec…) are left out:
// they depend on what it exposes. A gate counts from them, before
// measuring, the least number of metrics it will test.
func Assured(openLoop, slo bool) []string {
	out := []string{JudgmentsPerSec, ImagesPerSec, P50Sec, P95Sec, P99Sec}
	if openLoop {
		out = append(out, ClientQueueSec)
	}
	if slo {
		out = append(out, Goodput, GoodPerSec)
	}
	return out
}

// Moved is the count of items whose verdict differs from the golden receipt.
func Moved(n int) Metric { return Metric{float64(n), MovedItems} }

// Reporter is what *testing.B offers.
type Reporter interface {
	ReportMetric(n float64, unit string)
}

// Report reports every metric on b; call it once, after the timed loop.
func Report(b Reporter, ms []Metric) {
	for _, m := range ms {
		b.ReportMetric(m.Value, m.Unit)
	}
}
