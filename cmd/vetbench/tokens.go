package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts/speed"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// runTokens is vetbench tokens: the configured token points measured
// (sweep.Run.MeasureTokens), or a saved candidate, compared with a
// tokens.Baseline when one is given; -pitfall measures the cache pitfall.
func runTokens(ctx context.Context, e *env, args []string) int {
	fs := e.flagSet("tokens")
	flags := config.ScopeFlags(fs, config.ScopeTokens)
	b := &tokens.Baseline{}
	fs.StringVar(&b.Path, "baseline", "", "baseline `file` or directory to compare with")
	fs.StringVar(&b.Candidate, "candidate", "", "compare these receipts (`file` or directory) with -baseline instead of measuring")
	pitfall := fs.Bool("pitfall", false, "measure every point with repeating and with unique prompts; print the inflation")
	fs.Float64Var(&b.Margin, "margin", speed.DefaultMargin, "comparison: relative `change` in the bad direction that fails (0.05 = 5%)")
	fs.StringVar(&b.SaveResult, "save-result", "", "also write the points as vllm bench serve --save-result does, to this new `file`")
	asJSON := fs.Bool("json", false, "print the receipts (or the comparison) as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitNoVerdict
		}
		// Again after the usage it follows, where it is seen.
		return failure(e, "tokens", wantsJSON(args), exitNoVerdict, err.Error())
	}
	fail := func(err error) int { return failure(e, "tokens", *asJSON, exitNoVerdict, err.Error()) }
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := b.Check(); err != nil {
		return fail(err)
	}
	base, cand, err := b.Load()
	if err != nil {
		return fail(err)
	}
	if cand != nil {
		if err := b.Save(cand); err != nil {
			return fail(err)
		}
		if base == nil {
			return exitPass
		}
		return compareTokens(e, b, base, cand, *asJSON, exitPass)
	}
	cfg, err := config.Load(config.Env(e.lookup), flags)
	if err != nil {
		return fail(err)
	}
	if *pitfall {
		return runPitfall(ctx, e, cfg, *asJSON)
	}
	return tokenRun(ctx, e, cfg, b, base, *asJSON)
}

// tokenRun measures the configured token points into a run directory of
// their own and, with a baseline, compares them with it.
func tokenRun(ctx context.Context, e *env, cfg config.Config, b *tokens.Baseline, base []*tokens.Receipt, asJSON bool) (code int) {
	fail := func(err error) int { return failure(e, "tokens", asJSON, exitNoVerdict, err.Error()) }
	run, err := sweep.Open(ctx, cfg, nil, e.runOptions("tokens", nil, nil, sweep.Tokens))
	if err != nil {
		return fail(err)
	}
	// bench.txt ends as go test ends its output: PASS, or FAIL.
	defer func() {
		if err := run.Close(code == exitPass); err != nil {
			fmt.Fprintf(e.stderr, "vetbench tokens: %v\n", err)
		}
	}()
	tr, err := run.TokenRunner(ctx)
	if err != nil {
		return fail(err)
	}
	dir, err := openRunDir(e, cfg)
	if err == nil {
		defer dir.Close()
		err = run.Record(ctx, dir)
	}
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(e.stderr, "vetbench tokens: target %s, model %s; results in %s\n", run.Describe(), judgments.Printable(tr.Model), dir.Path)
	code, recs := measureTokens(ctx, e, run, tr, asJSON)
	if code == exitNoVerdict {
		return code
	}
	if err := b.Save(recs); err != nil {
		return fail(err)
	}
	switch {
	case base != nil:
		return compareTokens(e, b, base, recs, asJSON, code)
	case asJSON:
		if err := writeJSON(e.stdout, tokens.NewMeasured(recs, code == exitPass)); err != nil {
			return fail(err)
		}
	}
	return code
}

// measureTokens measures every token point of run (MeasureTokenPass), a
// line each on stdout (unless asJSON), and returns the status and the
// receipts.
func measureTokens(ctx context.Context, e *env, run *sweep.Run, tr *decode.Runner, asJSON bool) (int, []*tokens.Receipt) {
	recs, failed, err := run.MeasureTokenPass(ctx, tr, func(o sweep.TokenOutcome) {
		if o.Receipt != nil && !asJSON {
			fmt.Fprintln(e.stdout, sweep.TokenLine(o.Receipt, run.Scale()))
		}
		if o.Err != nil && o.Receipt != nil { // without one, the error ends the pass and is said once, below
			fmt.Fprintf(e.stderr, "vetbench tokens: %s c=%d: %v\n", o.Workload, o.Concurrency, o.Err)
		}
	})
	switch {
	case errors.Is(err, sweep.ErrInterrupted):
		fmt.Fprintln(e.stderr, "vetbench tokens: interrupted")
		return exitFail, recs
	case err != nil:
		return failure(e, "tokens", asJSON, exitNoVerdict, err.Error()), recs
	case failed > 0:
		return exitFail, recs
	}
	return exitPass, recs
}

// compareTokens prints the comparison and its verdict and returns the
// exit status: could not compare (2) over worse (1) over the measuring
// status code.
func compareTokens(e *env, b *tokens.Baseline, base, cand []*tokens.Receipt, asJSON bool, code int) int {
	cmp, v, err := b.Judge(base, cand)
	if err != nil {
		return failure(e, "tokens", asJSON, exitNoVerdict, err.Error())
	}
	if err := printReport(e, asJSON, cmp, cmp.WriteText); err != nil {
		fmt.Fprintf(e.stderr, "vetbench tokens: %v\n", err)
		return exitNoVerdict
	}
	switch v.Outcome {
	case tokens.CouldNotCompare:
		return exitNoVerdict
	case tokens.Worse:
		return exitFail
	}
	return code
}

// runPitfall measures the configured ladder with repeating prompts and
// with unique ones (sweep.Pitfall) and prints the inflation, per workload.
func runPitfall(ctx context.Context, e *env, cfg config.Config, asJSON bool) int {
	run, err := sweep.Open(ctx, cfg, nil, e.runOptions("tokens", nil, nil, sweep.Tokens))
	if err != nil {
		return failure(e, "tokens", asJSON, exitNoVerdict, err.Error())
	}
	defer run.Close(true)
	pf, err := run.Pitfall(ctx)
	if err != nil {
		return failure(e, "tokens", asJSON, exitNoVerdict, err.Error())
	}
	rep := decode.NewPitfallReport()
	for _, w := range cfg.Tokens.Workloads {
		ins, err := pf.Measure(ctx, w)
		if err != nil {
			return failure(e, "tokens", asJSON, exitFail, fmt.Sprintf("pitfall %s: %v", w, err))
		}
		rep.Add(w, ins)
		if !asJSON {
			fmt.Fprintf(e.stdout, "workload %s: repeating prompts (a warm ladder) against unique prompts\n", w)
			if err := decode.WriteInflation(e.stdout, ins); err != nil {
				return exitNoVerdict
			}
			fmt.Fprintln(e.stdout)
		}
	}
	if asJSON {
		_ = writeJSON(e.stdout, rep)
	}
	return exitPass
}
