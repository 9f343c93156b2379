package tally

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

// typevet's rule, index ceil(q·n)−1, checked by hand on 1..10 and small n.
func TestLatencyOf(t *testing.T) {
	for _, tt := range []struct {
		name          string
		secs          []float64
		p50, p95, p99 float64
		mean          float64
	}{
		{"1..10", []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 5, 10, 10, 5.5},
		{"three", []float64{3, 1, 2}, 2, 3, 3, 2},
		{"one", []float64{0.25}, 0.25, 0.25, 0.25, 0.25},
		// n = 20: p95 is index ceil(19)−1 = 18, the 19th value, not the max.
		{"twenty", seq(20), 10, 19, 20, 10.5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.secs...)
			l := LatencyOf(tt.secs)
			require.Equal(t, receipts.Latency{N: len(tt.secs), Mean: tt.mean, P50: tt.p50, P95: tt.p95, P99: tt.p99}, l)
			require.Equal(t, in, tt.secs, "the input is not sorted in place")
		})
	}
	require.Equal(t, receipts.Latency{}, LatencyOf(nil))
}

func seq(n int) []float64 {
	var s []float64
	for i := n; i >= 1; i-- {
		s = append(s, float64(i))
	}
	return s
}

func TestTally(t *testing.T) {
	tl := Tally{Concurrency: 4, WallSeconds: 2}
	for i := range 6 {
		tl.Add(Judgment{LatencySeconds: float64(i + 1), Images: 2, Requests: 3, PromptTokens: 100})
	}
	// A failed judgment's answered requests reached the server; its
	// latency and images count nowhere.
	// Failures are counted by class; a discarded one that failed is a
	// discard (the stop's), not a failure of the window.
	tl.Add(Judgment{LatencySeconds: 99, Images: 2, Requests: 1, PromptTokens: 30, Failed: true, ErrorClass: "http_500"})
	tl.Add(Judgment{LatencySeconds: 99, Images: 2, Failed: true})
	tl.Add(Judgment{LatencySeconds: 99, Images: 2, Requests: 3, PromptTokens: 100, Discarded: true})
	tl.Add(Judgment{LatencySeconds: 99, Images: 2, Discarded: true, Failed: true, ErrorClass: "timeout"})
	got := tl.Close()
	require.Equal(t, receipts.Throughput{
		Concurrency: 4, WallSeconds: 2, Judgments: 6, Images: 12, Requests: 22, Failed: 2, Discarded: 2,
		FailedByClass:      map[string]int{"http_500": 1, "other": 1},
		JudgmentsPerSecond: 3, ImagesPerSecond: 6, PromptTokens: 730,
		Latency: receipts.Latency{N: 6, Mean: 3.5, P50: 3, P95: 6, P99: 6},
	}, got)
	require.Equal(t, got, tl.Close(), "Close twice gives the same figures")
	require.PanicsWithValue(t, "tally: Add after Close", func() { tl.Add(Judgment{}) })

	require.InDelta(t, 2.0/8, FailedShare(got), 1e-12)
	require.Equal(t, "1 http_500, 1 other", FailureClasses(got))
	require.Equal(t, "3 timeout, 1 http_500", FailureClasses(receipts.Throughput{FailedByClass: map[string]int{"http_500": 1, "timeout": 3}}))
	require.Empty(t, FailureClasses(receipts.Throughput{}))

	// No wall time: counts, but no rates (never a division by zero).
	empty := Tally{Concurrency: 1}
	require.Equal(t, receipts.Throughput{Concurrency: 1}, empty.Close())
	require.Zero(t, FailedShare(empty.Close()))
}

func TestHitRatio(t *testing.T) {
	c := map[string]float64{"h": 3, "q": 4, "zero": 0, "big": 5}
	for _, tt := range []struct {
		hits, queries string
		want          any // nil or float64
		err           string
	}{
		{"h", "q", 0.75, ""},
		{"missing", "q", nil, ""},
		{"h", "missing", nil, ""},
		{"h", "zero", nil, ""},
		{"big", "q", nil, "5 hits exceed 4 queries"},
	} {
		t.Run(tt.hits+"/"+tt.queries, func(t *testing.T) {
			got, err := HitRatio(c, tt.hits, tt.queries)
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
			} else {
				require.NoError(t, err)
			}
			if tt.want == nil {
				require.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			require.Equal(t, tt.want, *got)
		})
	}
	srv := &receipts.Server{Counters: map[string]float64{PrefixCacheHits: 9, PrefixCacheQueries: 3, MMCacheHits: 1, MMCacheQueries: 4}}
	problems := HitRates(srv)
	require.Equal(t, []string{"prefix cache: 9 hits exceed 3 queries"}, problems)
	require.Nil(t, srv.PrefixCacheHitRate)
	require.Equal(t, 0.25, *srv.MMCacheHitRate)
}

func pass(wall float64, judgments int, lat []float64, hits, queries float64) *receipts.Receipt {
	r := &receipts.Receipt{Throughput: receipts.Throughput{Concurrency: 4, WallSeconds: wall, Judgments: judgments, Images: judgments,
		Failed: 1, FailedByClass: map[string]int{"http_500": 1}, Discarded: 1}}
	for _, l := range lat {
		r.Items = append(r.Items, receipts.Item{LatencySeconds: l})
	}
	r.Items = append(r.Items, receipts.Item{LatencySeconds: 99, Error: "failed"}, receipts.Item{LatencySeconds: 99, Discarded: true})
	r.Server = &receipts.Server{Status: "ok", Counters: map[string]float64{
		PrefixCacheHits: hits, PrefixCacheQueries: queries, MMCacheHits: 1, MMCacheQueries: 2,
	}, Histograms: map[string]receipts.Histogram{"queue": {Status: "ok", Count: 10, Sum: 1}}}
	return r
}

// Passes pool: rates are sums over sums (not means of rates), percentiles
// come from every kept latency, failed and discarded items count nowhere.
func TestMerge(t *testing.T) {
	a := pass(1, 10, []float64{1, 2, 3}, 10, 100)
	b := pass(3, 20, []float64{4, 5, 6, 7}, 90, 100)
	m := Merge([]*receipts.Receipt{a, b})
	require.Equal(t, 30, m.Throughput.Judgments)
	require.InDelta(t, 30.0/4, m.Throughput.JudgmentsPerSecond, 1e-12)
	require.Equal(t, 7, m.Throughput.Latency.N)
	require.Equal(t, 4.0, m.Throughput.Latency.P50)
	require.Equal(t, 7.0, m.Throughput.Latency.P99)
	require.InDelta(t, 100.0/200, *m.Server.PrefixCacheHitRate, 1e-12)
	require.InDelta(t, 0.5, *m.Server.MMCacheHitRate, 1e-12)
	require.Equal(t, 20.0, m.Server.Histograms["queue"].Count)
	require.Equal(t, 2, m.Throughput.Failed)
	require.Equal(t, 2, m.Throughput.Discarded)
	require.Equal(t, map[string]int{"http_500": 2}, m.Throughput.FailedByClass)
	require.Equal(t, map[string]int{"http_500": 1}, a.Throughput.FailedByClass, "the inputs are untouched")
	// The inputs are untouched.
	require.Equal(t, 10.0, a.Server.Counters[PrefixCacheHits])
	require.Equal(t, 10.0, a.Server.Histograms["queue"].Count)

	// A pass without a figure leaves the pooled figure unknown, not partial.
	delete(b.Server.Counters, PrefixCacheHits)
	m = Merge([]*receipts.Receipt{a, b})
	require.Nil(t, m.Server.PrefixCacheHitRate)
	require.Nil(t, Merge(nil))
}

func ExampleTally() {
	t := Tally{Concurrency: 2, WallSeconds: 1.5}
	for _, s := range []float64{0.5, 0.7, 0.6} {
		t.Add(Judgment{LatencySeconds: s, Images: 2, Requests: 3})
	}
	tp := t.Close()
	fmt.Printf("%.0f judgments/s, %.0f images/s, p50 %.1fs, p95 %.1fs\n",
		tp.JudgmentsPerSecond, tp.ImagesPerSecond, tp.Latency.P50, tp.Latency.P95)
	// Output: 2 judgments/s, 4 images/s, p50 0.6s, p95 0.7s
}

// Goodput counts kept judgments whose response time (client queue and
// service) is within the target, over every finished judgment: a failed
// one is never good, a discarded one is not counted. Merging passes
// recomputes it from the items, as every other figure.
func TestGoodput(t *testing.T) {
	tl := Tally{Concurrency: 2, WallSeconds: 4, OpenLoop: true, SLOSeconds: 1, GoodputTarget: 0.5}
	for _, j := range []Judgment{
		{LatencySeconds: 0.5}, // good
		{LatencySeconds: 0.5, QueueSeconds: 0.6, LagSeconds: 0.002}, // 1.1 s from arrival: late
		{LatencySeconds: 0.9, QueueSeconds: 0.1},                    // exactly 1 s: good
		{LatencySeconds: 0.1, Failed: true},                         // failed: counted, never good
		{LatencySeconds: 0.1, Discarded: true},                      // a stop's: not counted
	} {
		tl.Add(j)
	}
	tp := tl.Close()
	met := true
	require.Equal(t, &receipts.SLO{LatencySeconds: 1, Within: 2, Of: 4, Goodput: 0.5, GoodPerSecond: 0.5, Target: 0.5, Met: &met}, tp.SLO)
	require.Equal(t, 3, tp.ClientQueue.N)
	require.InDelta(t, 0.6, tp.ClientQueue.P99, 1e-12)
	require.InDelta(t, 1.1, tp.Response.P99, 1e-12)
	require.InDelta(t, 0.9, tp.Latency.P99, 1e-12, "service time, queue excluded")
	require.InDelta(t, 0.002, tp.ArrivalLag.P99, 1e-12, "the client was late once")

	items := []receipts.Item{{LatencySeconds: 0.5}, {LatencySeconds: 0.5, QueueSeconds: 0.6}, {LatencySeconds: 0.9, QueueSeconds: 0.1}, {LatencySeconds: 0.1, Error: "x"}}
	r := &receipts.Receipt{Throughput: tp, Items: items}
	m := Merge([]*receipts.Receipt{r, r})
	require.Equal(t, 4, m.Throughput.SLO.Within)
	require.Equal(t, 8, m.Throughput.SLO.Of)
	require.InDelta(t, 0.5, m.Throughput.SLO.GoodPerSecond, 1e-12)
	require.NotNil(t, m.Throughput.ClientQueue)

	// A closed loop without an SLO has neither block.
	closed := Tally{Concurrency: 1, WallSeconds: 1}
	closed.Add(Judgment{LatencySeconds: 0.2})
	tp = closed.Close()
	require.Nil(t, tp.SLO)
	require.Nil(t, tp.ClientQueue)
	require.Nil(t, tp.Response)
}
