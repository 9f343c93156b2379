package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/sweep/rundir"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/stub"
)

// TestRunAgainstVLLMFeatures runs `vetbench run` against a twin serving as
// vllm serve --api-key … --data-parallel-size 2
// --enable-prompt-tokens-details, whose model answers a share of prompts
// off-format: a missing or wrong key stops the run (exit 2) with what it
// means, the right key runs clean in token_ids mode with the off-format
// answers counted per question, per-engine hit rates that sum, and cached
// tokens reconciled; the key appears in nothing the run wrote.
func TestRunAgainstVLLMFeatures(t *testing.T) {
	const key = "sk-vetbench-9f3e-not-for-print"
	rs, err := stub.Start(stub.Config{DevMode: true, APIKeys: []string{key}, DataParallel: 2, PromptTokensDetails: true, OffFormat: 0.3})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rs.Close() })
	dir := t.TempDir()
	environ := map[string]string{"VETBENCH_ENDPOINT": rs.URL(), "VETBENCH_FIXTURE_SIZE": "2", "VETBENCH_SETS": "checks",
		"VETBENCH_LEVELS": "4", "VETBENCH_OUT": dir}
	var streams []string

	stdout, stderr, code := runWith(t, environ, "run")
	streams = append(streams, stdout, stderr)
	require.Equal(t, exitNoVerdict, code, stdout)
	require.Contains(t, stderr, "HTTP 401: the server wants an API key (VETBENCH_API_KEY)")

	environ["VETBENCH_API_KEY"] = "sk-wrong-key"
	stdout, stderr, code = runWith(t, environ, "run")
	streams = append(streams, stdout, stderr)
	require.Equal(t, exitNoVerdict, code, stdout)
	require.Contains(t, stderr, "HTTP 401: the key was refused")
	require.NotContains(t, stderr, "sk-wrong-key")
	held, err := rundir.Results(dir)
	require.NoError(t, err)
	require.Empty(t, held, "a run refused at the door holds no results")

	environ["VETBENCH_API_KEY"] = key
	stdout, stderr, code = runWith(t, environ, "run")
	streams = append(streams, stdout, stderr)
	require.Equal(t, exitPass, code, stderr)
	rec, err := receipts.ReadFile(filepath.Join(dir, "receipts", "checks_c4.json"))
	require.NoError(t, err)
	require.Nil(t, rec.Stopped)
	require.Zero(t, rec.Throughput.Failed, "no question fails on an off-format answer")
	require.Equal(t, "token_ids", rec.Pins.ScoringMode)
	o := rec.OffFormat
	require.NotNil(t, o)
	require.Positive(t, o.Total)
	require.Contains(t, stdout, "off-format "+strconv.Itoa(o.Total))
	require.Contains(t, stdout, "off-format answers (sampled token no candidate): "+o.String())
	require.Len(t, o.ByQuestion, 4, "every question counted, 0 included")

	srv := rec.Server
	require.Len(t, srv.Engines, 2)
	e0, e1 := srv.Engines["0"], srv.Engines["1"]
	require.Equal(t, srv.Counters["prefix_cache_hits"], e0.PrefixCacheHits+e1.PrefixCacheHits)
	require.Equal(t, srv.Counters["prefix_cache_queries"], e0.PrefixCacheQueries+e1.PrefixCacheQueries)
	require.InDelta(t, (e0.PrefixCacheHits+e1.PrefixCacheHits)/(e0.PrefixCacheQueries+e1.PrefixCacheQueries), *srv.PrefixCacheHitRate, 1e-15)
	require.Contains(t, stdout, "engines:  0 prefix-hit ")
	rc := rec.Checks.Reconciliation
	require.True(t, rc.OK, rc.Detail)
	require.Equal(t, float64(*rc.ClientCachedTokens), *rc.ServerCachedTokens)

	// The key is in no stream and no file the runs wrote.
	for _, s := range streams {
		require.NotContains(t, s, key)
	}
	files := 0
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NotContains(t, string(data), key, path)
		require.NotContains(t, string(data), "sk-wrong-key", path)
		files++
		return nil
	}))
	require.Positive(t, files)
}

// TestRunOlderServer: against a server older than logprob_token_ids a
// token_ids run stops before its first measured point (exit 2) with the
// mode, the build and the remedy, and writes nothing that looks like a
// result.
func TestRunOlderServer(t *testing.T) {
	rs, err := stub.Start(stub.Config{DevMode: true, Legacy: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rs.Close() })
	dir := t.TempDir()
	environ := map[string]string{"VETBENCH_ENDPOINT": rs.URL(), "VETBENCH_FIXTURE_SIZE": "2", "VETBENCH_SETS": "checks", "VETBENCH_OUT": dir}
	stdout, stderr, code := runWith(t, environ, "run")
	require.Equal(t, exitNoVerdict, code, stdout)
	for _, want := range []string{"scoring mode token_ids needs logprob_token_ids", "this server (vLLM " + stub.LegacyVersion + ") ignores it",
		"set VETBENCH_SCORING=top_logprobs"} {
		require.Contains(t, stderr, want)
	}
	require.NotContains(t, stdout, "receipt:")
	held, err := rundir.Results(dir)
	require.NoError(t, err)
	require.Empty(t, held, "nothing that looks like a result")
	require.Zero(t, rs.Stats().ChatRequests-1, "one probe request, no measured point")

	// Allowed to fall back, the run scores from top_logprobs and says so.
	environ["VETBENCH_SCORING_FALLBACK"] = "true"
	environ["VETBENCH_LEVELS"] = "1"
	stdout, stderr, code = runWith(t, environ, "run")
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stdout, "warning: scoring fell back to top_logprobs")
	rec, err := receipts.ReadFile(filepath.Join(dir, "receipts", "checks_c1.json"))
	require.NoError(t, err)
	require.Equal(t, "top_logprobs", rec.Pins.ScoringMode)
	require.NotEmpty(t, rec.Pins.ScoringFallback)
}
