package tally_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/tally"
)

func f(v float64) *float64 { return &v }

func part(success, hits, queries, running, kv float64) *receipts.Server {
	return &receipts.Server{
		Status:     "ok",
		Counters:   map[string]float64{"request_success": success, "prefix_cache_hits": hits, "prefix_cache_queries": queries},
		Histograms: map[string]receipts.Histogram{"queue": {Status: "ok", Count: success, Sum: success / 10, UpperBound: &receipts.Quantiles{P50: f(0.1)}}},
		Gauges: map[string]receipts.GaugePair{
			"num_requests_running": {Before: f(0), After: f(running)},
			"kv_cache_usage_perc":  {Before: f(0), After: f(kv)},
		},
		Engines: map[string]receipts.EngineInfo{"0": {}, "1": {}},
	}
}

// The total of several endpoints: counters and histogram counts add up,
// the hit rate is all hits over all queries (not a mean of the rates),
// gauges add up but a share is the highest, percentiles are not summed.
func TestSumServers(t *testing.T) {
	total := tally.SumServers([]string{"a", "b"}, []*receipts.Server{part(10, 90, 100, 1, 0.2), part(30, 10, 300, 2, 0.5)})
	require.Equal(t, "ok", total.Status, total.Problems)
	require.Equal(t, map[string]float64{"request_success": 40, "prefix_cache_hits": 100, "prefix_cache_queries": 400}, total.Counters)
	require.InDelta(t, 0.25, *total.PrefixCacheHitRate, 1e-15, "100/400, not the mean of 0.9 and 0.033")
	require.Equal(t, receipts.Histogram{Status: "ok", Count: 40, Sum: 4}, total.Histograms["queue"])
	require.Equal(t, 3.0, *total.Gauges["num_requests_running"].After)
	require.Equal(t, 0.5, *total.Gauges["kv_cache_usage_perc"].After)
	require.Nil(t, total.Engines, "engines stay in each endpoint's block")

	// A counter one endpoint lacks has no total, and says so.
	b := part(30, 10, 300, 2, 0.5)
	delete(b.Counters, "prefix_cache_hits")
	total = tally.SumServers([]string{"a", "b"}, []*receipts.Server{part(10, 90, 100, 1, 0.2), b})
	require.Contains(t, total.Status, "partial")
	require.NotContains(t, total.Counters, "prefix_cache_hits")
	require.Nil(t, total.PrefixCacheHitRate)
	require.Contains(t, total.Problems, "counter prefix_cache_hits: not read at every endpoint, no total")

	// A failed scrape at one endpoint: the total is unknown, naming it.
	total = tally.SumServers([]string{"a", "b"}, []*receipts.Server{part(10, 90, 100, 1, 0.2), {Status: "unknown: scrape failed: x"}})
	require.Equal(t, "unknown: b: unknown: scrape failed: x", total.Status)
	require.Nil(t, total.Counters)
	require.Nil(t, tally.SumServers(nil, nil))
}
