package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/decode/tokenstest"
	"github.com/vetbench/vetbench/receipts/speed"
	"github.com/vetbench/vetbench/receipts/tokens"
	"github.com/vetbench/vetbench/stub"
)

const published = "../../receipts/tokens/testdata/token-throughput-rtx3090.json"

// runEnv runs a command line with the environment given (nothing else of
// the process's).
func runEnv(t *testing.T, environ map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return environ[k] },
		exec: func(context.Context, []string, io.Writer, io.Writer, string, ...string) error { return os.ErrNotExist }}
	code = vetbench(context.Background(), e, args)
	return out.String(), errb.String(), code
}

func fakeEnv(t *testing.T, cfg tokenstest.Config) (map[string]string, *tokenstest.Server) {
	t.Helper()
	srv := tokenstest.Start(cfg)
	t.Cleanup(srv.Close)
	return map[string]string{"VETBENCH_ENDPOINT": srv.URL, "VETBENCH_OUT": filepath.Join(t.TempDir(), "run")}, srv
}

func TestTokensCommand(t *testing.T) {
	t.Parallel()
	environ, _ := fakeEnv(t, tokenstest.Config{})
	stdout, stderr, code := runEnv(t, environ, "tokens", "-workload", "text,one_image", "-levels", "1,4", "-output", "16", "-repeats", "2")
	require.Equal(t, exitPass, code, stderr)
	// One line per point; its warnings, if any (Little's law over windows
	// of a few ms on this fake server), follow it indented.
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if !strings.HasPrefix(l, "    warning: ") {
			lines = append(lines, l)
		}
	}
	require.Len(t, lines, 4, stdout)
	require.Regexp(t, `^text +c=1 +[0-9.]+ tok/s +[0-9.]+ tok/s/request +batch +[0-9.]+ ms/token +\| vllm: median TTFT [0-9.]+ ms, TPOT [0-9.]+ ms, ITL [0-9.]+ ms \(p99 [0-9.]+\) +verified 32/32 tokens$`, lines[0])
	require.Contains(t, lines[3], "one_image c=4")
	require.Contains(t, lines[3], "verified 128/128 tokens")

	out := environ["VETBENCH_OUT"]
	files, err := filepath.Glob(filepath.Join(out, "receipts", "tokens_*.json"))
	require.NoError(t, err)
	require.Len(t, files, 4, "one receipt per point in the run directory")
	rec, err := tokens.ReadFile(files[0])
	require.NoError(t, err)
	require.Equal(t, tokens.CacheUniquePrompts, rec.Identity.CacheIsolation)
	require.FileExists(t, filepath.Join(out, "settings.toml"))
	// bench.txt: the run's benchmark lines, with its identity, for the gate.
	bt, err := speed.LoadFile(filepath.Join(out, "bench.txt"))
	require.NoError(t, err)
	require.Contains(t, bt.Benchmarks(), "Tokens/workload=one_image/c=4"+procSuffix())
	self := speed.Decide(bt, bt, speed.DefaultPolicy())
	require.Empty(t, self.Identity.Differs)

	// The directory holds results now: refused unless -force.
	_, stderr, code = runEnv(t, environ, "tokens", "-levels", "1", "-output", "4", "-repeats", "1")
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, "holds results")

	// -json: the receipts.
	environ["VETBENCH_OUT"] = filepath.Join(t.TempDir(), "json")
	stdout, _, code = runEnv(t, environ, "tokens", "-workload", "text", "-levels", "2", "-output", "4", "-repeats", "1", "-json")
	require.Equal(t, exitPass, code)
	var run tokens.Measured
	require.NoError(t, json.Unmarshal([]byte(stdout), &run))
	require.Equal(t, tokens.RunSchema, run.Schema)
	require.True(t, run.Passed)
	require.Len(t, run.Receipts, 1)
	require.Equal(t, 8, run.Receipts[0].Summary.TotalVerifiedOutputTokens)
}

func TestTokensCommandShortStreamFails(t *testing.T) {
	t.Parallel()
	environ, _ := fakeEnv(t, tokenstest.Config{Tokens: func(q tokenstest.Request) int {
		if q.Seq == 4 {
			return 3
		}
		return q.MaxTokens
	}})
	stdout, stderr, code := runEnv(t, environ, "tokens", "-workload", "text", "-levels", "2", "-output", "8", "-repeats", "2", "-warmup", "0")
	require.Equal(t, exitFail, code)
	require.Contains(t, stdout, "verified 24/32 tokens  FAILED 1 (1 short)")
	require.Contains(t, stderr, "requests failed or came back short")

	// Accepted share: the same failure passes, and is still shown.
	environ2, _ := fakeEnv(t, tokenstest.Config{Tokens: func(q tokenstest.Request) int {
		if q.Seq == 4 {
			return 3
		}
		return q.MaxTokens
	}})
	stdout, _, code = runEnv(t, environ2, "tokens", "-workload", "text", "-levels", "2", "-output", "8", "-repeats", "2", "-warmup", "0", "-max-failed", "0.25")
	require.Equal(t, exitPass, code)
	require.Contains(t, stdout, "FAILED 1 (1 short)")
}

func TestTokensCompareWithThePublishedReceipt(t *testing.T) {
	t.Parallel()
	environ, _ := fakeEnv(t, tokenstest.Config{})
	stdout, stderr, code := runEnv(t, environ, "tokens", "-workload", "text", "-levels", "1,4", "-repeats", "1", "-baseline", published)
	require.Equal(t, exitNoVerdict, code, "points missing and the server build differs: no verdict: %s", stderr)
	require.Contains(t, stdout, "verdict: could not compare")
	require.Contains(t, stdout, "baseline point workload=text/c=8/output=128 has no candidate")
	// The fake's rate is the machine's (no token delay): either side of
	// the published 156.58 tok/s on a loaded one, so the sign is not held.
	require.Regexp(t, `workload=text/c=1/output=128 +aggregate_output_tok_s +published token-throughput receipt +156\.58 → [0-9.]+ \([+-][0-9.]+%\)`, stdout)
	require.Contains(t, stdout, "only in baseline: workload=one_image/c=1/output=128")
}

func TestTokensCompareWithoutMeasuring(t *testing.T) {
	t.Parallel()
	environ, _ := fakeEnv(t, tokenstest.Config{})
	_, stderr, code := runEnv(t, environ, "tokens", "-workload", "text,one_image", "-levels", "1", "-repeats", "1")
	require.Equal(t, exitPass, code, stderr)
	dirs := []string{filepath.Join(environ["VETBENCH_OUT"], "receipts")}
	stdout, stderr, code := runEnv(t, nil, "tokens", "-baseline", published, "-candidate", dirs[0])
	require.Equal(t, exitNoVerdict, code, stderr)
	require.Regexp(t, `workload=one_image/c=1/output=128 +aggregate_output_tok_s .* 127\.91 → `, stdout)
	require.Regexp(t, `workload=text/c=1/output=128 +aggregate_output_tok_s .* 156\.58 → `, stdout)
	require.Contains(t, stdout, "only in baseline: workload=text/c=32/output=128")

	stdout, _, code = runEnv(t, nil, "tokens", "-json", "-baseline", published, "-candidate", dirs[0])
	require.Equal(t, exitNoVerdict, code)
	var cmp tokens.Comparison
	require.NoError(t, json.Unmarshal([]byte(stdout), &cmp))
	require.Len(t, cmp.Points, 2)
	require.Equal(t, tokens.CouldNotCompare, cmp.Judged.Outcome)
}

func TestTokensMalformedBaselineNamesTheField(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(published)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	doc["records"].([]any)[2].(map[string]any)["runs"].([]any)[1].(map[string]any)["wall_seconds"] = "slow"
	bad, err := json.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(path, bad, 0o644))
	stdout, stderr, code := runEnv(t, nil, "tokens", "-baseline", path, "-candidate", path)
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, "records[2].runs[1].wall_seconds")
	require.Empty(t, stdout)

	stdout, _, code = runEnv(t, nil, "tokens", "-json", "-baseline", path, "-candidate", path)
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stdout, `"schema": "vetbench.error/v1"`, "-json writes an error object")

	_, stderr, code = runEnv(t, nil, "tokens", "-candidate", path)
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, "-candidate needs -baseline")
	_, stderr, code = runEnv(t, map[string]string{"VETBENCH_ENDPOINT": "http://127.0.0.1:1"}, "tokens", "-levels", "1")
	require.Equal(t, exitNoVerdict, code, "an unreachable endpoint")
	require.Contains(t, stderr, "probe live target")
}

func TestTokensPitfall(t *testing.T) {
	t.Parallel()
	environ, srv := fakeEnv(t, tokenstest.Config{})
	stdout, stderr, code := runEnv(t, environ, "tokens", "-pitfall", "-workload", "text", "-levels", "1,2", "-output", "4", "-repeats", "1")
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stdout, "workload text: repeating prompts (a warm ladder) against unique prompts")
	require.Regexp(t, `(?m)^2 +[0-9.]+ +[0-9.]+ +[+-][0-9.]+%`, stdout)
	seen := map[string]int{}
	for _, q := range srv.Requests() {
		seen[q.Text]++
	}
	max := 0
	for _, n := range seen {
		max = maxInt(max, n)
	}
	require.Equal(t, 4, max, "the warm ladder sends its first prompt at both levels, warm-up and run")
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// procSuffix is go test's -<GOMAXPROCS> on benchmark names.
func procSuffix() string {
	if p := runtime.GOMAXPROCS(0); p != 1 {
		return "-" + strconv.Itoa(p)
	}
	return ""
}

// Refilled slots, vllm bench serve's result file out and back in, and the
// comparison's exit contract: the same figures pass, a slower candidate
// is worse (1), other definitions, a missing point or a differing
// identity cannot be compared (2).
func TestTokensRefilledSlotsAndSaveResult(t *testing.T) {
	t.Parallel()
	environ, srv := fakeEnv(t, tokenstest.Config{})
	saved := filepath.Join(t.TempDir(), "serve.json")
	stdout, stderr, code := runEnv(t, environ, "tokens", "-workload", "text", "-levels", "4", "-num-prompts", "8", "-output", "16",
		"-repeats", "1", "-warmup", "1", "-save-result", saved, "-metric-percentiles", "50,90,99", "-goodput", "ttft:60000")
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stdout, "verified 128/128 tokens", "8 prompts × 16 tokens")
	require.Len(t, srv.Requests(), 4+8, "a warm-up of one request per slot, then the 8 prompts")
	files, err := filepath.Glob(filepath.Join(environ["VETBENCH_OUT"], "receipts", "tokens_*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	rec, err := tokens.ReadFile(files[0])
	require.NoError(t, err)
	require.Len(t, rec.Runs[0].Requests, 8)
	require.LessOrEqual(t, rec.Summary.Serve.MaxConcurrentRequests, 4, "never more than the slots in flight")

	data, err := os.ReadFile(saved)
	require.NoError(t, err)
	var res map[string]any
	require.NoError(t, json.Unmarshal(data, &res))
	for _, k := range []string{"duration", "completed", "request_throughput", "output_throughput", "total_token_throughput",
		"mean_ttft_ms", "median_itl_ms", "p99_itl_ms", "p90_tpot_ms", "mean_e2el_ms", "itls", "ttfts", "output_lens", "max_concurrent_requests"} {
		require.Contains(t, res, k)
	}
	require.EqualValues(t, 8, res["num_prompts"])
	require.EqualValues(t, 4, res["max_concurrency"])
	require.EqualValues(t, 8, res["completed"])
	require.EqualValues(t, 8/res["duration"].(float64), res["request_goodput"], "every request within 60 s")
	_, _, code = runEnv(t, environ, "tokens", "-candidate", files[0], "-save-result", saved)
	require.Equal(t, exitNoVerdict, code, "an existing result file is never overwritten")

	// Read back as a baseline: the same figures pass.
	stdout, stderr, code = runEnv(t, nil, "tokens", "-baseline", saved, "-candidate", files[0])
	require.Equal(t, exitPass, code, "%s%s", stdout, stderr)
	require.Regexp(t, `median_itl_ms +vllm bench serve calculate_metrics`, stdout)
	require.NotContains(t, stdout, "aggregate_output_tok_s", "the result file holds no published-receipt figures: none compared")

	// The same figures from vllm bench serve's default backend
	// (/v1/completions: prompts without the chat template) are another
	// experiment: named, exit 2, not judged as speed.
	res["backend"], res["endpoint_type"] = "openai", "openai"
	completions := filepath.Join(t.TempDir(), "completions.json")
	b, _ := json.Marshal(res)
	require.NoError(t, os.WriteFile(completions, b, 0o644))
	stdout, _, code = runEnv(t, nil, "tokens", "-baseline", completions, "-candidate", files[0])
	require.Equal(t, exitNoVerdict, code, stdout)
	require.Contains(t, stdout, "api: /v1/completions → /v1/chat/completions")
	res["backend"], res["endpoint_type"] = "openai-chat", "openai-chat"

	// A baseline twice as fast: the candidate is worse.
	res["output_throughput"] = 2 * res["output_throughput"].(float64)
	fast := filepath.Join(t.TempDir(), "fast.json")
	b, _ = json.Marshal(res)
	require.NoError(t, os.WriteFile(fast, b, 0o644))
	stdout, _, code = runEnv(t, nil, "tokens", "-baseline", fast, "-candidate", files[0])
	require.Equal(t, exitFail, code, stdout)
	require.Contains(t, stdout, "output_throughput (vllm bench serve calculate_metrics) worse by 50.0%")

	// A missing point: no verdict.
	stdout, _, code = runEnv(t, nil, "tokens", "-baseline", published, "-candidate", saved)
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stdout, "has no candidate")
	// The published text c=1 point against a result file of that point:
	// figures of other definitions only, refused.
	one := filepath.Join(t.TempDir(), "one.json")
	res["max_concurrency"], res["num_prompts"] = 1, 1
	res["vetbench_mode"], res["output_tokens"] = "closed_batch", "128"
	b, _ = json.Marshal(res)
	require.NoError(t, os.WriteFile(one, b, 0o644))
	_, stderr, code = runEnv(t, nil, "tokens", "-baseline", published, "-candidate", one)
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, "figures of different definitions")

	// Another request rate is another experiment.
	res = map[string]any{}
	require.NoError(t, json.Unmarshal(data, &res))
	res["request_rate"] = 4.0
	rated := filepath.Join(t.TempDir(), "rated.json")
	b, _ = json.Marshal(res)
	require.NoError(t, os.WriteFile(rated, b, 0o644))
	stdout, _, code = runEnv(t, nil, "tokens", "-baseline", rated, "-candidate", files[0])
	require.Equal(t, exitNoVerdict, code, stdout)
	require.Contains(t, stdout, "identity differs: load")
}

// TestTokensJSONContract holds the schema names and field names
// docs/tokens.md promises for tokens -json: the measured run
// (vetbench.tokens-run/v1), the comparison (vetbench.tokens-compare/v1,
// also as a golden), the pitfall (vetbench.tokens-pitfall/v1) and the
// error object.
func TestTokensJSONContract(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runEnv(t, nil, "tokens", "-json", "-baseline", published, "-candidate", published)
	require.Equal(t, exitPass, code, "the published receipt against itself: %s", stderr)
	checkGolden(t, filepath.Join("testdata", "tokens_compare_published_json.stdout"), stdout)
	var cmp map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &cmp))
	require.Equal(t, "vetbench.tokens-compare/v1", cmp["schema"])
	require.ElementsMatch(t, []string{"schema", "points", "only_baseline", "only_candidate", "verdict"}, keys(cmp))
	require.ElementsMatch(t, []string{"outcome", "margin"}, keys(cmp["verdict"].(map[string]any)), "reasons only when there are")
	pt := cmp["points"].([]any)[0].(map[string]any)
	require.ElementsMatch(t, []string{"point", "baseline_definitions", "candidate_definitions", "figures", "identity_differs",
		"identity_unverified", "problems", "candidate_problems"}, keys(pt))
	require.ElementsMatch(t, []string{"workload", "concurrency", "output_tokens", "num_prompts"}, keys(pt["point"].(map[string]any)))
	fig := pt["figures"].([]any)[0].(map[string]any)
	require.ElementsMatch(t, []string{"name", "definitions", "higher_better", "delta"}, keys(fig))
	require.ElementsMatch(t, []string{"baseline", "candidate", "relative"}, keys(fig["delta"].(map[string]any)))

	environ, _ := fakeEnv(t, tokenstest.Config{})
	stdout, stderr, code = runEnv(t, environ, "tokens", "-workload", "text", "-levels", "1", "-output", "4", "-repeats", "1", "-json")
	require.Equal(t, exitPass, code, stderr)
	var run map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &run))
	require.Equal(t, "vetbench.tokens-run/v1", run["schema"])
	require.ElementsMatch(t, []string{"schema", "passed", "receipts"}, keys(run))
	require.Equal(t, tokens.Schema, run["receipts"].([]any)[0].(map[string]any)["schema"])

	environ, _ = fakeEnv(t, tokenstest.Config{})
	stdout, stderr, code = runEnv(t, environ, "tokens", "-pitfall", "-workload", "text", "-levels", "1", "-output", "4", "-repeats", "1", "-json")
	require.Equal(t, exitPass, code, stderr)
	var pf map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &pf))
	require.Equal(t, "vetbench.tokens-pitfall/v1", pf["schema"])
	ladder := pf["workloads"].([]any)[0].(map[string]any)
	require.ElementsMatch(t, []string{"workload", "levels"}, keys(ladder))
	require.ElementsMatch(t, []string{"concurrency", "shared_tok_s", "unique_tok_s", "inflation", "ttft_relative"},
		keys(ladder["levels"].([]any)[0].(map[string]any)))

	stdout, _, code = runEnv(t, nil, "tokens", "-json", "-nope")
	require.Equal(t, exitNoVerdict, code)
	var e map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &e), "a bad flag under -json is an error object")
	require.Equal(t, "vetbench.error/v1", e["schema"])
	require.Equal(t, "tokens", e["command"])
}

// -api completions measures through /v1/completions, as vllm bench
// serve's default backend does (here against the twin, which serves it as
// vLLM does): every token counted, the receipts and bench.txt say the
// endpoint, a chat baseline of the same point is another experiment (exit
// 2, named), and the image workload, which a completion cannot carry, is
// refused before anything is measured.
func TestTokensThroughCompletions(t *testing.T) {
	t.Parallel()
	tw, err := stub.Start(stub.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tw.Close() })
	run := func(args ...string) (string, string, int, string) {
		out := filepath.Join(t.TempDir(), "run")
		stdout, stderr, code := runEnv(t, map[string]string{"VETBENCH_ENDPOINT": tw.URL(), "VETBENCH_OUT": out},
			append([]string{"tokens", "-workload", "text", "-levels", "2", "-output", "8", "-repeats", "1"}, args...)...)
		return stdout, stderr, code, out
	}
	stdout, stderr, code, comp := run("-api", "completions")
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stdout, "verified 16/16 tokens")
	files, err := filepath.Glob(filepath.Join(comp, "receipts", "tokens_*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	rec, err := tokens.ReadFile(files[0])
	require.NoError(t, err)
	require.Equal(t, tokens.APICompletions, rec.Identity.API)
	compIn := rec.Summary.Serve.TotalInputTokens
	bench, err := os.ReadFile(filepath.Join(comp, "bench.txt"))
	require.NoError(t, err)
	require.Contains(t, string(bench), "tokens: output=8 api=completions")

	_, stderr, code, chat := run()
	require.Equal(t, exitPass, code, stderr)
	files, err = filepath.Glob(filepath.Join(chat, "receipts", "tokens_*.json"))
	require.NoError(t, err)
	crec, err := tokens.ReadFile(files[0])
	require.NoError(t, err)
	require.Equal(t, tokens.APIChat, crec.Identity.API)
	require.Greater(t, crec.Summary.Serve.TotalInputTokens, compIn, "the chat template's tokens")
	stdout, _, code = runEnv(t, nil, "tokens", "-baseline", files[0], "-candidate", filepath.Join(comp, "receipts"))
	require.Equal(t, exitNoVerdict, code, stdout)
	require.Contains(t, stdout, "api: /v1/chat/completions → /v1/completions")

	_, stderr, code, _ = run("-api", "completions", "-workload", "text,one_image")
	require.Equal(t, exitNoVerdict, code, stderr)
	require.Contains(t, stderr, "a completion is text only")
}
