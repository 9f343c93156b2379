package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/vetbench/vetbench/bench/grid"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/receipts/matrix"
)

const matrixUsage = `usage: vetbench matrix [flags]

Measures the speed test matrix on the target the environment names
(VETBENCH_ENDPOINT for a live vLLM, else the twin): per context length a
prefill row (prompt tokens ÷ TTFT of a cold request), and per concurrency
C a cell of sustained decode — C streams kept in flight, the window
opened once nothing waits, C run and every stream has tokens, tokens
counted inside it from continuous usage. Each cell's prompt starts with a
tag of its own. Statuses: Valid, Requests queued (a request waited or
fewer than 0.95·C ran), Looped (an exact periodic tail; the cell is
cancelled), Failed, Skipped (the cell's KV, context + C × output when
the server caches the shared prompt, else C × (context + output), exceeds
the KV cache in vllm:cache_config_info, or the -budget is spent). Before measuring it says what will run: the
contexts trimmed to the server's max_model_len, the grid, and how long it
takes (-budget gives the whole matrix a time it must fit). On a
time-scaled twin every wait and figure is model time. Prints the matrix
as the published pages show it; -json and -csv write it (atomically; an
existing file is kept unless -force). -baseline compares it, cell by
cell, with a published matrix (CSV or the page's table) or an earlier
one; -candidate compares a saved matrix instead of measuring. Ctrl-C stops
the cell in flight and writes what was measured.

Exit status: 0 the matrix ran (with -baseline: every status equal, every
figure within -tolerance); 1 worse: a status changed or a figure is beyond
the tolerance, no cell could be measured (every cell Failed or Skipped), or
the run stopped early (what was measured is written); 2 could not
compare: bad configuration, an unreachable target, an unreadable baseline,
or a baseline cell the candidate lacks; 130 interrupted (Ctrl-C; what was
measured is written).

flags:
`

func runMatrix(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		io.WriteString(e.stderr, matrixUsage)
		fs.PrintDefaults()
	}
	flags := config.ScopeFlags(fs, config.ScopeMatrix)
	jsonPath := fs.String("json", "", "write the matrix as JSON (vetbench.matrix/v1) to `file`")
	csvPath := fs.String("csv", "", "write the matrix in the published CSV layout to `file`")
	force := fs.Bool("force", false, "replace -json and -csv files that exist")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	bf := addBaselineFlags(fs)
	if err := fs.Parse(args); err != nil {
		return exitNoVerdict
	}
	fail := func(err error) int {
		fmt.Fprintf(e.stderr, "vetbench matrix: %v\n", err)
		return exitNoVerdict
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := bf.check(fs); err != nil {
		return fail(err)
	}
	base, cand, err := bf.load()
	if err != nil {
		return fail(err)
	}
	if cand != nil {
		return bf.compare(e.stdout, e.stderr, base, cand)
	}
	if err := refuseExisting(*force, *jsonPath, *csvPath); err != nil {
		return fail(err)
	}
	cfg, err := config.Load(config.Env(e.lookup), flags)
	if err != nil {
		return fail(err)
	}
	run, err := sweep.Open(ctx, cfg, nil, e.runOptions("matrix", nil, nil, sweep.Judgments))
	if err != nil {
		return fail(err)
	}
	defer run.Close(true)
	r, opts, err := run.MatrixRunner(ctx)
	if err != nil {
		return fail(err)
	}
	plan, err := r.Plan(opts)
	if err != nil {
		return fail(err)
	}
	printPlan(e.stderr, r, plan, *quiet)
	if !*quiet {
		r.Log = e.stderr
		fmt.Fprintf(e.stderr, "vetbench matrix: target %s, model %s\n", run.Describe(), r.Model)
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
	if err := writeMatrix(e, m, *jsonPath, *csvPath, *force); err != nil {
		return fail(err)
	}
	return matrixVerdict(ctx, e, m, runErr, bf, base)
}

// refuseExisting refuses output files that exist, unless -force: before
// anything is measured.
func refuseExisting(force bool, paths ...string) error {
	for _, p := range paths {
		if p == "" || force {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("%s exists: give another file, or -force to replace it", p)
		}
	}
	return nil
}

// writeMatrix writes m to the -json and -csv files asked for.
func writeMatrix(e *env, m *matrix.Matrix, jsonPath, csvPath string, force bool) error {
	write := func(path string, fresh, replace func(string, *matrix.Matrix) error) error {
		if path == "" {
			return nil
		}
		w := fresh
		if force {
			w = replace
		}
		// A second Ctrl-C waits for the file (interrupt.Handler).
		return e.signals.Write(func() error { return w(path, m) })
	}
	return errors.Join(
		write(jsonPath, matrix.WriteFile, matrix.ReplaceFile),
		write(csvPath, matrix.WriteCSVFile, matrix.ReplaceCSVFile))
}

// printPlan says, before anything is measured, what will run: first the
// notices (trimmed contexts, with the grid that will run), then the time
// scale and the estimate. Notices are printed under -quiet too.
func printPlan(w io.Writer, r *grid.Runner, p grid.Plan, quiet bool) {
	for _, n := range p.Notice {
		fmt.Fprintf(w, "vetbench matrix: NOTE: %s\n", n)
	}
	if quiet {
		return
	}
	if s := r.TimeScale; s > 1 {
		fmt.Fprintf(w, "vetbench matrix: twin ×%g time scale: every wait (window, hold, timeouts, budget) and every figure is model time\n", s)
	}
	fmt.Fprintf(w, "vetbench matrix: %s; estimate %s\n", p.Grid(), p.Estimate.Text(p.Cells, p.Prefill, r.TimeScale))
}

// matrixVerdict is the exit status of a measured matrix: interrupted,
// stopped early, nothing measured, then the baseline's verdict.
func matrixVerdict(ctx context.Context, e *env, m *matrix.Matrix, runErr error, bf *baselineFlags, base *matrix.Matrix) int {
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(e.stderr, "vetbench matrix: interrupted: what was measured is written\n")
		return exitInterrupted
	case runErr != nil:
		fmt.Fprintf(e.stderr, "vetbench matrix: %v\n", runErr)
		return exitFail
	}
	n := m.Counts()
	if measured := n[matrix.Valid] + n[matrix.RequestsQueued] + n[matrix.Looped]; measured == 0 {
		fmt.Fprintf(e.stderr, "vetbench matrix: FAILED: no cell was measured (%d Failed, %d Skipped of %d)\n", n[matrix.Failed], n[matrix.Skipped], len(m.Cells))
		return exitFail
	}
	if base != nil {
		return bf.compare(e.stdout, e.stderr, base, m)
	}
	return exitPass
}
