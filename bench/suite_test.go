package bench_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/bench/sweep/interrupt"
	"github.com/vetbench/vetbench/bench/sweep/progress"
	"github.com/vetbench/vetbench/bench/sweep/rundir"
	"github.com/vetbench/vetbench/bench/sweep/target"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/fixtures/sets"
	"github.com/vetbench/vetbench/receipts"
)

var update = flag.Bool("update", false, "rewrite the golden receipts (receipts/golden) from this run")

// suite is the target and the sets shared by the benchmarks and stability
// tests of one test process: the configuration is read once (here, at the
// edge), the target starts once (a container build takes seconds), each set
// is generated once.
type suite struct {
	cfg    config.Config
	target *target.Target
	err    error
	// interrupt is cancelled by the first Ctrl-C (SIGINT) or SIGTERM: the
	// run in flight stops, writes its partial receipt and says why; a second
	// Ctrl-C exits at once, after the receipt being written (signals).
	interrupt context.Context
	signals   *interrupt.Handler

	mu       sync.Mutex
	sets     map[string]fixtures.Set
	sessions map[string]*bench.Session

	// A benchmark run's results (nil when only tests run: they write
	// nowhere but t.TempDir): its run directory, bench.txt's writer, and
	// the progress line on stderr.
	run      *rundir.Dir
	benchTxt *os.File
	lines    *metrics.Writer
	progress *progress.Renderer

	// failed lists the points that did not pass but printed their line
	// (failed judgments, a stop): the process exits non-zero for them.
	failed []string
	// down is why the server can no longer be measured: no later point
	// runs.
	down error
}

// fail records a point that did not pass, and says so at once on stderr
// (stdout holds the benchmark lines).
func (s *suite) fail(point string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := fmt.Sprintf("FAIL %s: %v", point, err)
	s.failed = append(s.failed, msg)
	note("%s", msg)
	if errors.Is(err, bench.ErrServerDown) && s.down == nil {
		s.down = fmt.Errorf("the server is down since %s: %w", point, err)
	}
}

// serverDown is non-nil once a point found the server down.
func (s *suite) serverDown() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

var (
	shared     suite
	sharedOnce sync.Once
	configOnce sync.Once
)

func TestMain(m *testing.M) {
	flag.Parse()
	ctx, signals := interrupt.Notify(context.Background())
	signals.OnSecond = func() { fmt.Fprintln(os.Stderr, "interrupted again: exiting now") }
	shared.interrupt, shared.signals = ctx, signals
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		// benchstat reads these anywhere in the stream: directions and exact counts.
		if err := metrics.WriteUnits(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := shared.startRun(); err != nil {
			note("%v", err)
			os.Exit(2)
		}
		// The token units, and what this run measures (model, twin,
		// fixture…) as configuration lines the speed gate compares.
		writeSuiteConfig(os.Stdout)
	}
	code := m.Run()
	interrupted := ctx.Err() != nil
	if shared.progress != nil {
		shared.progress.Clear()
	}
	if interrupted {
		note("interrupted: the receipt of the point in flight is partial (see its stopped block)")
	}
	if shared.target != nil {
		if err := shared.target.Close(); err != nil {
			note("close target: %v", err)
		}
	}
	// A point whose line was printed over failed work fails the run: the
	// line shows its failed-items, this says why, the status says no.
	if len(shared.failed) > 0 {
		note("FAIL: %d point(s) did not pass:\n  %s", len(shared.failed), strings.Join(shared.failed, "\n  "))
		code = max(code, 1)
	}
	if interrupted {
		code = interrupt.ExitCode
	}
	if err := shared.endRun(code == 0); err != nil {
		note("%v", err)
		code = max(code, 1)
	}
	// Only now: a second Ctrl-C until here still exits at once (after a
	// write in flight).
	signals.Stop()
	os.Exit(code)
}

// note writes a line for the user on stderr, which go test merges into its
// output: "[vetbench]" keeps benchfmt from reading "word: value" as a
// configuration line of the benchmarks after it.
func note(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[vetbench] "+format+"\n", args...)
}

// moduleRoot is where the suite takes relative paths from: the test binary
// runs in bench/, the user in the module root.
const moduleRoot = ".."

// loadConfig reads the configuration once: defaults, the run file
// (VETBENCH_CONFIG), the environment; relative paths from the module root.
func (s *suite) loadConfig() error {
	configOnce.Do(func() {
		root, err := filepath.Abs(moduleRoot)
		if err != nil {
			s.err = err
			return
		}
		getenv := func(k string) string {
			v := os.Getenv(k)
			if k == config.EnvConfig && v != "" && !filepath.IsAbs(v) {
				v = filepath.Join(root, v)
			}
			return v
		}
		s.cfg, s.err = config.Load(config.Env(getenv))
		s.cfg.Resolve(root)
	})
	return s.err
}

// startRun prepares a benchmark run's results: its own run directory (the
// one VETBENCH_OUT names, refused when it holds results unless
// VETBENCH_FORCE; else a new out/runs/<id> and out/latest), settings.toml,
// bench.txt, twin.log for testcontainers, and a progress renderer.
func (s *suite) startRun() error {
	if err := s.loadConfig(); err != nil {
		return err
	}
	run, err := rundir.Open(s.cfg.Out, filepath.Join(moduleRoot, rundir.DefaultRoot), s.cfg.Force, time.Now())
	if err != nil {
		return err
	}
	s.run = run
	if run.Warning != "" {
		note("%s", run.Warning)
	}
	if err := writeSettings(run, s.cfg); err != nil {
		return err
	}
	if s.benchTxt, err = os.OpenFile(run.File(rundir.BenchFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
		return err
	}
	s.lines = metrics.NewWriter(s.benchTxt)
	log, err := os.OpenFile(run.File(rundir.TwinLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	target.LogContainersTo(log) // closed when the process exits
	s.progress = progress.ForFile(os.Stderr)
	s.progress.SetTimeScale(s.cfg.Twin.TimeScale)
	note("results in %s", displayPath(run.Path))
	if ts := s.cfg.Twin.TimeScale; s.cfg.Target.Endpoint == "" && ts != 1 {
		note("the twin runs %gx faster than real time: benchmark lines are wall-clock figures; divide rates and multiply seconds by %g for model time", ts, ts)
	}
	return nil
}

// endRun ends bench.txt as go test ends its output (PASS, or FAIL when the
// run did not pass), closes it and says where the results are.
func (s *suite) endRun(passed bool) error {
	if s.run == nil {
		return nil
	}
	err := s.signals.Write(func() error { return s.lines.End(passed) })
	if serr := s.benchTxt.Sync(); err == nil {
		err = serr
	}
	if cerr := s.benchTxt.Close(); err == nil {
		err = cerr
	}
	note("results in %s (receipts/, bench.txt, settings.toml)", displayPath(s.run.Path))
	return err
}

// writeSettings writes the run's effective settings beside its receipts.
func writeSettings(run *rundir.Dir, cfg config.Config) error {
	f, err := os.OpenFile(run.File(rundir.SettingsFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	err = config.WriteSettings(f, cfg)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// displayPath is path from the module root when it lies inside it.
func displayPath(path string) string {
	root, err1 := filepath.Abs(moduleRoot)
	abs, err2 := filepath.Abs(path)
	if err1 == nil && err2 == nil {
		if rel, err := filepath.Rel(root, abs); err == nil && filepath.IsLocal(rel) {
			return rel
		}
	}
	return path
}

// getSuite opens the target the configuration names, once per process.
func getSuite(tb testing.TB) *suite {
	tb.Helper()
	openSuite()
	if shared.err != nil {
		tb.Fatalf("target: %v", shared.err)
	}
	return &shared
}

// openSuite opens the shared target once; shared.err says if it failed.
func openSuite() {
	sharedOnce.Do(func() {
		shared.sets = map[string]fixtures.Set{}
		shared.sessions = map[string]*bench.Session{}
		if shared.loadConfig() != nil {
			return
		}
		shared.target, shared.err = target.Open(context.Background(), shared.cfg)
		if shared.err == nil {
			if eps := shared.target.Endpoint.Receipt().Endpoints; len(eps) > 1 {
				note("judgments spread over %d endpoints: %s (receipts hold each one's figures)", len(eps), strings.Join(eps, ", "))
			}
		}
	})
}

// context is tb's context, also cancelled by Ctrl-C; a test or benchmark
// started after an interrupt is skipped.
func (s *suite) context(tb testing.TB) context.Context {
	tb.Helper()
	if s.interrupt.Err() != nil {
		tb.Skip("interrupted")
	}
	ctx, cancel := context.WithCancel(tb.Context())
	stop := context.AfterFunc(s.interrupt, cancel)
	tb.Cleanup(func() { stop(); cancel() })
	return ctx
}

// set returns the named set, built once.
func (s *suite) set(tb testing.TB, name string) fixtures.Set {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if set, ok := s.sets[name]; ok {
		return set
	}
	set, err := sets.Open(context.Background(), name, s.cfg.Fixtures)
	if err != nil {
		tb.Fatalf("set %s: %v", name, err)
	}
	s.sets[name] = set
	return set
}

// session returns the set's session on the shared target, probed and
// tokenized once.
func (s *suite) session(tb testing.TB, name string) *bench.Session {
	tb.Helper()
	set := s.set(tb, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.sessions[name]; ok {
		return sess
	}
	sess, err := bench.NewSession(context.Background(), s.target.Endpoint, set, s.cfg)
	if err != nil {
		tb.Fatalf("session %s: %v", name, err)
	}
	if s.progress != nil {
		sess.OnProgress = s.progress.Observe
	}
	s.sessions[name] = sess
	return sess
}

// goldenPath is a point's golden receipt.
func (s *suite) goldenPath(set string, c int) string {
	dir := s.cfg.GoldenDir
	if dir == "" {
		dir = filepath.Join(moduleRoot, "receipts", "golden")
	}
	return filepath.Join(dir, fmt.Sprintf("%s_c%d.golden.json", set, c))
}

// writeReceipt writes a point's receipt atomically into the run directory:
// the point's first pass in receipts/, the k-th in receipts/pass<k>, so no
// pass replaces another's. A second Ctrl-C waits for it (or comes before
// it starts).
func (s *suite) writeReceipt(set string, p bench.Point, rec *receipts.Receipt) (string, error) {
	if s.run == nil {
		return "", fmt.Errorf("no run directory: receipts are written only when benchmarking (-bench)")
	}
	path, _, err := s.run.NextReceipt(filepath.Base(bench.ReceiptPath("", set, p)))
	if err != nil {
		return "", err
	}
	if err := s.signals.Write(func() error { return receipts.WriteFile(path, rec) }); err != nil {
		return path, fmt.Errorf("write receipt: %w", err)
	}
	return path, nil
}
