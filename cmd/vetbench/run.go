package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/config"
	benchtarget "github.com/vetbench/vetbench/bench/target"
	"github.com/vetbench/vetbench/fixtures/sets"
	"github.com/vetbench/vetbench/receipts"
)

const runUsage = `usage: vetbench run [flags]

Measures each set at each concurrency level on the target the environment
names (VETBENCH_ENDPOINT for a live vLLM, else the twin; see the README for
every VETBENCH_* variable) and writes one receipt per point to -out. A flag
given overrides its variable.

Every line shows the point's failed and discarded judgments. A point
passes when it ran to the end with no more failed judgments than
VETBENCH_MAX_FAILED accepts (none by default, also under
VETBENCH_CONTINUE_ON_ERROR). After failures the server's /health is asked:
a dead engine or a server that no longer answers ends the run.

Ctrl-C stops the point in flight: its receipt is written with what was
measured and a stopped block that says why. A second Ctrl-C exits at once
(after the receipt being written, if any).

Exit status: 0 every point passed; 1 a point failed (stopped early, too
many failed judgments, the server went down; its receipt says why); 2 bad
configuration or the target could not be reached; 130 interrupted.

flags:
`

func runRun(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		io.WriteString(e.stderr, runUsage)
		fs.PrintDefaults()
	}
	flags := config.Flags(fs)
	if err := fs.Parse(args); err != nil {
		return exitNoVerdict
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "vetbench run: unexpected argument %q\n", fs.Arg(0))
		return exitNoVerdict
	}
	cfg, err := config.Load(config.Env(e.lookup), flags)
	if err != nil {
		fmt.Fprintf(e.stderr, "vetbench run: %v\n", err)
		return exitNoVerdict
	}
	dir := cfg.Out
	if dir == "" {
		dir = "out/receipts"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(e.stderr, "vetbench run: %v\n", err)
		return exitNoVerdict
	}

	// An error while ctx is cancelled is the interrupt's, whatever the
	// network said: never "unreachable".
	fail := func(err error) int {
		if ctx.Err() != nil {
			fmt.Fprintf(e.stderr, "vetbench run: interrupted (%v)\n", err)
			return exitInterrupted
		}
		fmt.Fprintf(e.stderr, "vetbench run: %v\n", err)
		return exitNoVerdict
	}
	tg, err := benchtarget.Open(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	defer tg.Close()
	ep := tg.Endpoint
	fmt.Fprintf(e.stdout, "target: %s %s\n", ep.Target.Kind, ep.Receipt().Endpoint)

	code := exitPass
	for _, name := range cfg.Sets {
		set, err := sets.Open(ctx, name, cfg.Fixtures)
		if err != nil {
			return fail(err)
		}
		sess, err := bench.NewSession(ctx, ep, set, cfg)
		if err != nil {
			return fail(err)
		}
		for _, c := range cfg.Levels {
			for _, arm := range cfg.Arms {
				if ctx.Err() != nil {
					fmt.Fprintln(e.stderr, "vetbench run: interrupted")
					return exitInterrupted
				}
				p := bench.Point{Concurrency: c, Arm: arm, Warmup: cfg.Warmup}
				rec, err := sess.Measure(ctx, p)
				path := bench.ReceiptPath(dir, name, p)
				if rec != nil {
					if werr := e.write(func() error { return receipts.WriteFile(path, rec) }); werr != nil {
						fmt.Fprintf(e.stderr, "vetbench run: write %s: %v\n", path, werr)
						return exitNoVerdict
					}
					fmt.Fprintln(e.stdout, pointSummary(rec, path))
				}
				if err == nil {
					continue
				}
				switch {
				case ctx.Err() != nil:
					fmt.Fprintf(e.stderr, "vetbench run: %s c=%d: interrupted: %v\n", name, c, err)
					return exitInterrupted
				case errors.Is(err, bench.ErrServerDown):
					fmt.Fprintf(e.stderr, "vetbench run: %s c=%d: %v\nvetbench run: the server is down: no later point is measured\n", name, c, err)
					return exitFail
				case rec == nil || !(errors.Is(err, bench.ErrStopped) || errors.Is(err, bench.ErrFailures)):
					fmt.Fprintf(e.stderr, "vetbench run: %s c=%d: %v\n", name, c, err)
					return exitNoVerdict
				}
				fmt.Fprintf(e.stderr, "vetbench run: %s c=%d: FAILED: %v\n", name, c, err)
				code = exitFail
			}
		}
	}
	return code
}

// pointSummary is one line per point: speed, answers and the self-checks.
func pointSummary(r *receipts.Receipt, path string) string {
	t := r.Throughput
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s c=%-3d %6.2f judgments/s  p50 %.3fs  p95 %.3fs  n=%d  failed %d  discarded %d", r.Set, t.Concurrency,
		t.JudgmentsPerSecond, t.Latency.P50, t.Latency.P95, t.Judgments, t.Failed, t.Discarded)
	if t.Failed > 0 {
		fmt.Fprintf(&b, " (%s)", bench.FailureClasses(t))
	}
	if s := r.Server; s != nil && s.PrefixCacheHitRate != nil {
		fmt.Fprintf(&b, "  prefix-hit %.3f", *s.PrefixCacheHitRate)
	}
	if q := r.Quality; q != nil {
		fmt.Fprintf(&b, "  accuracy %s", strconv.FormatFloat(q.Accuracy, 'f', 3, 64))
	}
	if r.Stopped != nil {
		fmt.Fprintf(&b, "  STOPPED at %s (%s)", r.Stopped.Item, r.Stopped.Reason)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "\n    warning: %s", w)
	}
	fmt.Fprintf(&b, "\n    receipt: %s", path)
	return b.String()
}
