package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/config"
)

func runRun(ctx context.Context, e *env, args []string) int {
	fs := e.flagSet("run")
	flags := config.Flags(fs)
	count := fs.Int("count", 1, "measure every point `n` times (passes)")
	if err := fs.Parse(args); err != nil {
		// Again after the usage it follows, where it is seen.
		return failure(e, "run", false, exitNoVerdict, err.Error())
	}
	fail := func(err error) int { return failure(e, "run", false, exitNoVerdict, err.Error()) }
	switch {
	case fs.NArg() > 0:
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	case *count < 1:
		return fail(fmt.Errorf("-count %d: want at least 1", *count))
	}
	cfg, err := config.Load(config.Env(e.lookup), flags)
	if err != nil {
		return fail(err)
	}
	dir, err := openRunDir(e, cfg)
	if err != nil {
		return fail(err)
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
