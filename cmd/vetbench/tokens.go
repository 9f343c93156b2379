package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"

	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/receipts/speed"
	"github.com/vetbench/vetbench/receipts/tokens"
)

func runTokens(ctx context.Context, e *env, args []string) int {
	fs := e.flagSet("tokens")
	flags := config.ScopeFlags(fs, config.ScopeTokens)
	baseline := fs.String("baseline", "", "baseline `file` or directory to compare with")
	candidate := fs.String("candidate", "", "compare these receipts (`file` or directory) with -baseline instead of measuring")
	pitfall := fs.Bool("pitfall", false, "measure every point with repeating and with unique prompts; print the inflation")
	margin := fs.Float64("margin", speed.DefaultMargin, "comparison: relative `change` in the bad direction that fails (0.05 = 5%)")
	saveResult := fs.String("save-result", "", "also write the points as vllm bench serve --save-result does, to this new `file`")
	asJSON := fs.Bool("json", false, "print the receipts (or the comparison) as JSON")
	if err := fs.Parse(args); err != nil {
		if wantsJSON(args) && !errors.Is(err, flag.ErrHelp) {
			return failure(e, "tokens", true, exitNoVerdict, err.Error())
		}
		return exitNoVerdict
	}
	fail := func(code int, err error) int { return failure(e, "tokens", *asJSON, code, err.Error()) }
	if fs.NArg() > 0 {
		return fail(exitNoVerdict, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *candidate != "" && *baseline == "" && *saveResult == "" {
		return fail(exitNoVerdict, errors.New("-candidate needs -baseline (or -save-result)"))
	}
	if math.IsNaN(*margin) || *margin < 0 {
		return fail(exitNoVerdict, errors.New("-margin must be >= 0"))
	}
	var base []*tokens.Receipt
	if *baseline != "" {
		var err error
		if base, err = tokens.ReadPath(*baseline); err != nil {
			return fail(exitNoVerdict, fmt.Errorf("baseline: %w", err))
		}
	}
	if *candidate != "" {
		cand, err := tokens.ReadPath(*candidate)
		if err != nil {
			return fail(exitNoVerdict, fmt.Errorf("candidate: %w", err))
		}
		if err := saveServeResult(*saveResult, cand); err != nil {
			return fail(exitNoVerdict, err)
		}
		if base == nil {
			return exitPass
		}
		return compareTokens(e, base, cand, *asJSON, exitPass, *margin)
	}

	cfg, err := config.Load(config.Env(e.lookup), flags)
	if err != nil {
		return fail(exitNoVerdict, err)
	}
	if *pitfall {
		return runPitfall(ctx, e, cfg, *asJSON)
	}
	return tokenRun(ctx, e, cfg, base, *asJSON, tokenOutputs{saveResult: *saveResult, margin: *margin})
}

// tokenOutputs are what a run writes and judges besides its receipts: a
// vllm bench serve result file, and the comparison's margin.
type tokenOutputs struct {
	saveResult string
	margin     float64
}

// tokenRun measures the configured token points into a run directory of
// their own and, with a baseline, compares them with it.
func tokenRun(ctx context.Context, e *env, cfg config.Config, base []*tokens.Receipt, asJSON bool, out tokenOutputs) int {
	fail := func(code int, err error) int { return failure(e, "tokens", asJSON, code, err.Error()) }
	run, err := sweep.Open(ctx, cfg, nil, e.runOptions("tokens", nil, nil, sweep.Tokens))
	if err != nil {
		return fail(exitNoVerdict, err)
	}
	code := exitPass
	// bench.txt ends as go test ends its output: PASS, or FAIL.
	defer func() {
		if err := run.Close(code == exitPass); err != nil {
			fmt.Fprintf(e.stderr, "vetbench tokens: %v\n", err)
		}
	}()
	tr, err := run.TokenRunner(ctx)
	if err != nil {
		code = fail(exitNoVerdict, err)
		return code
	}
	dir, err := openRunDir(e, cfg)
	if err == nil {
		defer dir.Close()
		err = run.Record(ctx, dir)
	}
	if err != nil {
		code = fail(exitNoVerdict, err)
		return code
	}
	fmt.Fprintf(e.stderr, "vetbench tokens: target %s, model %s; results in %s\n", run.Describe(), tr.Model, dir.Path)
	var recs []*tokens.Receipt
	if code, recs = measureTokens(ctx, e, run, tr, asJSON); code == exitNoVerdict {
		return code
	}
	if err := saveServeResult(out.saveResult, recs); err != nil {
		code = fail(exitNoVerdict, err)
		return code
	}
	if base != nil {
		code = compareTokens(e, base, recs, asJSON, code, out.margin)
		return code
	}
	if asJSON {
		if err := writeJSON(e.stdout, tokens.NewMeasured(recs, code == exitPass)); err != nil {
			code = fail(exitNoVerdict, err)
		}
	}
	return code
}

// measureTokens measures every token point of run, a line each on stdout
// (unless asJSON), and returns the status and the receipts.
func measureTokens(ctx context.Context, e *env, run *sweep.Run, tr *decode.Runner, asJSON bool) (int, []*tokens.Receipt) {
	code := exitPass
	var recs []*tokens.Receipt
	for _, st := range run.TokenSteps() {
		if ctx.Err() != nil {
			fmt.Fprintln(e.stderr, "vetbench tokens: interrupted")
			return exitFail, recs
		}
		o, err := run.MeasureTokens(ctx, tr, st)
		if err != nil {
			return failure(e, "tokens", asJSON, exitNoVerdict, err.Error()), recs
		}
		if o.Receipt != nil {
			recs = append(recs, o.Receipt)
			if !asJSON {
				fmt.Fprintln(e.stdout, sweep.TokenLine(o.Receipt, run.Scale()))
			}
		}
		if o.Err != nil {
			fmt.Fprintf(e.stderr, "vetbench tokens: %s c=%d: %v\n", st.Workload, st.Concurrency, o.Err)
			if o.Receipt == nil {
				return failure(e, "tokens", asJSON, exitNoVerdict, o.Err.Error()), recs
			}
			code = exitFail
		}
	}
	return code, recs
}

// compareTokens prints the comparison and its verdict and returns the
// exit status: could not compare (2) over worse (1) over the measuring
// status code.
func compareTokens(e *env, base, cand []*tokens.Receipt, asJSON bool, code int, margin float64) int {
	cmp, err := tokens.Compare(base, cand)
	if err != nil {
		return failure(e, "tokens", asJSON, exitNoVerdict, err.Error())
	}
	v := cmp.Judge(margin)
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

// saveServeResult writes the receipts as a vllm bench serve --save-result
// file at path (nothing when path is empty), never over an existing file.
func saveServeResult(path string, recs []*tokens.Receipt) error {
	if path == "" {
		return nil
	}
	if err := tokens.WriteServeResult(path, recs); err != nil {
		return fmt.Errorf("-save-result: %w", err)
	}
	return nil
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
