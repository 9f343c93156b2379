package bench_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/grid"
	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/bench/sweep/target"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/speed"
	"github.com/vetbench/vetbench/stub"
)

// replicated starts one in-process twin per config, each with dev mode
// on, and a session spread over them.
func replicated(t *testing.T, set fixtures.Set, cfg config.Config, twins ...stub.Config) (*bench.Session, error) {
	t.Helper()
	var ep bench.Endpoint
	for i, tw := range twins {
		tw.DevMode = true
		tg, err := target.InProcess(tw)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tg.Close() })
		switch i {
		case 0:
			ep = tg.Endpoint
		case 1:
			// User info in a URL given by hand (config refuses it): never
			// in a receipt.
			ep.Replicas = append(ep.Replicas, strings.Replace(tg.Endpoint.BaseURL, "://", "://u:sk-secret@", 1))
		default:
			ep.Replicas = append(ep.Replicas, tg.Endpoint.BaseURL)
		}
	}
	return bench.NewSession(t.Context(), ep, set, sweep.SessionOptions(cfg))
}

// A window spread over three twins: every twin answers, each endpoint's
// figures are its own twin's (its requests reconcile with its counters),
// and they add up to the total — judgments, requests, tokens, rates, the
// server's counters and hit rates (hits over queries of all three caches).
func TestMeasureReplicas(t *testing.T) {
	s := getSuite(t)
	sess, err := replicated(t, firstCases(s.set(t, "checks"), 30), testConfig(), stub.Config{}, stub.Config{}, stub.Config{})
	require.NoError(t, err)
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 4, Warmup: 1})
	require.NoError(t, err)
	require.NoError(t, rec.Validate())
	require.Len(t, rec.Target.Endpoints, 3)
	require.Equal(t, rec.Target.Endpoint, rec.Target.Endpoints[0])
	require.Len(t, rec.Endpoints, 3)

	tp := rec.Throughput
	require.Equal(t, 30, tp.Judgments)
	var judgments, requests, tokens int
	var rate, success, hits, queries, mmHits, mmQueries, queueCount, queueSum float64
	for i, e := range rec.Endpoints {
		require.Equal(t, rec.Target.Endpoints[i], e.Endpoint)
		require.Positive(t, e.Throughput.Judgments, "endpoint %d got judgments", i)
		require.Equal(t, tp.WallSeconds, e.Throughput.WallSeconds, "one window")
		require.Equal(t, "ok", e.Server.Status, e.Server.Problems)
		require.True(t, e.Reconciliation.OK, "endpoint %d: %s", i, e.Reconciliation.Detail)
		require.Equal(t, float64(e.Throughput.Requests), e.Server.Counters["request_success"], "endpoint %d's requests went to its twin", i)
		require.True(t, e.Server.CacheReset.Prefix, "each twin's cache was reset")
		judgments += e.Throughput.Judgments
		requests += e.Throughput.Requests
		tokens += e.Throughput.PromptTokens
		rate += e.Throughput.JudgmentsPerSecond
		success += e.Server.Counters["request_success"]
		hits += e.Server.Counters["prefix_cache_hits"]
		queries += e.Server.Counters["prefix_cache_queries"]
		mmHits += e.Server.Counters["mm_cache_hits"]
		mmQueries += e.Server.Counters["mm_cache_queries"]
		queueCount += e.Server.Histograms[scrape.HistQueue].Count
		queueSum += e.Server.Histograms[scrape.HistQueue].Sum
	}
	require.Equal(t, tp.Judgments, judgments)
	require.Equal(t, tp.Requests, requests)
	require.Equal(t, tp.PromptTokens, tokens)
	require.InDelta(t, tp.JudgmentsPerSecond, rate, 1e-9*rate)
	srv := rec.Server
	require.Equal(t, "ok", srv.Status, srv.Problems)
	require.Equal(t, success, srv.Counters["request_success"])
	require.Equal(t, float64(tp.Requests), success)
	require.Equal(t, hits, srv.Counters["prefix_cache_hits"])
	require.Equal(t, queries, srv.Counters["prefix_cache_queries"])
	require.InDelta(t, hits/queries, *srv.PrefixCacheHitRate, 1e-15)
	require.InDelta(t, mmHits/mmQueries, *srv.MMCacheHitRate, 1e-15)
	require.Equal(t, float64(tp.Requests), queueCount, "every request was queued once")
	require.Equal(t, queueCount, srv.Histograms[scrape.HistQueue].Count)
	require.InDelta(t, queueSum, srv.Histograms[scrape.HistQueue].Sum, 1e-12)
	require.True(t, srv.CacheReset.Prefix)
	require.True(t, rec.Checks.Reconciliation.OK, rec.Checks.Reconciliation.Detail)

	// It round-trips, and a receipt whose endpoints do not add up is
	// refused (positive control of the reader's check).
	path := filepath.Join(t.TempDir(), "checks_c4.json")
	require.NoError(t, receipts.WriteFile(path, rec))
	back, err := receipts.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, rec.Endpoints, back.Endpoints)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "sk-secret")
	bad := rec.Clone()
	bad.Endpoints[1].Throughput.Judgments++
	require.ErrorContains(t, bad.Validate(), "the endpoints' judgments add up to 31, the total is 30")
	// Goldens do not hold who answered what: it depends on timing.
	require.Nil(t, receipts.Normalize(rec).Endpoints)
}

// A replica serving another model, or another build, stops the session
// before anything is measured, naming it.
func TestReplicaDrift(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 4)
	_, err := replicated(t, set, testConfig(), stub.Config{Model: "m"}, stub.Config{Model: "other-model"})
	require.ErrorIs(t, err, bench.ErrReplicaDrift)
	require.ErrorContains(t, err, "is not served")

	cfg := testConfig()
	cfg.ScoringFallback = true // the legacy build ignores token ids; the build is what differs
	_, err = replicated(t, set, cfg, stub.Config{}, stub.Config{Legacy: true})
	require.ErrorIs(t, err, bench.ErrReplicaDrift)
	require.ErrorContains(t, err, "one build across endpoints")

	// Positive control: the same twins alike are one experiment.
	_, err = replicated(t, set, testConfig(), stub.Config{Model: "m"}, stub.Config{Model: "m"})
	require.NoError(t, err)
}

// A router in front of data-parallel engines is one endpoint whose scrape
// shows several engines: beside a plain replica, its endpoint block holds
// each engine's figures, which add up to that endpoint's.
func TestReplicasWithEngines(t *testing.T) {
	s := getSuite(t)
	sess, err := replicated(t, firstCases(s.set(t, "checks"), 12), testConfig(), stub.Config{DataParallel: 2}, stub.Config{})
	require.NoError(t, err)
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 4})
	require.NoError(t, err)
	router := rec.Endpoints[0].Server
	require.Len(t, router.Engines, 2)
	var reqs, hits float64
	for _, e := range router.Engines {
		reqs += e.RequestSuccess
		hits += e.PrefixCacheHits
	}
	require.Equal(t, router.Counters["request_success"], reqs)
	require.Equal(t, router.Counters["prefix_cache_hits"], hits)
	require.Equal(t, float64(rec.Endpoints[0].Throughput.Requests), reqs)
	require.Nil(t, rec.Endpoints[1].Server.Engines, "one engine: none listed")
	require.Equal(t, float64(rec.Throughput.Requests), rec.Server.Counters["request_success"])
}

// The token benchmark and the speed matrix measure one server: several
// endpoints are refused before anything is asked of them.
func TestOneServerMeasurementsRefuseReplicas(t *testing.T) {
	ep := bench.Endpoint{BaseURL: "http://127.0.0.1:1", Replicas: []string{"http://127.0.0.1:2"}, Target: receipts.Target{Kind: receipts.TargetLive}}
	_, err := decode.NewRunner(t.Context(), ep)
	require.ErrorIs(t, err, bench.ErrSeveralEndpoints)
	_, err = grid.NewRunner(t.Context(), ep)
	require.ErrorIs(t, err, bench.ErrSeveralEndpoints)
}

// bench.txt says how many endpoints a run spread over (the gate lists a
// change of it); one endpoint's output says nothing, as before.
func TestSpeedConfigEndpoints(t *testing.T) {
	tg, err := target.InProcessReplicas(3, stub.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tg.Close() })
	cfg, err := sweep.SpeedConfig(t.Context(), tg.Endpoint, testConfig(), nil)
	require.NoError(t, err)
	require.Equal(t, "3", cfg[speed.KeyEndpoints])
	one := tg.Endpoint
	one.Replicas = nil
	cfg, err = sweep.SpeedConfig(t.Context(), one, testConfig(), nil)
	require.NoError(t, err)
	require.NotContains(t, cfg, speed.KeyEndpoints)
}
