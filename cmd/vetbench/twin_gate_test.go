package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/speed"
)

// gateCheckEnv opts in to TestGateOnSlowedTwin (make gate-check). It is a
// real measurement on the machine it runs on: a shared, loaded CI machine
// can slow the baseline and the candidate unevenly, so it is not part of
// make test. The decision it exercises is checked deterministically there
// instead: on synthetic samples with a known shift and on recorded twin
// outputs (receipts/speed: TestDecideRecordedTwin).
const gateCheckEnv = "VETBENCH_GATE_CHECK"

// gateCheckOutEnv names a directory to keep every trial's run directories
// in (t1/base, t1/slowed, t1/rerun, …), e.g. to record
// receipts/speed/testdata/twin anew; gateCheckTrialsEnv how many trials to
// run (default 1).
const (
	gateCheckOutEnv    = "VETBENCH_GATE_CHECK_OUT"
	gateCheckTrialsEnv = "VETBENCH_GATE_CHECK_TRIALS"
)

// gateRunFile is the run file of the README's "Gate an upgrade" flow on
// the twin, relative to the module root.
const gateRunFile = "gate.toml"

// The speed gate end to end, exactly as the README's "Gate an upgrade"
// flow runs it on the twin: a baseline `make bench OUT=base
// BENCH_FLAGS='-count 10' CONFIG=gate.toml`, a candidate the same way with
// the baseline's settings and VETBENCH_STUB_SLOWDOWN=1.2, an unchanged
// rerun with the baseline's settings, and `vetbench gate` on each pair: the
// slowed twin must fail (exit 1), the rerun pass (exit 0), in every trial.
// The runs follow one another as a user's would (no interleaving), so
// this also shows that the flow's twin is bound by its modelled time
// rather than by the machine. Each trial logs the gate's verdict and the
// judgments/s and p-value of every point.
func TestGateOnSlowedTwin(t *testing.T) {
	if os.Getenv(gateCheckEnv) == "" {
		t.Skipf("a real measurement: runs the whole suite -count 10 three times per trial; opt in with %s=1 (make gate-check)", gateCheckEnv)
	}
	trials := 1
	if s := os.Getenv(gateCheckTrialsEnv); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "%s", gateCheckTrialsEnv)
		require.Positive(t, n, "%s", gateCheckTrialsEnv)
		trials = n
	}
	dir := os.Getenv(gateCheckOutEnv)
	if dir == "" {
		dir = t.TempDir()
	} else {
		abs, err := filepath.Abs(dir)
		require.NoError(t, err)
		dir = abs
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	bench := func(out string, extra ...string) {
		t.Helper()
		start := time.Now()
		args := []string{"bench", "GO=" + goBin, "OUT=" + out, "BENCH_FLAGS=-count 10"}
		cmd := exec.CommandContext(t.Context(), "make", append(args, extra...)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "VETBENCH_ENDPOINT=")
		log, err := os.Create(out + ".log")
		require.NoError(t, err)
		defer log.Close()
		cmd.Stdout, cmd.Stderr = log, log
		require.NoError(t, cmd.Run(), "make %s: see %s.log", strings.Join(cmd.Args[1:], " "), out)
		t.Logf("%s: %s", filepath.Base(out), time.Since(start).Round(time.Second))
	}
	gate := func(base, cand string) (speed.Report, int) {
		t.Helper()
		stdout, stderr, code := run(t, "gate", "-json", "-benchstat=false", filepath.Join(base, "bench.txt"), filepath.Join(cand, "bench.txt"))
		var rep speed.Report
		require.NoError(t, json.Unmarshal([]byte(stdout), &rep), "gate -json: %s\n%s", stdout, stderr)
		return rep, code
	}
	failed := 0
	for trial := 1; trial <= trials; trial++ {
		td := filepath.Join(dir, fmt.Sprintf("t%d", trial))
		require.NoError(t, os.MkdirAll(td, 0o755))
		base, slowed, rerun := filepath.Join(td, "base"), filepath.Join(td, "slowed"), filepath.Join(td, "rerun")
		bench(base, "CONFIG="+filepath.Join(root, gateRunFile))
		settings := "CONFIG=" + filepath.Join(base, "settings.toml")
		t.Setenv("VETBENCH_STUB_SLOWDOWN", "1.2")
		bench(slowed, settings)
		t.Setenv("VETBENCH_STUB_SLOWDOWN", "")
		bench(rerun, settings)

		slowRep, slowCode := gate(base, slowed)
		rerunRep, rerunCode := gate(base, rerun)
		t.Logf("trial %d: slowed 1.2x: exit %d (%d of %d gated metrics worse); unchanged rerun: exit %d (%d worse)\n%s",
			trial, slowCode, slowRep.Worse, slowRep.Gated, rerunCode, rerunRep.Worse, gateFigures(slowRep, rerunRep))
		if slowCode != exitFail || rerunCode != exitPass {
			failed++
			t.Errorf("trial %d: want the slowed twin to fail (exit %d, got %d) and the rerun to pass (exit %d, got %d); failures: slowed %v, rerun %v",
				trial, exitFail, slowCode, exitPass, rerunCode, slowRep.Failures, rerunRep.Failures)
		}
	}
	t.Logf("%d of %d trials as expected (runs under %s)", trials-failed, trials, dir)
}

// gateFigures is one line per point: judgments/s of the baseline, the
// slowed twin and the rerun (medians), the deltas and the p-values.
func gateFigures(slowed, rerun speed.Report) string {
	rerunBy := map[string]speed.Metric{}
	for _, m := range rerun.Metrics {
		rerunBy[m.Benchmark+" "+m.Unit] = m
	}
	var b strings.Builder
	for _, s := range slowed.Metrics {
		if s.Unit != "judgments/s" || s.Baseline == nil || s.Candidate == nil {
			continue
		}
		r, ok := rerunBy[s.Benchmark+" "+s.Unit]
		if !ok || r.Candidate == nil {
			continue
		}
		fmt.Fprintf(&b, "  %-40s base %7.2f  slowed %7.2f (%s, p=%s)  rerun %7.2f (%s, p=%s)\n", s.Benchmark,
			s.Baseline.Center, s.Candidate.Center, pct(s.Delta), num(s.P), r.Candidate.Center, pct(r.Delta), num(r.P))
	}
	return b.String()
}

func pct(d *float64) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", *d*100)
}

func num(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.3g", *p)
}
