package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// gateCheckEnv opts in to TestGateOnSlowedTwin (make gate-check). It is a
// real measurement on the machine it runs on: a shared, loaded CI machine
// can slow the baseline and the candidate unevenly, so it is not part of
// make test. The decision it exercises is checked deterministically there
// instead: on synthetic samples with a known shift and on this test's own
// recorded outputs (receipts/speed: TestDecideRecordedTwin).
const gateCheckEnv = "VETBENCH_GATE_CHECK"

// gateCheckOutEnv names a directory to keep the three benchmark outputs in
// (baseline.txt, unchanged.txt, slowed.txt), e.g. to record them anew as
// receipts/speed/testdata/twin.
const gateCheckOutEnv = "VETBENCH_GATE_CHECK_OUT"

// The speed gate end to end, as a user runs it: the benchmark, -count 10,
// against the twin as it is (baseline, and an unchanged rerun) and slowed
// down by 20%; the gate fails the slowed candidate and passes the unchanged
// one. The twin runs the H100 profile time-scaled, so a pass is mostly
// sleep-bound; the three are interleaved run by run (as gate -run does for
// live servers) so that drift in the machine's load hits all of them alike.
func TestGateOnSlowedTwin(t *testing.T) {
	if os.Getenv(gateCheckEnv) == "" {
		t.Skipf("a real measurement: runs the benchmark 30 times; opt in with %s=1 (make gate-check)", gateCheckEnv)
	}
	dir := os.Getenv(gateCheckOutEnv)
	if dir == "" {
		dir = t.TempDir()
	} else {
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	bin := filepath.Join(t.TempDir(), "bench.test")
	build := exec.CommandContext(t.Context(), filepath.Join(runtime.GOROOT(), "bin", "go"), "test", "-c", "-o", bin, "../../bench")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	variants := []struct {
		name  string
		extra []string
	}{
		{"baseline", nil},
		{"unchanged", nil},
		{"slowed", []string{"VETBENCH_STUB_SLOWDOWN=1.2"}},
	}
	files := map[string]*os.File{}
	for _, v := range variants {
		f, err := os.Create(filepath.Join(dir, v.name+".txt"))
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		files[v.name] = f
	}
	receiptsDir := t.TempDir()
	for round := range 10 {
		for _, v := range variants {
			cmd := exec.CommandContext(t.Context(), bin, "-test.run", "^$", "-test.bench", "Judgments/set=checks/c=16$",
				"-test.benchtime", "1x", "-test.count", "1")
			cmd.Dir = "../../bench"
			cmd.Env = append(os.Environ(),
				"VETBENCH_STUB=inprocess", "VETBENCH_SETS=checks", "VETBENCH_LEVELS=16", "VETBENCH_FIXTURE_SIZE=5",
				"VETBENCH_STUB_PROFILE=h100-gemma4-31b", "VETBENCH_STUB_TIME_SCALE=10",
				"VETBENCH_OUT="+filepath.Join(receiptsDir, fmt.Sprintf("%s-%d", v.name, round)), "VETBENCH_ENDPOINT=")
			cmd.Env = append(cmd.Env, v.extra...)
			cmd.Stdout = files[v.name]
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Run(), "%s: %s", v.name, stderr.String())
		}
	}
	path := func(name string) string { return filepath.Join(dir, name+".txt") }

	stdout, stderr, code := run(t, "gate", "-benchstat=false", path("baseline"), path("slowed"))
	t.Logf("baseline vs slowed 20%%:\n%s", stdout)
	require.Equal(t, exitFail, code, "slowed twin must fail the gate\n%s\n%s", stdout, stderr)
	require.Contains(t, stdout, "judgments/s")

	stdout, stderr, code = run(t, "gate", "-benchstat=false", path("baseline"), path("unchanged"))
	t.Logf("baseline vs unchanged:\n%s", stdout)
	require.Equal(t, exitPass, code, "unchanged twin must pass the gate\n%s\n%s", stdout, stderr)
}
