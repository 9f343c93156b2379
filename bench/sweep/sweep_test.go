package sweep_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/bench/sweep/rundir"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/slo"
	"github.com/vetbench/vetbench/receipts/tokens"
	"github.com/vetbench/vetbench/stub"
)

// The one definition of a failed point: measured, and stopped, over its
// failures or its SLO; the server going down or anything else is the
// run's, not the point's.
func TestFailed(t *testing.T) {
	rec := &receipts.Receipt{}
	for _, c := range []struct {
		name string
		rec  *receipts.Receipt
		err  error
		want bool
	}{
		{"passed", rec, nil, false},
		{"stopped", rec, fmt.Errorf("%w at item 3", bench.ErrStopped), true},
		{"failures", rec, fmt.Errorf("%w: 5 of 7", bench.ErrFailures), true},
		{"slo", rec, fmt.Errorf("x: %w", slo.ErrMissed), true},
		{"failures and down", rec, fmt.Errorf("%w; %w", bench.ErrFailures, bench.ErrServerDown), true},
		{"down within the accepted share", rec, fmt.Errorf("%w: engine dead", bench.ErrServerDown), false},
		{"no receipt", nil, bench.ErrStopped, false},
		{"little's law", rec, fmt.Errorf("%w (service time)", audit.ErrLittlesLaw), true},
		{"other", rec, errors.New("reset caches: 404"), false},
	} {
		require.Equal(t, c.want, sweep.Failed(c.rec, c.err), c.name)
	}
}

func TestInterleave(t *testing.T) {
	require.Equal(t, []int{0, 1, 1, 0, 0, 1}, sweep.Interleave(3, true, true), "A B, B A, A B")
	require.Equal(t, []int{0, 0}, sweep.Interleave(2, true, false))
	require.Equal(t, []int{1, 1, 1}, sweep.Interleave(3, false, true))
	require.Empty(t, sweep.Interleave(3, false, false))
}

func TestScale(t *testing.T) {
	for _, f := range []float64{0, 1} {
		s := sweep.ScaleOf(f)
		require.False(t, s.Scaled())
		require.Equal(t, 50.0, s.Rate(50))
		require.Empty(t, s.String())
	}
	s := sweep.ScaleOf(10)
	require.True(t, s.Scaled())
	require.Equal(t, 5.0, s.Rate(50))
	require.Equal(t, 1.5, s.Seconds(0.15))
	require.Equal(t, "model time, twin ×10", s.String())
}

// load is a configuration from the environment given (nothing else).
func load(t *testing.T, env map[string]string) config.Config {
	t.Helper()
	base := map[string]string{"VETBENCH_STUB": "inprocess", "VETBENCH_SETS": "checks", "VETBENCH_FIXTURE_SIZE": "1"}
	for k, v := range env {
		base[k] = v
	}
	cfg, err := config.Load(config.Env(func(k string) string { return base[k] }))
	require.NoError(t, err)
	return cfg
}

// A pass measures every step once, in order, writing each receipt and
// benchmark line; Close ends bench.txt with the verdict.
func TestPass(t *testing.T) {
	cfg := load(t, map[string]string{"VETBENCH_LEVELS": "1,2"})
	dir, err := rundir.Open(filepath.Join(t.TempDir(), "run"), "", false, time.Now())
	require.NoError(t, err)
	run, err := sweep.Open(t.Context(), cfg, dir, sweep.Options{})
	require.NoError(t, err)
	var got []string
	for o, err := range run.Pass(t.Context()) {
		require.NoError(t, err)
		require.NoError(t, o.Err)
		require.False(t, o.Failed())
		require.FileExists(t, o.Path)
		got = append(got, fmt.Sprintf("%d/%d %s", o.K, o.N, o.Name(run.Armed())))
	}
	require.Equal(t, []string{"1/2 set=checks/c=1", "2/2 set=checks/c=2"}, got)
	require.NoError(t, run.Close(true))
	b, err := os.ReadFile(dir.File(rundir.BenchFile))
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(b), "\nBenchmarkJudgments/"))
	require.Contains(t, string(b), "\nidentity: ")
	require.True(t, strings.HasSuffix(string(b), "\nPASS\n"))
	require.FileExists(t, dir.File(rundir.SettingsFile))
}

// A point over failed work is Failed, keeps its receipt and line, and
// with the engine dead ends the pass: no later point.
func TestPassServerDown(t *testing.T) {
	cfg := load(t, map[string]string{"VETBENCH_LEVELS": "1,2", "VETBENCH_STUB_FAULTS": "engine-dead:after=13", "VETBENCH_CONTINUE_ON_ERROR": "1"})
	dir, err := rundir.Open(filepath.Join(t.TempDir(), "run"), "", false, time.Now())
	require.NoError(t, err)
	run, err := sweep.Open(t.Context(), cfg, dir, sweep.Options{})
	require.NoError(t, err)
	var outs []sweep.Outcome
	var last error
	for o, err := range run.Pass(t.Context()) {
		outs, last = append(outs, o), err
	}
	require.Len(t, outs, 1, "no point after the engine died")
	require.True(t, outs[0].Failed(), "%v", outs[0].Err)
	require.ErrorIs(t, last, sweep.ErrServerDown)
	require.NoError(t, run.Close(false))
	b, err := os.ReadFile(dir.File(rundir.BenchFile))
	require.NoError(t, err)
	require.Contains(t, string(b), "failed-items")
	require.True(t, strings.HasSuffix(string(b), "\nFAIL\n"))
}

// The scale comes from the target measured, not the configuration: a
// live server at real time is read in real time beside a stale
// VETBENCH_STUB_TIME_SCALE, and a live endpoint that is a ×10 twin (it
// says so in its /metrics) is read at ×10.
func TestScaleFromTarget(t *testing.T) {
	cfg := load(t, map[string]string{"VETBENCH_STUB_TIME_SCALE": "10"})
	run, err := sweep.Open(t.Context(), cfg, nil, sweep.Options{})
	require.NoError(t, err)
	defer run.Close(true)
	require.Equal(t, 10.0, run.Scale().Factor, "the twin's")

	realTime, err := stub.Start(stub.Config{})
	require.NoError(t, err)
	defer realTime.Close()
	cfg.Target.Endpoint = realTime.URL()
	live, err := sweep.Open(t.Context(), cfg, nil, sweep.Options{})
	require.NoError(t, err)
	require.False(t, live.Scale().Scaled(), "a live endpoint at real time beside a stale VETBENCH_STUB_TIME_SCALE")

	cfg.Target.Endpoint = run.Endpoint().BaseURL
	scaled, err := sweep.Open(t.Context(), cfg, nil, sweep.Options{})
	require.NoError(t, err)
	require.Equal(t, 10.0, scaled.Scale().Factor, "a live endpoint that is a ×10 twin, read from its /metrics")
}

// MeasurePass counts the failed points, hands every outcome over, and
// ends with the server found down; labelled, a run's error says its pass.
func TestMeasurePass(t *testing.T) {
	cfg := load(t, map[string]string{"VETBENCH_LEVELS": "1,2", "VETBENCH_STUB_FAULTS": "engine-dead:after=13", "VETBENCH_CONTINUE_ON_ERROR": "1"})
	dir, err := rundir.Open(filepath.Join(t.TempDir(), "run"), "", false, time.Now())
	require.NoError(t, err)
	run, err := sweep.Open(t.Context(), cfg, dir, sweep.Options{})
	require.NoError(t, err)
	seen := 0
	failed, err := run.MeasurePass(t.Context(), "baseline 1/2", func(sweep.Outcome) { seen++ })
	require.Equal(t, 1, seen)
	require.Equal(t, 1, failed)
	require.ErrorIs(t, err, sweep.ErrServerDown)
	require.NoError(t, run.Close(false))

	// Interrupted: whatever the network said, ErrInterrupted, nothing
	// counted as failed.
	cfg = load(t, map[string]string{"VETBENCH_LEVELS": "1,2"})
	run, err = sweep.Open(t.Context(), cfg, nil, sweep.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	failed, err = run.MeasurePass(ctx, "", func(sweep.Outcome) {})
	require.Zero(t, failed)
	require.ErrorIs(t, err, sweep.ErrInterrupted)
	require.NoError(t, run.Close(false))
}

// MeasureTokenPass measures every token point in order, a receipt each.
func TestMeasureTokenPass(t *testing.T) {
	cfg := load(t, map[string]string{"VETBENCH_TOKENS_WORKLOADS": "text", "VETBENCH_TOKENS_LEVELS": "1,2",
		"VETBENCH_TOKENS_OUTPUT": "4", "VETBENCH_TOKENS_REPEATS": "1"})
	dir, err := rundir.Open(filepath.Join(t.TempDir(), "run"), "", false, time.Now())
	require.NoError(t, err)
	run, err := sweep.Open(t.Context(), cfg, dir, sweep.Options{Kind: sweep.Tokens})
	require.NoError(t, err)
	tr, err := run.TokenRunner(t.Context())
	require.NoError(t, err)
	var names []string
	recs, failed, err := run.MeasureTokenPass(t.Context(), tr, func(o sweep.TokenOutcome) { names = append(names, o.Name()) })
	require.NoError(t, err)
	require.Zero(t, failed)
	require.Len(t, recs, 2)
	require.Equal(t, []string{"workload=text/c=1", "workload=text/c=2"}, names)
	require.NoError(t, run.Close(true))
}

// A token point fails by the same rule as a judgments point: a repeat
// whose requests held their slots 2 s past their latency (as decode's
// Little's-law positive control makes them) fails it, naming the repeat;
// clean repeats, or a gap under audit.MinUnaccounted, pass.
func TestTokenLittlesLaw(t *testing.T) {
	clean := receipts.LittlesLaw{MeanInFlight: 1, Predicted: 1, Samples: 20, WindowSeconds: 10}
	held := receipts.LittlesLaw{MeanInFlight: 1, Predicted: 1.0 / 3, RelError: 2.0 / 3, Samples: 20, WindowSeconds: 30}
	noise := receipts.LittlesLaw{MeanInFlight: 1, Predicted: 0.9, RelError: 0.1, Samples: 2000, WindowSeconds: 10}
	rec := &tokens.Receipt{Runs: []tokens.Run{{LittlesLaw: &clean}, {LittlesLaw: &held}}}
	err := sweep.TokenLittlesLaw(rec)
	require.ErrorIs(t, err, audit.ErrLittlesLaw)
	require.ErrorContains(t, err, "(repeat 2)")
	require.NotContains(t, err.Error(), "(repeat 1)")
	require.NoError(t, sweep.TokenLittlesLaw(&tokens.Receipt{Runs: []tokens.Run{{LittlesLaw: &clean}, {LittlesLaw: &noise}, {}}}))
}

// The twin's log lands in the run directory's twin.log, from its first
// line (what it serves), whether the run had its directory when it
// started the twin or recorded into one later (a token run, once its
// probe answered); a run with no directory writes none.
func TestTwinLogInRunDirectory(t *testing.T) {
	cfg := load(t, nil)
	for _, later := range []bool{false, true} {
		dir, err := rundir.Open(filepath.Join(t.TempDir(), "run"), "", false, time.Now())
		require.NoError(t, err)
		at := dir
		if later {
			at = nil
		}
		run, err := sweep.Open(t.Context(), cfg, at, sweep.Options{})
		require.NoError(t, err)
		if later {
			require.NoFileExists(t, dir.File(rundir.TwinLog), "no directory yet")
			require.NoError(t, run.Record(t.Context(), dir))
		}
		require.NoError(t, run.Close(true))
		b, err := os.ReadFile(dir.File(rundir.TwinLog))
		require.NoError(t, err)
		require.Regexp(t, `^vllmstub \S+: serving \S+ \(profile fast, time scale 1, .*\) on `+regexp.QuoteMeta(run.Target.Endpoint.BaseURL)+"\n", string(b), "later %t", later)
	}
}
