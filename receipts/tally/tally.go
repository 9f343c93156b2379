// Package tally is where every throughput figure of a receipt is computed:
// judgments/s, images/s, nearest-rank latency percentiles, the counts of the
// Throughput block and the server's cache hit ratios. The runner adds each
// finished judgment and closes once (as vegeta's Metrics do); merging -count
// passes and importing typevet receipts go through the same code, so a
// figure means the same thing wherever it appears.
package tally

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/slo"
)

// Judgment is one finished judgment as the figures count it.
type Judgment struct {
	// LatencySeconds is the service time (start of the first request →
	// end of the last); QueueSeconds an open loop's wait in the client
	// queue before it (arrival → start).
	LatencySeconds float64
	QueueSeconds   float64
	// LagSeconds is how late the client offered it against an open loop's
	// schedule.
	LagSeconds float64
	Images     int
	// Requests answered with HTTP 200 and the prompt tokens they report:
	// they reached the server whatever became of the judgment.
	Requests     int
	PromptTokens int
	// Failed judgments count in Failed (and by ErrorClass in
	// FailedByClass), Discarded ones (finished after a stop, failed or
	// not) in Discarded; neither counts in any other figure.
	Failed     bool
	ErrorClass string
	Discarded  bool
}

// Tally accumulates the judgments of one measured window. Set Concurrency
// and WallSeconds, Add every judgment, then Close once.
type Tally struct {
	Concurrency int
	// WallSeconds is the window's wall time, the denominator of the rates.
	WallSeconds float64
	// OpenLoop adds the client-queue and response-time percentiles.
	OpenLoop bool
	// SLOSeconds, when > 0, is the per-judgment latency target goodput is
	// counted against (response time: queue + service); GoodputTarget the
	// stated share that must be within it (0 = none stated).
	SLOSeconds    float64
	GoodputTarget float64

	t      receipts.Throughput
	lat    []float64
	queue  []float64 // in the same order as lat
	lag    []float64 // likewise
	closed bool
	out    receipts.Throughput
}

// Add counts one judgment. Adding after Close is a bug and panics.
func (t *Tally) Add(j Judgment) {
	t.mustOpen()
	t.t.Requests += j.Requests
	t.t.PromptTokens += j.PromptTokens
	switch {
	case j.Discarded:
		t.t.Discarded++
	case j.Failed:
		t.t.Failed++
		t.failedBy(j.ErrorClass, 1)
	default:
		t.t.Judgments++
		t.t.Images += j.Images
		t.lat = append(t.lat, j.LatencySeconds)
		t.queue = append(t.queue, j.QueueSeconds)
		t.lag = append(t.lag, j.LagSeconds)
	}
}

// AddPass adds a window that was tallied already (one pass of -count): its
// counts and wall time add up, and the latencies of its kept items (neither
// failed nor discarded) join the percentiles.
func (t *Tally) AddPass(tp receipts.Throughput, items []receipts.Item) {
	t.mustOpen()
	t.WallSeconds += tp.WallSeconds
	t.t.Judgments += tp.Judgments
	t.t.Images += tp.Images
	t.t.Requests += tp.Requests
	t.t.Failed += tp.Failed
	for c, n := range tp.FailedByClass {
		t.failedBy(c, n)
	}
	t.t.Discarded += tp.Discarded
	t.t.PromptTokens += tp.PromptTokens
	for _, it := range items {
		if it.Error == "" && !it.Discarded {
			t.lat = append(t.lat, it.LatencySeconds)
			t.queue = append(t.queue, it.QueueSeconds)
			t.lag = append(t.lag, it.ArrivalLagSeconds)
		}
	}
}

// failedBy counts n failures of class c ("other" when unnamed).
func (t *Tally) failedBy(c string, n int) {
	if c == "" {
		c = "other"
	}
	if t.t.FailedByClass == nil {
		t.t.FailedByClass = map[string]int{}
	}
	t.t.FailedByClass[c] += n
}

// FailedShare is the share of a window's finished judgments (kept and
// failed; discarded ones are a stop's, not the server's) that failed: 0
// when none finished.
func FailedShare(tp receipts.Throughput) float64 {
	if n := tp.Judgments + tp.Failed; n > 0 {
		return float64(tp.Failed) / float64(n)
	}
	return 0
}

// FailureClasses lists a window's failures by class, most frequent first,
// for a line or a table cell: "136 http_500, 2 timeout"; "" when none.
func FailureClasses(tp receipts.Throughput) string {
	classes := slices.Collect(maps.Keys(tp.FailedByClass))
	slices.SortFunc(classes, func(a, b string) int {
		if c := cmp.Compare(tp.FailedByClass[b], tp.FailedByClass[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	parts := make([]string, len(classes))
	for i, c := range classes {
		parts[i] = fmt.Sprintf("%d %s", tp.FailedByClass[c], c)
	}
	return strings.Join(parts, ", ")
}

func (t *Tally) mustOpen() {
	if t.closed {
		panic("tally: Add after Close")
	}
}

// Close computes the figures. Later calls return the same block.
func (t *Tally) Close() receipts.Throughput {
	if t.closed {
		return t.out
	}
	t.closed = true
	out := t.t
	out.Concurrency = t.Concurrency
	out.WallSeconds = t.WallSeconds
	out.Latency = LatencyOf(t.lat)
	if w := t.WallSeconds; w > 0 {
		out.JudgmentsPerSecond = float64(out.Judgments) / w
		out.ImagesPerSecond = float64(out.Images) / w
	}
	response := t.lat
	if t.OpenLoop {
		response = make([]float64, len(t.lat))
		for i, l := range t.lat {
			response[i] = t.queue[i] + l
		}
		q, r, l := LatencyOf(t.queue), LatencyOf(response), LatencyOf(t.lag)
		out.ClientQueue, out.Response, out.ArrivalLag = &q, &r, &l
	}
	if t.SLOSeconds > 0 {
		out.SLO = t.goodput(response, out)
	}
	t.out = out
	return out
}

// slo counts the judgments whose response time is within the target: the
// figure `vllm bench serve --goodput e2el:…` reports, over judgments.
func (t *Tally) goodput(response []float64, tp receipts.Throughput) *receipts.SLO {
	s := &receipts.SLO{LatencySeconds: t.SLOSeconds, Of: tp.Judgments + tp.Failed, Target: t.GoodputTarget}
	for _, r := range response {
		if r <= t.SLOSeconds {
			s.Within++
		}
	}
	if s.Of > 0 {
		s.Goodput = float64(s.Within) / float64(s.Of)
	}
	if t.WallSeconds > 0 {
		s.GoodPerSecond = float64(s.Within) / t.WallSeconds
	}
	if t.GoodputTarget > 0 {
		met := slo.Met(s.Goodput, t.GoodputTarget, s.Of)
		s.Met = &met
	}
	return s
}

// LatencyOf summarises latencies in seconds: their mean and nearest-rank
// percentiles.
func LatencyOf(secs []float64) receipts.Latency {
	s := slices.Clone(secs)
	slices.Sort(s)
	l := receipts.Latency{N: len(s)}
	if len(s) == 0 {
		return l
	}
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	l.Mean = sum / float64(len(s))
	l.P50, l.P95, l.P99 = nearestRank(s, 0.50), nearestRank(s, 0.95), nearestRank(s, 0.99)
	return l
}

// nearestRank is the q-th percentile of sorted values by typevet's rule:
// index ceil(q·n)−1, floored at 0. sorted is not empty.
func nearestRank(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Keys of receipts.Server.Counters that the server block's hit rates are
// ratios of (typevet's keys, so imported and native receipts compare).
const (
	PrefixCacheQueries = "prefix_cache_queries" // tokens looked up in the local prefix cache
	PrefixCacheHits    = "prefix_cache_hits"    // tokens found there
	MMCacheQueries     = "mm_cache_queries"     // multimodal items looked up
	MMCacheHits        = "mm_cache_hits"        // multimodal items found
)

// HitRatio is c[hits] ÷ c[queries]: nil when either is missing or there
// were no queries. More hits than queries is an error, never clipped.
func HitRatio(c map[string]float64, hits, queries string) (*float64, error) {
	h, okH := c[hits]
	q, okQ := c[queries]
	if !okH || !okQ || !(q > 0) {
		return nil, nil
	}
	if h > q {
		return nil, fmt.Errorf("%g hits exceed %g queries", h, q)
	}
	r := h / q
	return &r, nil
}

// HitRates sets the server block's prefix and multimodal hit rates from its
// counters; a ratio that cannot be trusted is left nil and said in the
// returned problems.
func HitRates(srv *receipts.Server) (problems []string) {
	for _, r := range []struct {
		what          string
		dst           **float64
		hits, queries string
	}{
		{"prefix cache", &srv.PrefixCacheHitRate, PrefixCacheHits, PrefixCacheQueries},
		{"mm cache", &srv.MMCacheHitRate, MMCacheHits, MMCacheQueries},
	} {
		v, err := HitRatio(srv.Counters, r.hits, r.queries)
		if err != nil {
			problems = append(problems, r.what+": "+err.Error())
		}
		*r.dst = v
	}
	return problems
}
