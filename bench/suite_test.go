package bench_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/bench/sweep/interrupt"
	"github.com/vetbench/vetbench/bench/sweep/progress"
	"github.com/vetbench/vetbench/bench/sweep/rundir"
	"github.com/vetbench/vetbench/fixtures"
)

var update = flag.Bool("update", false, "rewrite the golden receipts (receipts/golden) from this run")

// suite is the run shared by the benchmarks and stability tests of one
// test process (bench/sweep): the configuration is read once (here, at the
// edge), the target starts once (a container build takes seconds), each set
// is generated once.
type suite struct {
	cfg config.Config
	// run measures the target; with -bench into a run directory of its own
	// (receipts/, bench.txt, settings.toml), else writing nowhere.
	run *sweep.Run
	err error
	// interrupt is cancelled by the first Ctrl-C (SIGINT) or SIGTERM: the
	// run in flight stops, writes its partial receipt and says why; a second
	// Ctrl-C exits at once, after the receipt being written (signals).
	interrupt context.Context
	signals   *interrupt.Handler
	// progress is the line on stderr while a benchmark measures.
	progress *progress.Renderer

	mu sync.Mutex
	// failed lists the points that did not pass but printed their line
	// (failed judgments, a stop): the process exits non-zero for them.
	failed []string
	// down is why the server can no longer be measured: no later point
	// runs.
	down error
	// refused holds, per set, why the server refuses its requests
	// (bench.ErrRefused): no later point of the set runs, and the run
	// exits 2, since it could not measure what it was asked to.
	refused map[string]error
	// measured counts the benchmark lines written: none, and the run
	// directory holds no result (the end says so).
	measured int
}

// fail records a point that did not pass, and says so at once on stderr
// (stdout holds the benchmark lines).
func (s *suite) fail(point string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := fmt.Sprintf("FAIL %s: %v", point, err)
	s.failed = append(s.failed, msg)
	note("%s", msg)
	if errors.Is(err, sweep.ErrServerDown) && s.down == nil {
		s.down = fmt.Errorf("the server is down since %s: %w", point, err)
	}
}

// refuse records that the server refuses set's requests.
func (s *suite) refuse(set string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused == nil {
		s.refused = map[string]error{}
	}
	if s.refused[set] == nil {
		s.refused[set] = err
		note("not measured: %v", err)
	}
}

// setRefused is non-nil once the server refused the set's requests.
func (s *suite) setRefused(set string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused[set]
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

// benchmarking says go test was asked to run benchmarks (-bench).
func benchmarking() bool {
	f := flag.Lookup("test.bench")
	return f != nil && f.Value.String() != ""
}

func TestMain(m *testing.M) {
	flag.Parse()
	ctx, signals := interrupt.Notify(context.Background())
	signals.OnSecond = func() { fmt.Fprintln(os.Stderr, "interrupted again: exiting now") }
	shared.interrupt, shared.signals = ctx, signals
	if benchmarking() {
		// benchstat reads these anywhere in the stream: directions and exact counts.
		if err := metrics.WriteUnits(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := shared.startRun(); err != nil {
			note("%v", err)
			os.Exit(2)
		}
	}
	code := m.Run()
	interrupted := ctx.Err() != nil
	if shared.progress != nil {
		shared.progress.Clear()
	}
	if interrupted {
		note("interrupted: the receipt of the point in flight is partial (see its stopped block)")
	}
	// A point whose line was printed over failed work fails the run: the
	// line shows its failed-items, this says why, the status says no.
	if len(shared.failed) > 0 {
		note("FAIL: %d point(s) did not pass:\n  %s", len(shared.failed), strings.Join(shared.failed, "\n  "))
		code = max(code, 1)
	}
	if len(shared.refused) > 0 {
		note("could not measure %d set(s): the server refuses their requests (above); exit status 2", len(shared.refused))
		code = max(code, 2)
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

// options are the run's edges in this process.
func (s *suite) options() sweep.Options {
	o := sweep.Options{Signals: s.signals, Kind: sweep.Suite, Warn: func(msg string) { note("%s", msg) }}
	if s.progress != nil {
		o.OnProgress = s.progress.Observe
	}
	return o
}

// startRun opens a benchmark run (bench/sweep): its own run directory (the
// one VETBENCH_OUT names, refused when it holds results unless
// VETBENCH_FORCE; else a new out/runs/<id> and out/latest), settings.toml,
// bench.txt, twin.log for testcontainers, and a progress renderer; it
// prints the run's configuration lines (what it measures: model, twin,
// fixture…), which the speed gate compares. A target that cannot be
// opened prints none (each benchmark then fails on it).
func (s *suite) startRun() error {
	if err := s.loadConfig(); err != nil {
		return err
	}
	dir, err := rundir.Open(s.cfg.Out, filepath.Join(moduleRoot, rundir.DefaultRoot), s.cfg.Force, time.Now())
	if err != nil {
		return err
	}
	if dir.Warning != "" {
		note("%s", dir.Warning)
	}
	s.progress = progress.ForFile(os.Stderr)
	sharedOnce.Do(func() {
		s.run, s.err = sweep.Open(context.Background(), s.cfg, dir, s.options())
	})
	note("results in %s", displayPath(dir.Path))
	if s.err != nil {
		note("no configuration lines: target: %v", s.err)
		return nil
	}
	for _, u := range decode.Units() {
		fmt.Println(u.Line())
	}
	for _, l := range s.run.Identity {
		fmt.Println(l)
	}
	s.announce()
	// go test -count runs each benchmark that many times.
	count := 1
	if f := flag.Lookup("test.count"); f != nil {
		count, _ = strconv.Atoi(f.Value.String())
	}
	s.progress.Plan(max(count, 1) * len(s.run.Steps()))
	return nil
}

// announce says what the figures are and where the judgments go.
func (s *suite) announce() {
	if sc := s.run.Scale(); sc.Scaled() {
		s.progress.SetTimeScale(sc.Factor)
		note("the twin runs %gx faster than real time: benchmark lines are wall-clock figures; divide rates and multiply seconds by %g for model time", sc.Factor, sc.Factor)
	}
	if eps := s.run.Endpoint().Receipt().Endpoints; len(eps) > 1 {
		note("judgments spread over %d endpoints: %s (receipts hold each one's figures)", len(eps), strings.Join(eps, ", "))
	}
}

// endRun stops the target, ends bench.txt as go test ends its output
// (PASS, or FAIL when the run did not pass), closes it and says where the
// results are.
func (s *suite) endRun(passed bool) error {
	if s.run == nil {
		return nil
	}
	err := s.run.Close(passed)
	if s.run.Dir == nil {
		return err
	}
	if s.measured == 0 {
		note("no benchmark ran: %s holds no result", displayPath(s.run.Dir.Path))
	}
	note("results in %s (receipts/, bench.txt, settings.toml)", displayPath(s.run.Dir.Path))
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

// getSuite opens the run the configuration names, once per process.
func getSuite(tb testing.TB) *suite {
	tb.Helper()
	openSuite()
	if shared.err != nil {
		tb.Fatalf("target: %v", shared.err)
	}
	return &shared
}

// openSuite opens the shared run once (writing nowhere: tests only, the
// benchmark run was opened by TestMain); shared.err says if it failed.
func openSuite() {
	sharedOnce.Do(func() {
		if shared.loadConfig() != nil {
			return
		}
		shared.run, shared.err = sweep.Open(context.Background(), shared.cfg, nil, shared.options())
		if shared.err == nil {
			if eps := shared.run.Endpoint().Receipt().Endpoints; len(eps) > 1 {
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
	set, err := s.run.Set(context.Background(), name)
	if err != nil {
		tb.Fatalf("set %s: %v", name, err)
	}
	return set
}

// session returns the set's session on the shared target, probed and
// tokenized once.
func (s *suite) session(tb testing.TB, name string) *bench.Session {
	tb.Helper()
	sess, err := s.run.Session(context.Background(), name)
	if err != nil {
		tb.Fatalf("session %s: %v", name, err)
	}
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

// line writes a result line to bench.txt, as go test prints it, unless the
// benchmark failed or skipped (go test prints none then).
func (s *suite) line(b *testing.B, benchmark, point string, iters int, ms []metrics.Metric) {
	if b.Failed() || b.Skipped() {
		return
	}
	if err := s.run.Line(benchmark, point, iters, ms); err != nil {
		b.Fatal(err)
	}
	s.mu.Lock()
	s.measured++
	s.mu.Unlock()
}
