package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/bench/sweep/progress"
	"github.com/vetbench/vetbench/bench/sweep/rundir"
	"github.com/vetbench/vetbench/fixtures"
)

// runOptions are how a command's run meets this process: the signal
// guard, progress on stderr, warnings as "vetbench <cmd>: …" lines.
func (e *env) runOptions(cmd string, prog *progress.Renderer, sets map[string]fixtures.Set, kind sweep.Kind) sweep.Options {
	o := sweep.Options{Sets: sets, Kind: kind, Warn: func(msg string) { fmt.Fprintf(e.stderr, "vetbench %s: %s\n", cmd, msg) }}
	if e.signals != nil {
		o.Signals = e.signals
	}
	if prog != nil {
		o.OnProgress = prog.Observe
		o.OnStep = func(sweep.Step) { prog.Next() }
	}
	return o
}

// targetLine is the line a run prints first: what it measures, and how
// its figures are scaled.
func targetLine(label string, run *sweep.Run) string {
	line := labelPrefix(label) + "target: " + run.Describe()
	if note := run.Scale().Note(); note != "" {
		line += " (" + note + ")"
	}
	return line
}

// printPass measures one pass of run (sweep.Run.MeasurePass), printing a
// line per point to out (every point when all, else only those with an
// error) and what went wrong to e's stderr.
func printPass(ctx context.Context, e *env, cmd, label string, run *sweep.Run, prog *progress.Renderer, out io.Writer, all bool) (failed int, err error) {
	scale := run.Scale()
	return run.MeasurePass(ctx, label, func(o sweep.Outcome) {
		prog.Clear()
		if o.Receipt != nil && (all || o.Err != nil) {
			fmt.Fprintln(out, sweep.PointLine(label, o.Receipt, o.Path, scale))
		}
		if msg := o.Problem(ctx.Err() != nil); msg != "" {
			fmt.Fprintf(e.stderr, "vetbench %s: %s%s %s: %s\n", cmd, labelPrefix(label), o.Set, o.Point.Describe(), msg)
		}
	})
}

// openRunDir is the run directory cfg names (refused when it holds results,
// unless cfg.Force), or a new out/runs/<id> under the working directory.
func openRunDir(e *env, cfg config.Config) (*rundir.Dir, error) {
	d, err := rundir.Open(cfg.Out, rundir.DefaultRoot, cfg.Force, e.now())
	if err != nil {
		return nil, err
	}
	if d.Warning != "" {
		fmt.Fprintln(e.stderr, "vetbench:", d.Warning)
	}
	return d, nil
}

// newProgress renders progress on w: in place when w is a terminal.
func newProgress(w io.Writer) *progress.Renderer {
	f, ok := w.(*os.File)
	return progress.New(w, ok && term.IsTerminal(int(f.Fd())))
}

func labelPrefix(label string) string {
	if label == "" {
		return ""
	}
	return label + " "
}
