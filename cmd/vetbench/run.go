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

Ctrl-C stops the point in flight: its receipt is written with what was
measured and a stopped block that says why.

Exit status: 0 every point ran to the end, 1 a point stopped early (its
receipt says why), 2 bad configuration or the target could not be reached.

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

	tg, err := benchtarget.Open(ctx, cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "vetbench run: %v\n", err)
		return exitNoVerdict
	}
	defer tg.Close()
	ep := tg.Endpoint
	fmt.Fprintf(e.stdout, "target: %s %s\n", ep.Target.Kind, ep.Receipt().Endpoint)

	code := exitPass
	for _, name := range cfg.Sets {
		set, err := sets.Open(ctx, name, cfg.Fixtures)
		if err != nil {
			fmt.Fprintf(e.stderr, "vetbench run: %v\n", err)
			return exitNoVerdict
		}
		sess, err := bench.NewSession(ctx, ep, set, cfg)
		if err != nil {
			fmt.Fprintf(e.stderr, "vetbench run: %v\n", err)
			return exitNoVerdict
		}
		for _, c := range cfg.Levels {
			for _, arm := range cfg.Arms {
				if ctx.Err() != nil {
					fmt.Fprintln(e.stderr, "vetbench run: interrupted")
					return exitFail
				}
				p := bench.Point{Concurrency: c, Arm: arm, Warmup: cfg.Warmup}
				rec, err := sess.Measure(ctx, p)
				path := bench.ReceiptPath(dir, name, p)
				if rec != nil {
					if werr := receipts.WriteFile(path, rec); werr != nil {
						fmt.Fprintf(e.stderr, "vetbench run: write %s: %v\n", path, werr)
						return exitNoVerdict
					}
					fmt.Fprintln(e.stdout, pointSummary(rec, path))
				}
				if err != nil {
					fmt.Fprintf(e.stderr, "vetbench run: %s c=%d: %v\n", name, c, err)
					if !errors.Is(err, bench.ErrStopped) || rec == nil {
						return exitNoVerdict
					}
					code = exitFail
				}
			}
		}
	}
	return code
}

// pointSummary is one line per point: speed, answers and the self-checks.
func pointSummary(r *receipts.Receipt, path string) string {
	t := r.Throughput
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s c=%-3d %6.2f judgments/s  p50 %.3fs  p95 %.3fs  n=%d", r.Set, t.Concurrency,
		t.JudgmentsPerSecond, t.Latency.P50, t.Latency.P95, t.Judgments)
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
