package bench_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/config"
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
	// Ctrl-C kills the process as usual.
	interrupt context.Context

	mu       sync.Mutex
	sets     map[string]fixtures.Set
	sessions map[string]*bench.Session
}

var (
	shared     suite
	sharedOnce sync.Once
)

func TestMain(m *testing.M) {
	flag.Parse()
	interrupt, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(interrupt, stop)
	shared.interrupt = interrupt
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		// benchstat reads these anywhere in the stream: directions and exact counts.
		if err := metrics.WriteUnits(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		// The token units, and what this run measures (model, twin,
		// fixture…) as configuration lines the speed gate compares.
		writeSuiteConfig(os.Stdout, os.Stderr)
	}
	code := m.Run()
	interrupted := interrupt.Err() != nil
	stop()
	if interrupted {
		fmt.Fprintln(os.Stderr, "interrupted: the receipt of the point in flight is partial (see its stopped block)")
	}
	if shared.target != nil {
		if err := shared.target.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close target:", err)
		}
	}
	os.Exit(code)
}

// getSuite opens the target the environment names, once per process.
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
		shared.cfg, shared.err = config.Load(config.Env(os.Getenv))
		if shared.err != nil {
			return
		}
		shared.target, shared.err = target.Open(context.Background(), shared.cfg)
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

// writeReceipt writes a receipt atomically, creating the directory.
func writeReceipt(path string, rec *receipts.Receipt) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := receipts.WriteFile(path, rec); err != nil {
		return fmt.Errorf("write receipt: %w", err)
	}
	return nil
}
