package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/config"
)

const runUsage = `usage: vetbench run [flags]

Measures each set at each concurrency level on the target the
configuration names (VETBENCH_ENDPOINT for a live vLLM, else the twin; see
the README for every VETBENCH_* variable and the run file) and writes, in
a run directory of its own (a new out/runs/<time>-<id>, out/latest pointing
at it, or the -out named, refused when it holds results unless -force):
receipts/ (one receipt per point; pass k of -count in receipts/pass<k>),
bench.txt (benchmark lines, as go test -bench prints them) and
settings.toml (the effective settings, a run file for the next run).
Settings: defaults < run file (-config) < environment < flags.

Progress goes to stderr: a line redrawn in place on a terminal, a plain
line every 10 s otherwise.

Every line shows the point's failed and discarded judgments. A point
passes when it ran to the end with no more failed judgments than
VETBENCH_MAX_FAILED accepts (none by default, also under
VETBENCH_CONTINUE_ON_ERROR). After failures the server's /health is asked:
a dead engine or a server that no longer answers ends the run (no later
point, no later pass).

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
	count := fs.Int("count", 1, "measure every point `n` times (passes)")
	if err := fs.Parse(args); err != nil {
		return exitNoVerdict
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "vetbench run: unexpected argument %q\n", fs.Arg(0))
		return exitNoVerdict
	}
	if *count < 1 {
		fmt.Fprintf(e.stderr, "vetbench run: -count %d: want at least 1\n", *count)
		return exitNoVerdict
	}
	cfg, err := config.Load(config.Env(e.lookup), flags)
	if err != nil {
		fmt.Fprintf(e.stderr, "vetbench run: %v\n", err)
		return exitNoVerdict
	}
	dir, err := openRunDir(e, cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "vetbench run: %v\n", err)
		return exitNoVerdict
	}
	defer dir.Close()
	prog := newProgress(e.stderr)
	run, err := sweep.Open(ctx, cfg, dir, e.runOptions("run", prog, nil, sweep.Judgments))
	if err != nil {
		return failOpen(ctx, e, "run", err)
	}
	prog.SetTimeScale(run.Scale().Factor)
	prog.Plan(*count * len(run.Steps()))
	fmt.Fprintln(e.stdout, targetLine("", run))
	fmt.Fprintf(e.stderr, "vetbench run: results in %s\n", dir.Path)
	code := exitPass
	defer func() {
		if err := run.Close(code == exitPass); err != nil {
			fmt.Fprintf(e.stderr, "vetbench run: %v\n", err)
		}
		fmt.Fprintf(e.stderr, "vetbench run: results in %s (receipts/, bench.txt, settings.toml)\n", dir.Path)
	}()
	for k := range *count {
		if *count > 1 {
			prog.SetLabel(fmt.Sprintf("pass %d/%d", k+1, *count))
		}
		failed, err := printPass(ctx, e, "run", "", run, prog, e.stdout, true)
		if failed > 0 {
			code = exitFail
		}
		switch {
		case errors.Is(err, sweep.ErrInterrupted):
			fmt.Fprintln(e.stderr, "vetbench run: interrupted")
			code = exitInterrupted
			return code
		case errors.Is(err, sweep.ErrServerDown):
			fmt.Fprintln(e.stderr, "vetbench run: the server is down: no later point is measured")
			code = exitFail
			return code
		case err != nil:
			code = failOpen(ctx, e, "run", err)
			return code
		}
	}
	return code
}

// failOpen is the status of an error before or between points: the
// interrupt's when ctx is cancelled, whatever the network said (never
// "unreachable"), else could not compare.
func failOpen(ctx context.Context, e *env, cmd string, err error) int {
	if ctx.Err() != nil {
		fmt.Fprintf(e.stderr, "vetbench %s: interrupted (%v)\n", cmd, err)
		return exitInterrupted
	}
	fmt.Fprintf(e.stderr, "vetbench %s: %v\n", cmd, err)
	return exitNoVerdict
}
