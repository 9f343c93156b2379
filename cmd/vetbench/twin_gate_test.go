package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// The speed gate end to end, as a user runs it: `go test -bench -count 10`
// against the twin, once as it is and once slowed down by 20%; the gate
// fails the slowed candidate and passes an unchanged one. The twin runs the
// H100 profile, time-scaled, so a pass is sleep-bound and the machine's
// own noise stays small.
func TestGateOnSlowedTwin(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmark suite three times (-short)")
	}
	dir := t.TempDir()
	bench := func(name string, extra ...string) string {
		t.Helper()
		out := filepath.Join(dir, name+".txt")
		cmd := exec.CommandContext(t.Context(), filepath.Join(runtime.GOROOT(), "bin", "go"), "test", "../../bench",
			"-run", "^$", "-bench", "Judgments/set=checks/c=16$", "-benchtime", "1x", "-count", "10")
		cmd.Env = append(os.Environ(),
			"VETBENCH_STUB=inprocess", "VETBENCH_SETS=checks", "VETBENCH_LEVELS=16", "VETBENCH_FIXTURE_SIZE=5",
			"VETBENCH_STUB_PROFILE=h100-gemma4-31b", "VETBENCH_STUB_TIME_SCALE=10",
			"VETBENCH_OUT="+filepath.Join(dir, name), "VETBENCH_ENDPOINT=")
		cmd.Env = append(cmd.Env, extra...)
		data, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", data)
		require.NoError(t, os.WriteFile(out, data, 0o644))
		return out
	}
	baseline := bench("baseline")
	unchanged := bench("unchanged")
	slowed := bench("slowed", "VETBENCH_STUB_SLOWDOWN=1.2")

	stdout, stderr, code := run(t, "gate", "-benchstat=false", baseline, slowed)
	require.Equal(t, exitFail, code, "slowed twin must fail the gate\n%s\n%s", stdout, stderr)
	require.Contains(t, stdout, "judgments/s")

	stdout, stderr, code = run(t, "gate", "-benchstat=false", baseline, unchanged)
	require.Equal(t, exitPass, code, "unchanged twin must pass the gate\n%s\n%s", stdout, stderr)
}
