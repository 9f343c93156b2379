package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/speed"
)

// runWith runs a command line with the environment given (nothing else).
func runWith(t *testing.T, environ map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return environ[k] }}
	code = vetbench(t.Context(), e, args)
	return out.String(), errb.String(), code
}

func TestRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	// The variables say one thing, the flags another: the flags win, the
	// variables stand where no flag is given (VETBENCH_FIXTURE_SIZE).
	environ := map[string]string{"VETBENCH_STUB": "inprocess", "VETBENCH_FIXTURE_SIZE": "2",
		"VETBENCH_SETS": "faces", "VETBENCH_LEVELS": "32", "VETBENCH_OUT": filepath.Join(dir, "not-here")}
	stdout, stderr, code := runWith(t, environ, "run", "-sets", "checks,signatures", "-levels", "1,4", "-out", dir)
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stdout, "target: inprocess")
	for _, name := range []string{"checks_c1", "checks_c4", "signatures_c1", "signatures_c4"} {
		path := filepath.Join(dir, "receipts", name+".json")
		rec, err := receipts.ReadFile(path)
		require.NoError(t, err)
		require.Nil(t, rec.Stopped)
		require.Positive(t, rec.Throughput.Judgments)
		require.Contains(t, stdout, path)
	}
	require.Regexp(t, `(?m)^checks +c=4 +cold +[0-9.]+ judgments/s`, stdout, "the arm is on every line")
	require.NoFileExists(t, filepath.Join(dir, "receipts", "checks_c32.json"))
	require.NoDirExists(t, filepath.Join(dir, "not-here"))
	// bench.txt: benchmark lines and their headers, one per point, read by
	// the speed gate as go test's output is.
	s, err := speed.LoadFile(filepath.Join(dir, "bench.txt"))
	require.NoError(t, err)
	require.NotNil(t, s)
	bench, err := os.ReadFile(filepath.Join(dir, "bench.txt"))
	require.NoError(t, err)
	require.Equal(t, 4, strings.Count(string(bench), "\nBenchmarkJudgments/set="))
	settings, err := os.ReadFile(filepath.Join(dir, "settings.toml"))
	require.NoError(t, err)
	require.Contains(t, string(settings), `sets = ["checks", "signatures"]`)
	delete(environ, "VETBENCH_SETS")
	delete(environ, "VETBENCH_LEVELS")
	delete(environ, "VETBENCH_OUT")

	// The same directory again: refused, nothing touched; -force replaces.
	_, stderr, code = runWith(t, environ, "run", "-sets", "checks", "-levels", "1", "-out", dir)
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, "holds results of an earlier run")
	require.FileExists(t, filepath.Join(dir, "receipts", "signatures_c4.json"))

	// A fault stops the point: exit 1, and the receipt says why.
	environ["VETBENCH_STUB_FAULTS"] = "missing-candidate:match=|r01:clean|"
	stdout, stderr, code = runWith(t, environ, "run", "-sets", "checks", "-levels", "1", "-out", dir, "-force")
	require.Equal(t, exitFail, code, stdout)
	require.Contains(t, stdout, "STOPPED at r01:clean (error)")
	require.Contains(t, stderr, "missing scores for requested candidates")
	rec, err := receipts.ReadFile(filepath.Join(dir, "receipts", "checks_c1.json"))
	require.NoError(t, err)
	require.Equal(t, "r01:clean", rec.Stopped.Item)
	require.Equal(t, 7, rec.Throughput.Judgments)
	require.NoFileExists(t, filepath.Join(dir, "receipts", "signatures_c4.json"), "forced: the old run's receipts are gone")
	// The stopped point has its line, with its failed item, as the
	// benchmark suite prints it; bench.txt ends as a failed go test run.
	bench, err = os.ReadFile(filepath.Join(dir, "bench.txt"))
	require.NoError(t, err)
	require.Regexp(t, `(?m)^BenchmarkJudgments/set=checks/c=1(-\d+)?\s.*\s1\.000 failed-items`, string(bench))
	require.True(t, strings.HasSuffix(string(bench), "\nFAIL\n"), string(bench))
	_, err = speed.LoadFile(filepath.Join(dir, "bench.txt"))
	require.NoError(t, err, "a whole output, not one cut short")
	delete(environ, "VETBENCH_STUB_FAULTS")

	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"run", "-sets", "cats"}, nil, `unknown set "cats"`},
		{[]string{"run", "-levels", "0"}, nil, `-levels "0": "0" is not a concurrency level`},
		{[]string{"run", "-levels", "1,1"}, nil, `-levels "1,1": level 1 given twice`},
		{[]string{"run"}, map[string]string{"VETBENCH_LEVELS": "x"}, `VETBENCH_LEVELS="x"`},
		{[]string{"run"}, map[string]string{"VETBENCH_ENDPOINT": "gpu-box"}, `VETBENCH_ENDPOINT="gpu-box": want a base URL`},
		{[]string{"run", "-sets", "checks", "-out", t.TempDir()}, map[string]string{"VETBENCH_STUB": "inprocess", "VETBENCH_STUB_FAULTS": "boom"}, `VETBENCH_STUB_FAULTS: fault "boom"`},
		{[]string{"run", "extra"}, nil, `unexpected argument "extra"`},
		{[]string{"run", "-count", "0"}, nil, `-count 0: want at least 1`},
		{[]string{"run", "-config", filepath.Join(t.TempDir(), "none.toml")}, nil, `run file: open `},
		{[]string{"run", "-sets", "checks", "-out", t.TempDir()}, map[string]string{"VETBENCH_ENDPOINT": "http://127.0.0.1:1"}, "connection refused"},
	} {
		_, stderr, code := runWith(t, tc.env, tc.args...)
		require.Equal(t, exitNoVerdict, code, stderr)
		require.Contains(t, stderr, tc.want)
	}
}

// With no -out each run gets a new directory under out/runs of the working
// directory, out/latest points at it, and -count keeps every pass; a run
// file sets what the flags do, and flags override it.
func TestRunDirectoryPerRunAndPasses(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	require.NoError(t, os.WriteFile("run.toml", []byte("sets = [\"checks\"]\nlevels = [1, 4]\n[fixtures]\nsize = 1\n[twin]\nplacement = \"inprocess\"\n"), 0o644))
	environ := map[string]string{}
	var dirs []string
	for range 2 {
		stdout, stderr, code := runWith(t, environ, "run", "-config", "run.toml", "-levels", "2", "-count", "2")
		require.Equal(t, exitPass, code, stdout+stderr)
		runs, err := filepath.Glob(filepath.Join("out", "runs", "*"))
		require.NoError(t, err)
		dirs = runs
		for _, p := range []string{"checks_c2.json", "pass2/checks_c2.json"} {
			require.Contains(t, stdout, filepath.Join("receipts", p))
		}
		require.NotContains(t, stdout, "checks_c1.json", "the flag overrides the file's levels")
	}
	require.Len(t, dirs, 2, "two runs, two directories")
	latest, err := os.Readlink(filepath.Join("out", "latest"))
	require.NoError(t, err)
	require.Contains(t, dirs, filepath.Join("out", latest))
	for _, d := range dirs {
		require.FileExists(t, filepath.Join(d, "receipts", "checks_c2.json"))
		require.FileExists(t, filepath.Join(d, "receipts", "pass2", "checks_c2.json"))
		settings, err := os.ReadFile(filepath.Join(d, "settings.toml"))
		require.NoError(t, err)
		require.Contains(t, string(settings), "levels = [2]\n")
		require.Contains(t, string(settings), "size = 1\n")
	}
}

// A relative -out is taken from the working directory, as any path on a
// command line is.
func TestRunRelativeOut(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	environ := map[string]string{"VETBENCH_STUB": "inprocess", "VETBENCH_FIXTURE_SIZE": "1"}
	stdout, stderr, code := runWith(t, environ, "run", "-sets", "checks", "-levels", "1", "-out", "named/rel")
	require.Equal(t, exitPass, code, stdout+stderr)
	require.FileExists(t, filepath.Join(wd, "named", "rel", "receipts", "checks_c1.json"))
	require.FileExists(t, filepath.Join(wd, "named", "rel", "bench.txt"))
	require.NoDirExists(t, filepath.Join(wd, "out"), "a named run makes no out/runs")
}

// A time-scaled twin's figures are shown in model time and labelled; the
// wall-clock rate is kept beside them.
func TestPointSummaryTimeScale(t *testing.T) {
	rec := &receipts.Receipt{Set: "checks", Throughput: receipts.Throughput{Concurrency: 16, JudgmentsPerSecond: 48.8, Judgments: 140,
		Latency: receipts.Latency{P50: 0.3, P95: 0.368}}}
	got := sweep.PointLine("baseline", rec, "r.json", sweep.ScaleOf(10))
	require.Equal(t, "baseline checks     c=16  cold    4.88 judgments/s  p50 3.000s  p95 3.680s  n=140  failed 0  discarded 0"+
		"  [model time, twin ×10; wall clock 48.80 judgments/s]\n    receipt: r.json", got)
	got = sweep.PointLine("", rec, "r.json", sweep.ScaleOf(1))
	require.True(t, strings.HasPrefix(got, "checks     c=16  cold   48.80 judgments/s  p50 0.300s  p95 0.368s  n=140  failed 0  discarded 0\n"), got)
	// Failures, by class, on the line whatever the time scale.
	rec.Throughput.Failed, rec.Throughput.Discarded = 136, 2
	rec.Throughput.FailedByClass = map[string]int{"http_500": 134, "timeout": 2}
	got = sweep.PointLine("", rec, "r.json", sweep.ScaleOf(10))
	require.Contains(t, got, "n=140  failed 136  discarded 2 (134 http_500, 2 timeout)  [model time, twin ×10;")
}

// An open loop's point is named by its rate and cap, never as a closed
// loop's c=: the rate in model time on a time-scaled twin.
func TestPointSummaryOpenLoop(t *testing.T) {
	rec := &receipts.Receipt{Set: "faces", Pins: receipts.Pins{Load: &receipts.Load{Mode: receipts.LoadOpen, Rate: 40, Process: "poisson", MaxConcurrency: 16}},
		Throughput: receipts.Throughput{Concurrency: 16, JudgmentsPerSecond: 39.97, Judgments: 200, ClientQueue: &receipts.Latency{P95: 0.002}}}
	got := sweep.PointLine("", rec, "r.json", sweep.ScaleOf(1))
	require.True(t, strings.HasPrefix(got, "faces      rate=40/s max=16 cold   39.97 judgments/s"), got)
	require.Contains(t, got, "open loop, poisson arrivals: client queue p95 0.002s")
	require.NotContains(t, got, "c=16")
	got = sweep.PointLine("", rec, "r.json", sweep.ScaleOf(10))
	require.True(t, strings.HasPrefix(got, "faces      rate=4/s max=16 cold    4.00 judgments/s"), got)
	rec.Pins.Load.MaxConcurrency = 0
	require.True(t, strings.HasPrefix(sweep.PointLine("", rec, "r.json", sweep.ScaleOf(1)), "faces      rate=40/s cold"))
}

// A point spread over several endpoints shows each one's share under the
// total line, in model time on a time-scaled twin.
func TestPointSummaryEndpoints(t *testing.T) {
	hit := 0.5
	rec := &receipts.Receipt{Set: "checks", Throughput: receipts.Throughput{Concurrency: 4, JudgmentsPerSecond: 30, Judgments: 30},
		Endpoints: []receipts.EndpointFigures{
			{Endpoint: "http://a:8000", Throughput: receipts.Throughput{Judgments: 20, JudgmentsPerSecond: 20, Latency: receipts.Latency{P50: 0.1}},
				Server: &receipts.Server{PrefixCacheHitRate: &hit, Engines: map[string]receipts.EngineInfo{"0": {}, "1": {}}}},
			{Endpoint: "http://b:8000", Throughput: receipts.Throughput{Judgments: 10, JudgmentsPerSecond: 10},
				Reconciliation: &receipts.Reconciliation{Verdict: "shared server or lost requests"}},
		}}
	got := sweep.PointLine("", rec, "r.json", sweep.ScaleOf(10))
	require.Contains(t, got, "\n    endpoint http://a:8000: 20 judgments  2.00 judgments/s  p50 1.000s  prefix-hit 0.500 (2 engines)\n")
	require.Contains(t, got, "\n    endpoint http://b:8000: 10 judgments  1.00 judgments/s  p50 0.000s  reconciliation: shared server or lost requests\n")
}
