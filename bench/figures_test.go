package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/receipts"
)

func pass(wall float64, judgments int, lat []float64, hits, queries float64) *receipts.Receipt {
	r := &receipts.Receipt{Throughput: receipts.Throughput{Concurrency: 4, WallSeconds: wall, Judgments: judgments, Images: judgments}}
	for _, l := range lat {
		r.Items = append(r.Items, receipts.Item{LatencySeconds: l})
	}
	r.Items = append(r.Items, receipts.Item{LatencySeconds: 99, Error: "failed"}, receipts.Item{LatencySeconds: 99, Discarded: true})
	r.Server = &receipts.Server{Status: scrape.StatusOK, Counters: map[string]float64{
		scrape.PrefixCacheHits: hits, scrape.PrefixCacheQueries: queries, scrape.MMCacheHits: 1, scrape.MMCacheQueries: 2,
	}, Histograms: map[string]receipts.Histogram{scrape.HistQueue: {Status: scrape.StatusOK, Count: 10, Sum: 1}}}
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
	require.Equal(t, 20.0, m.Server.Histograms[scrape.HistQueue].Count)
	// The inputs are untouched.
	require.Equal(t, 10.0, a.Server.Counters[scrape.PrefixCacheHits])
	require.Equal(t, 10.0, a.Server.Histograms[scrape.HistQueue].Count)

	// A pass without a figure leaves the pooled figure unknown, not partial.
	delete(b.Server.Counters, scrape.PrefixCacheHits)
	m = Merge([]*receipts.Receipt{a, b})
	require.Nil(t, m.Server.PrefixCacheHitRate)
	require.Nil(t, Merge(nil))
}
