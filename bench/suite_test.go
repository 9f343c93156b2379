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

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/config"
	"github.com/vetbench/vetbench/bench/interrupt"
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/bench/target"
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
	fmt.Fprintln(os.Stderr, msg)
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
	}
	code := m.Run()
	interrupted := ctx.Err() != nil
	signals.Stop()
	if interrupted {
		fmt.Fprintln(os.Stderr, "interrupted: the receipt of the point in flight is partial (see its stopped block)")
	}
	if shared.target != nil {
		if err := shared.target.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close target:", err)
		}
	}
	// A point whose line was printed over failed work fails the run: the
	// line shows its failed-items, this says why, the status says no.
	if len(shared.failed) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d point(s) did not pass:\n  %s\n", len(shared.failed), strings.Join(shared.failed, "\n  "))
		code = max(code, 1)
	}
	if interrupted {
		code = interrupt.ExitCode
	}
	os.Exit(code)
}

// getSuite opens the target the environment names, once per process.
func getSuite(tb testing.TB) *suite {
	tb.Helper()
	sharedOnce.Do(func() {
		shared.sets = map[string]fixtures.Set{}
		shared.sessions = map[string]*bench.Session{}
		shared.cfg, shared.err = config.Load(config.Env(os.Getenv))
		if shared.err != nil {
			return
		}
		shared.target, shared.err = target.Open(context.Background(), shared.cfg)
	})
	if shared.err != nil {
		tb.Fatalf("target: %v", shared.err)
	}
	return &shared
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
	s.sessions[name] = sess
	return sess
}

// outDir is where receipts go: VETBENCH_OUT, else out/receipts in the module.
func (s *suite) outDir() string {
	if s.cfg.Out != "" {
		return s.cfg.Out
	}
	return filepath.Join("..", "out", "receipts")
}

// goldenPath is a point's golden receipt.
func (s *suite) goldenPath(set string, c int) string {
	dir := s.cfg.GoldenDir
	if dir == "" {
		dir = filepath.Join("..", "receipts", "golden")
	}
	return filepath.Join(dir, fmt.Sprintf("%s_c%d.golden.json", set, c))
}

// writeReceipt writes a receipt atomically, creating the directory; a
// second Ctrl-C waits for it (or comes before it starts).
func (s *suite) writeReceipt(path string, rec *receipts.Receipt) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := s.signals.Write(func() error { return receipts.WriteFile(path, rec) }); err != nil {
		return fmt.Errorf("write receipt: %w", err)
	}
	return nil
}
