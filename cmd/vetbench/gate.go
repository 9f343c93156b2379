package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/bench/sweep/progress"
	"github.com/vetbench/vetbench/receipts/speed"
)

// execFunc runs name with args in the current directory (go tool
// benchstat); env nil inherits the environment.
type execFunc func(ctx context.Context, env []string, stdout, stderr io.Writer, name string, args ...string) error

func osExec(ctx context.Context, env []string, stdout, stderr io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

type gateOpts struct {
	run       bool
	count     int
	benchstat bool
	asJSON    bool
	policy    speed.Policy
	config    config.Source // the run's settings from the flags, with -run
}

func runGate(ctx context.Context, e *env, args []string) int {
	o, pos, code, ok := parseGate(e, args)
	if !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		return failure(e, "gate", o.asJSON, exitNoVerdict, fmt.Sprintf(format, a...))
	}
	files := []string{sweep.BenchFile(pos[0]), sweep.BenchFile(pos[1])}
	var runErrs [2]error
	if err := sweep.CheckFiles(pos); err != nil && !o.run {
		return fail("%v", err)
	}
	if o.run {
		var err error
		files, runErrs, err = runTargets(ctx, e, o, pos[0], pos[1])
		if ctx.Err() != nil {
			return failure(e, "gate", o.asJSON, exitInterrupted, "interrupted")
		}
		if err != nil {
			return fail("%v", err)
		}
	}
	base, cand, err := speed.LoadPair([2]string(files), runErrs)
	switch {
	case errors.Is(err, speed.ErrCandidateRun):
		return failure(e, "gate", o.asJSON, exitFail, err.Error())
	case err != nil:
		return fail("%v", err)
	}
	if w := sameRun(files[0], files[1]); w != "" && !o.run {
		fmt.Fprintf(e.stderr, "vetbench gate: %s\n", w)
	}
	return decideGate(ctx, e, o, base, cand, files, runErrs)
}

// parseGate reads gate's flags and its two arguments; ok false with the
// exit status when they do not make a gate.
func parseGate(e *env, args []string) (o gateOpts, pos []string, code int, ok bool) {
	fs := e.flagSet("gate")
	fs.BoolVar(&o.run, "run", false, "benchmark targets now instead of reading files")
	fs.IntVar(&o.count, "count", 10, "runs per side with -run")
	// The run's own settings (-sets, -levels, -arms, -warmup, -out, -force,
	// -config), read only with -run.
	o.config = config.Flags(fs)
	fs.BoolVar(&o.benchstat, "benchstat", true, "show go tool benchstat tables")
	fs.BoolVar(&o.asJSON, "json", false, "print the decision as JSON (schema vetbench.gate/v1)")
	o.policy = speed.DefaultPolicy()
	fs.Float64Var(&o.policy.Margin, "margin", o.policy.Margin, "relative `change` in the bad direction that fails when significant (0.05 = 5%)")
	fs.Float64Var(&o.policy.Alpha, "alpha", o.policy.Alpha, "significance level of the Mann-Whitney U test")
	fs.BoolVar(&o.policy.Holm, "holm", o.policy.Holm, "hold -alpha family-wise across all gated metrics (Holm); false tests each metric at -alpha")
	fs.BoolVar(&o.policy.AllowFewRuns, "allow-few-runs", false, "decide on the metrics whose runs can reach significance and list the others as too_few_runs, instead of no verdict (exit 2)")
	fs.BoolVar(&o.policy.AllowIdentityDrift, "allow-identity-drift", false, "compare outputs whose identity configuration (model, twin profile, time scale, fixture, …) differs, listing what differs")
	var minGoodput float64
	fs.Float64Var(&minGoodput, "min-goodput", 0, "fail when the candidate's median goodput (share of judgments within the run's SLO latency, metric "+metrics.Goodput+") is below this `share` on any benchmark, whatever the baseline did; 0 = no floor")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return o, nil, failure(e, "gate", wantsJSON(args), exitNoVerdict, err.Error()), false
	}
	fail := func(format string, a ...any) (gateOpts, []string, int, bool) {
		return o, nil, failure(e, "gate", o.asJSON, exitNoVerdict, fmt.Sprintf(format, a...)), false
	}
	if len(pos) != 2 {
		fs.Usage()
		return fail("want BASELINE and CANDIDATE, got %d argument(s)", len(pos))
	}
	if o.policy.Validate() != nil {
		return fail("-margin must be >= 0 and -alpha in (0,1)")
	}
	if err := o.policy.SetFloor(metrics.Goodput, minGoodput); err != nil {
		return fail("-min-goodput %v", err)
	}
	return o, pos, exitPass, true
}

// decideGate decides, prints the decision and returns the exit status. A
// run that failed never passes (speed.Report.AddRuns): its output may
// hold only the points that ran, or lines over failed work.
func decideGate(ctx context.Context, e *env, o gateOpts, base, cand *speed.Samples, files []string, runErrs [2]error) int {
	rep := speed.Decide(base, cand, o.policy)
	rep.Notes = append(rep.Notes, speed.FellBehind([2]string(files))...)
	refused := rep.Identity.Refused()
	if o.benchstat && !o.asJSON && !refused {
		showBenchstat(ctx, e, base, cand, files)
	}
	rep.AddRuns(runErrs[0], runErrs[1])
	if o.asJSON && refused && runErrs[0] == nil && runErrs[1] == nil {
		// Not the same experiment: there is no gate report to give, so the
		// documented error object, with what differs.
		return failure(e, "gate", true, exitNoVerdict, "identity differs, not the same experiment (-allow-identity-drift compares anyway)",
			rep.Identity.Differs...)
	}
	if err := printReport(e, o.asJSON, rep, rep.WriteText); err != nil {
		fmt.Fprintf(e.stderr, "vetbench gate: %v\n", err)
		return exitNoVerdict
	}
	return [...]int{speed.Pass: exitPass, speed.Slower: exitFail, speed.NoVerdict: exitNoVerdict}[rep.Outcome()]
}

// showBenchstat prints benchstat's tables for the two files. Config keys
// whose values differ between the files (target, endpoint…) are ignored,
// else benchstat would split the tables and compare nothing. It is for
// display only: a failure is a note, never a verdict.
func showBenchstat(ctx context.Context, e *env, base, cand *speed.Samples, files []string) {
	var out, errb bytes.Buffer
	if err := e.exec(ctx, nil, &out, &errb, "go", speed.BenchstatArgs(base, cand, [2]string(files))...); err != nil {
		fmt.Fprintf(e.stderr, "vetbench gate: go tool benchstat unavailable (%v); the decision below does not need it\n%s", err, errb.String())
		return
	}
	e.stdout.Write(out.Bytes())
	io.WriteString(e.stdout, "\n")
}

// runTargets benchmarks the live sides in this process (sweep.AB) and
// returns the two files to gate and, per side, why a run of it failed (a
// point that did not pass, a server that went down: its output is kept and
// gated all the same; the caller decides what a failed side means). With
// two live sides it runs -count rounds of one pass each, in the order A B,
// B A, A B…, so slow drift of the machine or the server hits both; one
// live side runs -count passes. A server found down ends the runs:
// nothing later can be measured on it, and the verdict no longer depends
// on the rest.
func runTargets(ctx context.Context, e *env, o gateOpts, a, b string) ([]string, [2]error, error) {
	var failed [2]error
	if o.count < 1 {
		return nil, failed, fmt.Errorf("-count %d: want at least 1", o.count)
	}
	sides, err := sweep.ParseSides(a, b)
	if err != nil {
		return nil, failed, err
	}
	cfg, err := config.Load(config.Env(e.lookup), o.config)
	if err != nil {
		return nil, failed, err
	}
	if !sides[0].Live() && !sides[1].Live() {
		return []string{sides[0].File, sides[1].File}, failed, nil
	}
	if line := fewRunsAhead(o, cfg, sides); line != "" {
		then := "exit 2"
		if sides[1].Live() {
			then += ", or 1 if the candidate's run fails"
		}
		fmt.Fprintf(e.stderr, "vetbench gate: -count %d: %s; measuring anyway: the runs are written and gated, but no verdict can come of them (%s)\n", o.count, line, then)
	}
	root, err := openRunDir(e, cfg)
	if err != nil {
		return nil, failed, err
	}
	defer root.Close()
	prog := newProgress(e.stderr)
	files, failed, err := sweep.MeasureAB(ctx, cfg, sides, root, e.runOptions("gate", prog, nil, sweep.Judgments), o.count,
		abConsole(ctx, e, prog, o.count, root.Path))
	return files[:], failed, err
}

// fewRunsAhead is why the runs gate -run is about to measure cannot
// decide (speed.FewRunsAhead), "" when they may. What they will test is
// only known once measured, so it counts a lower bound: the metrics every
// run that does not fail reports (sweep.AssuredMetrics; a failed run has
// no verdict, or fails, whatever the statistics). Fewer metrics give a
// looser threshold, so runs that cannot reach it cannot reach the gate's:
// it never warns of runs that could decide. A side read from a file
// counts what it holds of those metrics, with the most runs any has (one
// with fewer reaches less).
func fewRunsAhead(o gateOpts, cfg config.Config, sides [2]sweep.Side) string {
	benchmarks, units := sweep.AssuredMetrics(cfg)
	tested, n, fixed := len(benchmarks)*len(units), [2]int{o.count, o.count}, [2]bool{}
	for i, s := range sides {
		if s.Live() {
			continue
		}
		f, err := speed.LoadFile(s.File)
		if err != nil {
			return "" // the gate says why once the runs are measured
		}
		tested, n[i], fixed[i] = 0, 0, true
		for _, b := range benchmarks {
			for _, u := range units {
				if runs := f.TestedRuns(b, u); runs > 0 {
					tested, n[i] = tested+1, max(n[i], runs)
				}
			}
		}
	}
	return speed.FewRunsAhead(o.policy, tested, n[0], n[1], fixed)
}

// abConsole is gate -run's console: a progress line, a line per side and
// per run on stderr.
func abConsole(ctx context.Context, e *env, prog *progress.Renderer, count int, root string) sweep.ABConsole {
	return sweep.ABConsole{
		Now:  e.now,
		Note: func(msg string) { fmt.Fprintf(e.stderr, "vetbench gate: %s\n", msg) },
		// Said once both sides are open: a side refused (its directory
		// holds an earlier gate's results) has put nothing there.
		Start: func(ab *sweep.AB) {
			fmt.Fprintf(e.stderr, "vetbench gate: results in %s\n", root)
			for i, r := range ab.Runs {
				if r != nil {
					fmt.Fprintln(e.stderr, targetLine(sweep.ABNames[i], r))
				}
			}
			prog.Plan(ab.Points(count))
		},
		Pass: func(p sweep.ABPass, run *sweep.Run) (int, error) {
			prog.SetLabel(p.Label)
			prog.SetTimeScale(run.Scale().Factor)
			// The receipts hold the point lines; one line per run here.
			return printPass(ctx, e, "gate", sweep.ABNames[p.Side], run, prog, e.stderr, false)
		},
		Done: func(p sweep.ABPass, left time.Duration) {
			fmt.Fprintf(e.stderr, "vetbench gate: run %d/%d done (%s, target %s); about %s left\n", p.Index, p.N, p.Label, p.Arg, progress.Duration(left))
		},
	}
}
