package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/vetbench/vetbench/bench/grid"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts/matrix"
)

func runMatrix(ctx context.Context, e *env, args []string) int {
	fs := e.flagSet("matrix")
	flags := config.ScopeFlags(fs, config.ScopeMatrix)
	var out matrix.Outputs
	fs.StringVar(&out.JSON, "json", "", "write the matrix as JSON (vetbench.matrix/v1) to `file`")
	fs.StringVar(&out.CSV, "csv", "", "write the matrix in the published CSV layout to `file`")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	bf := baselineFlags(fs)
	if err := fs.Parse(args); err != nil {
		// Again after the usage it follows, where it is seen.
		return failure(e, "matrix", false, exitNoVerdict, err.Error())
	}
	fail := func(err error) int {
		fmt.Fprintf(e.stderr, "vetbench matrix: %v\n", err)
		return exitNoVerdict
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := checkBaseline(fs, bf); err != nil {
		return fail(err)
	}
	base, cand, err := bf.Load()
	if err != nil {
		return fail(err)
	}
	if cand != nil {
		return compareMatrix(e.stdout, e.stderr, bf, base, cand)
	}
	cfg, err := config.Load(config.Env(e.lookup), flags)
	if err != nil {
		return fail(err)
	}
	out.Force = cfg.Force
	if err := out.Refuse(); err != nil {
		return fail(err)
	}
	return matrixRun(ctx, e, cfg, out, *quiet, bf, base)
}

// matrixRun measures the configured matrix into a run directory of its
// own (receipts/matrix.json and .csv, bench.txt, settings.toml, the
// twin's log) and the -json/-csv files asked for, then gives the verdict.
func matrixRun(ctx context.Context, e *env, cfg config.Config, out matrix.Outputs, quiet bool, bf *matrix.Baseline, base *matrix.Matrix) (code int) {
	fail := func(err error) int {
		fmt.Fprintf(e.stderr, "vetbench matrix: %v\n", err)
		return exitNoVerdict
	}
	run, err := sweep.Open(ctx, cfg, nil, e.runOptions("matrix", nil, nil, sweep.Tokens))
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err := run.Close(code == exitPass); err != nil {
			fmt.Fprintf(e.stderr, "vetbench matrix: %v\n", err)
		}
	}()
	r, opts, err := run.MatrixRunner(ctx)
	if err != nil {
		return fail(err)
	}
	plan, err := r.Plan(opts)
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
	printPlan(e.stderr, r, plan, quiet)
	if quiet {
		fmt.Fprintf(e.stderr, "vetbench matrix: results in %s\n", dir.Path)
	} else {
		r.Log = e.stderr
		fmt.Fprintf(e.stderr, "vetbench matrix: target %s, model %s; results in %s\n", run.Describe(), judgments.Printable(r.Model), dir.Path)
	}
	m, runErr := r.Run(ctx, opts)
	if m == nil {
		if ctx.Err() != nil {
			fmt.Fprintf(e.stderr, "vetbench matrix: interrupted: %v\n", runErr)
			return exitInterrupted
		}
		return fail(runErr)
	}
	if err := matrix.WriteText(e.stdout, m); err != nil {
		return fail(err)
	}
	for _, w := range m.Warnings {
		if !slices.Contains(plan.Notice, w) { // said before measuring
			fmt.Fprintf(e.stderr, "vetbench matrix: note: %s\n", w)
		}
	}
	if err := writeMatrix(e, run, m, out); err != nil {
		return fail(err)
	}
	return matrixVerdict(ctx, e, m, runErr, bf, base)
}

// writeMatrix writes the matrix into the run directory, its cells'
// lines into bench.txt, then the -json/-csv files asked for.
func writeMatrix(e *env, run *sweep.Run, m *matrix.Matrix, out matrix.Outputs) error {
	if _, err := run.WriteMatrix(m); err != nil {
		return err
	}
	if err := run.MatrixLines(m); err != nil {
		return err
	}
	return out.Write(m, e.signals.Write)
}

// printPlan says, before anything is measured, what will run: the
// notices (trimmed contexts, with the grid that will run; under -quiet
// too), then the plan's summary.
func printPlan(w io.Writer, r *grid.Runner, p grid.Plan, quiet bool) {
	for _, n := range p.Notice {
		fmt.Fprintf(w, "vetbench matrix: NOTE: %s\n", n)
	}
	for _, line := range p.Summary(r.TimeScale) {
		if !quiet {
			fmt.Fprintf(w, "vetbench matrix: %s\n", line)
		}
	}
}

// matrixVerdict is the exit status of a measured matrix: interrupted,
// stopped early, nothing measured, then the baseline's verdict.
func matrixVerdict(ctx context.Context, e *env, m *matrix.Matrix, runErr error, bf *matrix.Baseline, base *matrix.Matrix) int {
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(e.stderr, "vetbench matrix: interrupted: what was measured is written\n")
		return exitInterrupted
	case runErr != nil:
		fmt.Fprintf(e.stderr, "vetbench matrix: %v\n", runErr)
		return exitFail
	}
	if m.Measured() == 0 {
		n := m.Counts()
		fmt.Fprintf(e.stderr, "vetbench matrix: FAILED: no cell was measured (%d Failed, %d Skipped of %d)\n", n[matrix.Failed], n[matrix.Skipped], len(m.Cells))
		return exitFail
	}
	if base != nil {
		return compareMatrix(e.stdout, e.stderr, bf, base, m)
	}
	return exitPass
}
