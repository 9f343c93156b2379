package bench_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/sweep/rundir"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/speed"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// benchmarkRun runs this test binary's BenchmarkJudgments on a small
// in-process twin, as go test -bench would, with VETBENCH_OUT=out (none
// when empty) and the extra environment; it returns stdout, stderr and
// the exit code.
func benchmarkRun(t *testing.T, out string, count string, extra ...string) (string, string, int) {
	t.Helper()
	return benchmarkTests(t, "^$", out, count, extra...)
}

// benchmarkTests is benchmarkRun with the tests that match run run first,
// as go test -bench runs them.
func benchmarkTests(t *testing.T, run, out string, count string, extra ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", run, "-test.bench", "Judgments", "-test.benchtime", "1x", "-test.count", count)
	cmd.Env = append(os.Environ(), "VETBENCH_STUB=inprocess", "VETBENCH_SETS=checks", "VETBENCH_LEVELS=1,2",
		"VETBENCH_FIXTURE_SIZE=1", "VETBENCH_ENDPOINT=", "VETBENCH_CONFIG=", "VETBENCH_FORCE=", "VETBENCH_OUT="+out)
	cmd.Env = append(cmd.Env, extra...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return stdout.String(), stderr.String(), code
}

// The tests of this package write nowhere but their temporary directories:
// without -bench there is no run directory, and a receipt has nowhere to go.
// With -bench, go test runs the tests first: the run directory is then the
// benchmarks', and the tests leave it alone.
func TestTestsWriteNoResults(t *testing.T) {
	s := getSuite(t)
	if benchmarking() {
		require.NotNil(t, s.run.Dir, "benchmarking: the benchmarks' run directory")
		return
	}
	require.Nil(t, s.run.Dir, "no run directory unless benchmarking")
	_, err := s.run.WriteTokens(&tokens.Receipt{})
	require.ErrorContains(t, err, "only when benchmarking")
}

// go test -bench without -run runs the tests too, as for any Go package:
// they pass beside a benchmark run, the benchmark lines follow and the run
// directory holds their results.
func TestBenchmarkBesideTests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmark")
	}
	dir := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := benchmarkTests(t, "^TestTestsWriteNoResults$", dir, "1", "VETBENCH_LEVELS=1")
	require.Zero(t, code, "%s\n%s", stdout, stderr)
	require.Regexp(t, `(?m)^BenchmarkJudgments/set=checks/c=1(-\d+)?\s`, stdout)
	require.FileExists(t, filepath.Join(dir, "receipts", "checks_c1.json"))
	require.NotContains(t, stderr, "holds no result")
}

// A benchmark run writes into the directory named, keeps every -count
// pass's receipts, writes bench.txt (benchmark lines and their headers
// only) and settings.toml; a second run into the same directory is refused
// and touches nothing, unless forced.
func TestBenchmarkRunDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmark three times")
	}
	dir := filepath.Join(t.TempDir(), "abs", "baseline")
	stdout, stderr, code := benchmarkRun(t, dir, "2")
	require.Zero(t, code, "%s\n%s", stdout, stderr)
	require.Contains(t, stdout+stderr, "[vetbench] results in "+dir)

	for _, p := range []string{"receipts/checks_c1.json", "receipts/checks_c2.json", "receipts/pass2/checks_c1.json", "receipts/pass2/checks_c2.json"} {
		_, err := receipts.ReadFile(filepath.Join(dir, p))
		require.NoError(t, err, "every pass keeps its receipt: %s", p)
	}
	bench, err := os.ReadFile(filepath.Join(dir, rundir.BenchFile))
	require.NoError(t, err)
	// The configuration lines name what was measured (receipts/speed).
	keys := strings.Join(append(append([]string{speed.KeyIdentity}, speed.IdentityKeys...), speed.ChangeKeys...), "|")
	for _, line := range strings.Split(strings.TrimSpace(string(bench)), "\n") {
		require.Regexp(t, `^(Unit \S+ better=|goos: |goarch: |pkg: |(`+keys+`): |BenchmarkJudgments/set=checks/c=[12](-\d+)?\t|PASS$)`, line)
	}
	require.Regexp(t, `(?m)^identity: [0-9a-f]{16}$`, string(bench))
	require.Equal(t, 4, strings.Count(string(bench), "BenchmarkJudgments/"), "one line per point and pass")
	require.True(t, strings.HasSuffix(string(bench), "\nPASS\n"), "ended as go test ends a run that passed")
	_, err = speed.LoadFile(filepath.Join(dir, rundir.BenchFile))
	require.NoError(t, err, "the speed gate reads it whole")
	settings, err := os.ReadFile(filepath.Join(dir, rundir.SettingsFile))
	require.NoError(t, err)
	require.Contains(t, string(settings), "levels = [1, 2]")

	// Again into the same directory: refused, exit 2, nothing touched.
	before, err := os.ReadFile(filepath.Join(dir, "receipts", "checks_c1.json"))
	require.NoError(t, err)
	stdout, stderr, code = benchmarkRun(t, dir, "1")
	require.Equal(t, 2, code, "%s\n%s", stdout, stderr)
	require.Contains(t, stdout+stderr, "holds results of an earlier run")
	require.Contains(t, stdout+stderr, "-force")
	after, err := os.ReadFile(filepath.Join(dir, "receipts", "checks_c1.json"))
	require.NoError(t, err)
	require.Equal(t, before, after)

	// Forced: replaced; the old second pass is gone with the old run. The
	// run file (VETBENCH_CONFIG) says the levels, with no variable over it.
	runFile := filepath.Join(t.TempDir(), "run.toml")
	require.NoError(t, os.WriteFile(runFile, []byte("levels = [2]\n"), 0o644))
	stdout, stderr, code = benchmarkRun(t, dir, "1", "VETBENCH_FORCE=1", "VETBENCH_LEVELS=", "VETBENCH_CONFIG="+runFile)
	require.Zero(t, code, "%s\n%s", stdout, stderr)
	require.NoDirExists(t, filepath.Join(dir, "receipts", "pass2"))
	require.NoFileExists(t, filepath.Join(dir, "receipts", "checks_c1.json"), "the run file's levels")
	require.FileExists(t, filepath.Join(dir, "receipts", "checks_c2.json"))
	settings, err = os.ReadFile(filepath.Join(dir, rundir.SettingsFile))
	require.NoError(t, err)
	require.Contains(t, string(settings), "# read from run file "+runFile)
}

// A point over failed work prints its line with its failed-items, in
// bench.txt too, and fails the run (exit 1, FAIL at bench.txt's end); once
// the engine is dead no later point is measured, and no receipt of it is
// written. Progress and notes go to stderr, never into bench.txt.
func TestBenchmarkFailedPoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmark")
	}
	dir := filepath.Join(t.TempDir(), "run")
	// 13 healthy requests: the capability check, 4 of the warmup judgment,
	// then 2 judgments of 4 questions; the other 5 of the 7 items fail.
	stdout, stderr, code := benchmarkRun(t, dir, "1", "VETBENCH_STUB_FAULTS=engine-dead:after=13", "VETBENCH_CONTINUE_ON_ERROR=1")
	require.Equal(t, 1, code, "%s\n%s", stdout, stderr)
	require.Regexp(t, `BenchmarkJudgments/set=checks/c=1(-\d+)?\s.*\b5\.000 failed-items`, stdout)
	require.NotRegexp(t, `(?m)^BenchmarkJudgments/set=checks/c=2(-\d+)?\s`, stdout, "no point after the engine died")
	require.Contains(t, stderr, "[vetbench] FAIL BenchmarkJudgments/set=checks/c=1")
	require.Contains(t, stderr, "server down: engine dead")
	require.Contains(t, stdout+stderr, "not measured: the server is down since BenchmarkJudgments/set=checks/c=1")

	bench, err := os.ReadFile(filepath.Join(dir, rundir.BenchFile))
	require.NoError(t, err)
	require.Regexp(t, `(?m)^BenchmarkJudgments/set=checks/c=1(-\d+)?\s.*\b5\.000 failed-items`, string(bench))
	require.NotContains(t, string(bench), "c=2")
	require.NotContains(t, string(bench), "[vetbench]")
	require.True(t, strings.HasSuffix(string(bench), "\nFAIL\n"), string(bench))
	rec, err := receipts.ReadFile(filepath.Join(dir, "receipts", "checks_c1.json"))
	require.NoError(t, err)
	require.Equal(t, 5, rec.Throughput.Failed)
	require.Equal(t, map[string]int{"http_500": 5}, rec.Throughput.FailedByClass)
	require.NoFileExists(t, filepath.Join(dir, "receipts", "checks_c2.json"))
}

func benchPoint(c int) bench.Point { return bench.Point{Concurrency: c} }
