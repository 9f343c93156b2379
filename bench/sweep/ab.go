package sweep

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/bench/sweep/rundir"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// Side is one side of an A/B (gate -run): a file of benchmark output to
// read, a live endpoint, or the twin in this process.
type Side struct {
	Arg      string
	File     string // set when Arg is an existing file
	Endpoint string // a live endpoint; "" with File "" = the twin in-process
}

// Live says the side is measured, not read.
func (s Side) Live() bool { return s.File == "" }

// ParseSide reads a side: an existing file, "inprocess", or an http(s)
// endpoint without credentials (those belong in VETBENCH_API_KEY, never on
// a command line that shows up in logs).
func ParseSide(arg string) (Side, error) {
	if file := BenchFile(arg); file != arg {
		return Side{Arg: arg, File: file}, nil
	}
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return Side{Arg: arg, File: arg}, nil
	}
	if arg == "inprocess" {
		return Side{Arg: arg}, nil
	}
	u, err := url.Parse(arg)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Side{}, fmt.Errorf("%q is neither a file, an http(s) endpoint nor \"inprocess\"", judgments.RedactURL(arg))
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return Side{}, fmt.Errorf("endpoint %s holds credentials or a query; pass the key in the environment (%s)", judgments.RedactURL(arg), config.EnvAPIKey)
	}
	return Side{Arg: arg, Endpoint: arg}, nil
}

// ABNames are the sides' names, in their run directories and messages.
var ABNames = [2]string{"baseline", "candidate"}

// AB is an A/B measured in this process: each live side a run of its own
// (a subdirectory of one run directory), their passes interleaved.
type AB struct {
	Sides [2]Side
	Runs  [2]*Run // nil for a side read from a file
	// Failed is, per side, why a run of it failed (the first): a point
	// that did not pass, a server found down. Its output is kept; the
	// caller decides what a failed side means.
	Failed [2]error
	// Note, when set, is told why a side's run failed, as it happens.
	Note func(string)
}

// OpenAB opens a run for each live side under root (baseline/,
// candidate/), with cfg's settings and the side's target; o for each (its
// Sets shared, so each set is built once).
func OpenAB(ctx context.Context, cfg config.Config, sides [2]Side, root *rundir.Dir, o Options) (*AB, error) {
	ab := &AB{Sides: sides}
	if o.Sets == nil {
		o.Sets = map[string]fixtures.Set{}
	}
	for i, s := range sides {
		if !s.Live() {
			continue
		}
		dir, err := root.Sub(ABNames[i])
		if err != nil {
			return nil, errors.Join(err, ab.Close(ctx))
		}
		c := cfg
		c.Target.Endpoint, c.Target.Replicas = s.Endpoint, nil
		if s.Endpoint == "" {
			c.Twin.Placement = receipts.TargetInProcess
		}
		if ab.Runs[i], err = Open(ctx, c, dir, o); err != nil {
			return nil, errors.Join(fmt.Errorf("%s: %w", ABNames[i], err), ab.Close(ctx))
		}
	}
	return ab, nil
}

// Files are the two outputs to gate: a side's file, or its run's bench.txt.
func (ab *AB) Files() [2]string {
	var out [2]string
	for i, s := range ab.Sides {
		out[i] = s.File
		if r := ab.Runs[i]; r != nil {
			out[i] = r.Dir.File(rundir.BenchFile)
		}
	}
	return out
}

// ABPass is one pass of an A/B: the side, its k-th run of the count, the
// n-th pass of all N.
type ABPass struct {
	Side, K, N, Index int
	Label             string // "baseline 3/10"
	Arg               string // the side's argument (Side.Arg)
}

// Order is the passes of count runs per live side, A B, B A, … (Interleave).
func (ab *AB) Order(count int) []ABPass {
	order := Interleave(count, ab.Sides[0].Live(), ab.Sides[1].Live())
	var out []ABPass
	runs := [2]int{}
	for n, i := range order {
		runs[i]++
		out = append(out, ABPass{Side: i, K: runs[i], N: len(order), Index: n + 1, Label: fmt.Sprintf("%s %d/%d", ABNames[i], runs[i], count),
			Arg: ab.Sides[i].Arg})
	}
	return out
}

// Measure runs the passes in order; pass measures one (a Run.Pass, with
// whatever the caller prints) and returns its failed points and error,
// done is told after each with an estimate of the time left. A failed
// point or a server found down fails the side (Failed); a server found
// down ends the A/B (nothing later can be measured on it); an interrupt or
// any other error ends it with that error.
func (ab *AB) Measure(ctx context.Context, count int, now func() time.Time, pass func(ABPass) (int, error), done func(ABPass, time.Duration)) error {
	passes := ab.Order(count)
	start := now()
	for _, p := range passes {
		bad, err := pass(p)
		switch {
		case ctx.Err() != nil || errors.Is(err, ErrInterrupted):
			return fmt.Errorf("%s: %w", p.Label, ErrInterrupted)
		case errors.Is(err, ErrServerDown):
			ab.fail(p.Side, fmt.Errorf("%s: %w", p.Label, err))
			ab.note(p.Label + " run failed: the server is down: no later run is measured")
			return nil
		case err != nil:
			return fmt.Errorf("%s: %w", p.Label, err)
		case bad > 0:
			err := fmt.Errorf("%s: %d point(s) did not pass (their receipts say why under %s)", p.Label, bad, ab.Runs[p.Side].Dir.Path)
			ab.fail(p.Side, err)
			ab.note(fmt.Sprintf("%s run failed: %v", p.Label, err))
		}
		elapsed := now().Sub(start)
		done(p, time.Duration(float64(elapsed)/float64(p.Index)*float64(p.N-p.Index)))
	}
	return nil
}

func (ab *AB) note(msg string) {
	if ab.Note != nil {
		ab.Note(msg)
	}
}

func (ab *AB) fail(side int, err error) {
	if ab.Failed[side] == nil {
		ab.Failed[side] = err
	}
}

// Close ends each run (bench.txt PASS when its side did not fail and the
// A/B was not interrupted) and stops its target.
func (ab *AB) Close(ctx context.Context) error {
	var errs []error
	for i, r := range ab.Runs {
		if r != nil {
			errs = append(errs, r.Close(ab.Failed[i] == nil && ctx.Err() == nil))
			ab.Runs[i] = nil
		}
	}
	return errors.Join(errs...)
}

// BenchFile is the benchmark output an argument names: a run directory's
// bench.txt (vetbench gate out/runs/a out/runs/b), else the argument.
func BenchFile(arg string) string {
	if st, err := os.Stat(arg); err != nil || !st.IsDir() {
		return arg
	}
	file := filepath.Join(arg, rundir.BenchFile)
	if _, err := os.Stat(file); err != nil {
		return arg
	}
	return file
}

// ParseSides reads the two sides of an A/B (ParseSide), the error naming
// the side.
func ParseSides(a, b string) ([2]Side, error) {
	var sides [2]Side
	for i, arg := range []string{a, b} {
		var err error
		if sides[i], err = ParseSide(arg); err != nil {
			return sides, fmt.Errorf("%s: %w", ABNames[i], err)
		}
	}
	return sides, nil
}

// CheckFiles refuses a URL where files of benchmark output are due (an
// A/B read, not measured); the URL's credentials are never echoed.
func CheckFiles(args []string) error {
	for i, arg := range args {
		if strings.Contains(arg, "://") {
			return fmt.Errorf("%s: %s is a URL: gate reads files of benchmark output (-run measures an endpoint)",
				ABNames[i], judgments.RedactURL(arg))
		}
	}
	return nil
}

// Points is how many points count passes of every live side measure.
func (ab *AB) Points(count int) int {
	n := 0
	for _, r := range ab.Runs {
		if r != nil {
			n += count * len(r.Steps())
		}
	}
	return n
}

// ABConsole is how a measured A/B meets a console (every field but Now
// and Pass may be nil).
type ABConsole struct {
	Now   func() time.Time
	Note  func(string) // why a side's run failed, as it happens
	Start func(*AB)    // before the first pass: what each side measures
	// Pass measures one pass of run (Run.MeasurePass, with whatever the
	// console prints).
	Pass func(p ABPass, run *Run) (failed int, err error)
	Done func(p ABPass, left time.Duration)
}

// MeasureAB opens the live sides under root (OpenAB), measures count
// passes of each in the A B, B A … order (Measure) and closes them: the
// two files to gate and, per side, why a run of it failed (its output is
// kept; the caller decides what a failed side means).
func MeasureAB(ctx context.Context, cfg config.Config, sides [2]Side, root *rundir.Dir, o Options, count int, c ABConsole) ([2]string, [2]error, error) {
	ab, err := OpenAB(ctx, cfg, sides, root, o)
	if err != nil {
		return [2]string{}, [2]error{}, err
	}
	defer ab.Close(ctx)
	ab.Note = c.Note
	files := ab.Files()
	if c.Start != nil {
		c.Start(ab)
	}
	done := c.Done
	if done == nil {
		done = func(ABPass, time.Duration) {}
	}
	err = ab.Measure(ctx, count, c.Now, func(p ABPass) (int, error) { return c.Pass(p, ab.Runs[p.Side]) }, done)
	if cerr := ab.Close(ctx); err == nil {
		err = cerr
	}
	return files, ab.Failed, err
}
