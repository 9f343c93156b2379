package typevet_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/typevet"
)

// The pins, throughput and server blocks, field by field: what each
// becomes in the receipt, and the error that names a misfit.
func TestImportPinsThroughputServer(t *testing.T) {
	t.Parallel()
	const name = "check_match_vllm_throughput_full_c16.json"
	data, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	obj := func(m map[string]any, keys ...string) map[string]any {
		for _, k := range keys {
			m = m[k].(map[string]any)
		}
		return m
	}
	cases := []struct {
		name    string
		mutate  func(m map[string]any)
		wantErr string
		check   func(t *testing.T, r *receipts.Receipt)
	}{
		{"as recorded", func(map[string]any) {}, "", func(t *testing.T, r *receipts.Receipt) {
			require.Equal(t, int64(0), r.Pins.Fixture.Seed)
			require.Equal(t, map[string]string{"register_rows": "20", "variants_per_row": "7", "pillow_version": "12.3.0"}, r.Pins.Fixture.Extra)
			require.Equal(t, []receipts.ServedModel{{ID: "google/gemma-4-31B-it", Root: "google/gemma-4-31B-it", MaxModelLen: 8192}}, r.Pins.Served)
			require.Equal(t, "0.30.0", r.Pins.ServerBuild)
			require.Equal(t, "842da3794eaa0b77d5f08bae87a17459d91ff475", r.Pins.ModelRevision)
			require.Equal(t, "2026-09-30T19:28:23.701106Z", r.Finished.Format("2006-01-02T15:04:05.999999Z07:00"))
			require.Equal(t, r.Finished.Add(-26358*time.Millisecond), r.Started, "started is finished less wall_seconds")
			require.Equal(t, 16, r.Pins.Concurrency)
			tp := r.Throughput
			require.Equal(t, [4]int{16, 140, 140, 0}, [4]int{tp.Concurrency, tp.Judgments, tp.Images, tp.Discarded})
			require.Equal(t, 140, tp.Latency.N)
			require.Equal(t, 3.450666488846764, tp.Latency.P99)
			require.Equal(t, 560, tp.Requests)
			s := r.Server
			require.Equal(t, "ok", s.Status)
			require.Equal(t, receipts.Histogram{Status: "ok", Count: 560, Sum: 0.011581696569919586, UpperBound: &receipts.Quantiles{P50: f(0.3), P95: f(0.3), P99: f(0.3)}}, s.Histograms["queue"])
			require.Equal(t, 0.5504587155963303, *s.PrefixCacheHitRate)
			require.Len(t, s.Counters, 9)
			require.Equal(t, receipts.GaugePair{Before: f(0), After: f(0)}, s.Gauges["kv_cache_usage_perc"])
			require.Empty(t, s.Problems)
		}},
		{"a pin that is no scalar", func(m map[string]any) { obj(m, "pins")["extra"] = []any{1} }, "pins.extra: want a scalar pin, got an array", nil},
		{"a served model without root", func(m map[string]any) {
			delete(obj(m, "pins", "server")["served"].([]any)[0].(map[string]any), "root")
		}, `pins.server.served[0]: missing field "root"`, nil},
		{"finished not a time", func(m map[string]any) { obj(m, "pins")["finished_utc"] = "yesterday" }, `pins.finished_utc: not an ISO 8601 time: "yesterday"`, nil},
		{"no finished time", func(m map[string]any) { delete(obj(m, "pins"), "finished_utc") }, "", func(t *testing.T, r *receipts.Receipt) {
			require.True(t, r.Finished.IsZero())
			require.True(t, r.Started.IsZero())
		}},
		{"concurrency disagrees", func(m map[string]any) { obj(m, "pins")["concurrency"] = 8 }, "throughput.concurrency: 16, but pins.concurrency is 8", nil},
		{"concurrency only in throughput", func(m map[string]any) { delete(obj(m, "pins"), "concurrency") }, "", func(t *testing.T, r *receipts.Receipt) {
			require.Equal(t, 16, r.Pins.Concurrency)
		}},
		{"no latency block", func(m map[string]any) { delete(obj(m, "throughput"), "latency_seconds") }, `throughput: missing field "latency_seconds"`, nil},
		{"no mean latency: the items' mean", func(m map[string]any) { delete(obj(m, "metrics"), "mean_latency_seconds") }, "", func(t *testing.T, r *receipts.Receipt) {
			var sum float64
			for _, it := range r.Items {
				sum += it.LatencySeconds
			}
			require.InDelta(t, sum/float64(len(r.Items)), r.Throughput.Latency.Mean, 1e-12)
		}},
		{"no server block", func(m map[string]any) { delete(obj(m, "throughput"), "server") }, "", func(t *testing.T, r *receipts.Receipt) {
			require.Nil(t, r.Server)
		}},
		{"a histogram typevet could not read", func(m map[string]any) {
			obj(m, "throughput", "server")["queue"] = "unknown: scrape failed"
			delete(obj(m, "throughput", "server"), "prefill")
		}, "", func(t *testing.T, r *receipts.Receipt) {
			require.Equal(t, receipts.Histogram{Status: "unknown: scrape failed"}, r.Server.Histograms["queue"])
			require.NotContains(t, r.Server.Histograms, "prefill")
		}},
		{"a rank past the last bucket", func(m map[string]any) { obj(m, "throughput", "server", "e2e")["p99"] = "+Inf" }, "", func(t *testing.T, r *receipts.Receipt) {
			require.Nil(t, r.Server.Histograms["e2e"].UpperBound.P99)
			require.Equal(t, 1.5, *r.Server.Histograms["e2e"].UpperBound.P95)
		}},
		{"a quantile that is another string", func(m map[string]any) { obj(m, "throughput", "server", "e2e")["p99"] = "-Inf" }, "throughput.server.e2e.p99: want a number", nil},
		{"a histogram without sum", func(m map[string]any) { delete(obj(m, "throughput", "server", "e2e"), "sum") }, `throughput.server.e2e: missing field "sum"`, nil},
		{"hit rate unknown", func(m map[string]any) {
			obj(m, "throughput", "server")["prefix_cache_hit_rate"] = "unknown: no queries"
		}, "", func(t *testing.T, r *receipts.Receipt) {
			require.Nil(t, r.Server.PrefixCacheHitRate)
		}},
		{"hit rate another string", func(m map[string]any) { obj(m, "throughput", "server")["prefix_cache_hit_rate"] = "half" }, "throughput.server.prefix_cache_hit_rate: want a number", nil},
		{"a counter not recorded, the mm ratio without it", func(m map[string]any) { obj(m, "throughput", "server", "counters")["mm_cache_queries"] = nil }, "", func(t *testing.T, r *receipts.Receipt) {
			require.NotContains(t, r.Server.Counters, "mm_cache_queries")
			require.Nil(t, r.Server.MMCacheHitRate)
			require.Equal(t, []string{"counter mm_cache_queries: not recorded"}, r.Server.Problems)
		}},
		{"more mm cache hits than queries", func(m map[string]any) { obj(m, "throughput", "server", "counters")["mm_cache_hits"] = 561 }, "", func(t *testing.T, r *receipts.Receipt) {
			require.Nil(t, r.Server.MMCacheHitRate)
			require.Equal(t, []string{"mm cache: 561 hits exceed 560 queries"}, r.Server.Problems)
		}},
		{"a counter that is no number", func(m map[string]any) { obj(m, "throughput", "server", "counters")["preemptions"] = "0" }, "throughput.server.counters.preemptions: want a number", nil},
		{"a gauge read once", func(m map[string]any) {
			obj(m, "throughput", "server", "gauges", "num_requests_running")["before"] = nil
		}, "", func(t *testing.T, r *receipts.Receipt) {
			require.Equal(t, receipts.GaugePair{After: f(0)}, r.Server.Gauges["num_requests_running"])
		}},
		{"a gauge that is no pair", func(m map[string]any) { obj(m, "throughput", "server", "gauges")["num_requests_running"] = 1 }, "throughput.server.gauges.num_requests_running: want an object", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var m map[string]any
			require.NoError(t, json.Unmarshal(data, &m))
			c.mutate(m)
			b, err := json.Marshal(m)
			require.NoError(t, err)
			r, err := typevet.Import(bytes.NewReader(b), name)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			c.check(t, r)
		})
	}
}

func f(v float64) *float64 { return &v }
