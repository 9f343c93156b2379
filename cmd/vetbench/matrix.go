package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

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
cancelled), Failed, Skipped (C × (context + output) exceeds the KV cache
in vllm:cache_config_info). Prints the matrix as the published pages show
it; -json and -csv write it (atomically; an existing file is kept unless
-force). Ctrl-C stops the cell in flight and writes what was measured.

Exit status: 0 the matrix ran (whatever its statuses), 1 it stopped early
(what was measured is written), 2 bad configuration or the target could
not be reached.

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
	if !*force {
		for _, p := range []string{*jsonPath, *csvPath} {
			if p == "" {
				continue
			}
			if _, err := os.Stat(p); err == nil {
				return fail(fmt.Errorf("%s exists: give another file, or -force to replace it", p))
			}
		}
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
	if !*quiet {
		r.Log = e.stderr
		fmt.Fprintf(e.stderr, "vetbench matrix: target %s, model %s\n", run.Describe(), r.Model)
	}
	m, runErr := r.Run(ctx, opts)
	if m == nil {
		return fail(runErr)
	}
	if err := matrix.WriteText(e.stdout, m); err != nil {
		return fail(err)
	}
	for _, w := range m.Warnings {
		fmt.Fprintf(e.stderr, "vetbench matrix: note: %s\n", w)
	}
	write := func(path string, fresh, replace func(string, *matrix.Matrix) error) error {
		if path == "" {
			return nil
		}
		w := fresh
		if *force {
			w = replace
		}
		// A second Ctrl-C waits for the file (interrupt.Handler).
		return e.signals.Write(func() error { return w(path, m) })
	}
	werr := errors.Join(
		write(*jsonPath, matrix.WriteFile, matrix.ReplaceFile),
		write(*csvPath, matrix.WriteCSVFile, matrix.ReplaceCSVFile))
	if werr != nil {
		return fail(werr)
	}
	if runErr != nil {
		fmt.Fprintf(e.stderr, "vetbench matrix: %v\n", runErr)
		return exitFail
	}
	return exitPass
}
