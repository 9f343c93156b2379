package sweep

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/slo"
)

// Errors that end a pass.
var (
	// ErrInterrupted ends a pass at Ctrl-C, whatever the network said then.
	ErrInterrupted = errors.New("interrupted")
	// ErrServerDown (bench's): nothing later can be measured on the target.
	ErrServerDown = bench.ErrServerDown
)

// Step is one point of a pass: a set at a point, k-th of N in the pass.
type Step struct {
	Set   string
	Point bench.Point
	// K counts from 1 to N, the points of one pass.
	K, N int
}

// Name is the step's sub-benchmark name; armed adds the arm.
func (s Step) Name(armed bool) string { return s.Point.Name(s.Set, armed) }

// Steps are one pass's points: every set × its points, in order.
func (r *Run) Steps() []Step { return Steps(r.Config) }

// Steps are the points of one pass of a run of cfg, known before the run
// is opened: every set × its points, in order.
func Steps(cfg config.Config) []Step {
	points := Points(cfg)
	var out []Step
	for _, set := range cfg.Sets {
		for _, p := range points {
			out = append(out, Step{Set: set, Point: p})
		}
	}
	for i := range out {
		out[i].K, out[i].N = i+1, len(out)
	}
	return out
}

// Armed says whether point names carry the arm (more than one arm).
func (r *Run) Armed() bool { return armed(r.Config) }

func armed(cfg config.Config) bool { return len(cfg.Arms) > 1 }

// AssuredMetrics are what every pass of a judgment run of cfg that does
// not fail reports whatever the server, known before it is opened: the
// benchmarks of its steps, as bench.txt names them, each with the units
// of metrics.Assured (a point that kept no judgment fails, whatever
// failures are accepted). A gate of such runs tests at least these.
func AssuredMetrics(cfg config.Config) (benchmarks, units []string) {
	for _, st := range Steps(cfg) {
		benchmarks = append(benchmarks, metrics.FullName(st.Name(armed(cfg))))
	}
	return benchmarks, metrics.Assured(cfg.OpenLoop.On(), cfg.SLO.Latency > 0)
}

// Outcome is one measured point: its receipt (nil when nothing ran) and
// where it was written, and its error.
type Outcome struct {
	Step
	Receipt *receipts.Receipt
	Path    string
	Err     error
}

// Failed says the point did not pass: it measured, and stopped early, had
// more failed judgments than the configuration accepts, missed its SLO,
// or its figures broke Little's law. Its receipt and benchmark line are kept: what it measured is seen.
func (o Outcome) Failed() bool { return Failed(o.Receipt, o.Err) }

// Failed is the one definition of a failed point: a receipt, and an error
// that wraps bench.ErrStopped, bench.ErrFailures, slo.ErrMissed or
// audit.ErrLittlesLaw. Any
// other error with a receipt, or an error without one, is not the point's
// failure but the run's (bad configuration, the server, an interrupt).
func Failed(rec *receipts.Receipt, err error) bool {
	return rec != nil && (errors.Is(err, bench.ErrStopped) || errors.Is(err, bench.ErrFailures) || errors.Is(err, slo.ErrMissed) ||
		errors.Is(err, audit.ErrLittlesLaw))
}

// LittlesLaw is the point's error when its Little's-law checks fail by
// audit.Check, the one rule vetbench run and go test -bench both apply
// (through Measure); nil when they hold or the receipt has none. A point
// that failed already is not checked: its failures skew the figures.
func LittlesLaw(rec *receipts.Receipt) error {
	if rec.Checks == nil {
		return nil
	}
	return errors.Join(audit.Check("service time", rec.Checks.LittlesLaw), audit.Check("response time", rec.Checks.LittlesLawResponse))
}

// Measure measures one step once and writes its receipt into the run
// directory (the first pass in receipts/, the k-th in receipts/pass<k>):
// the outcome has the receipt whenever anything ran. Without a run
// directory nothing is written.
func (r *Run) Measure(ctx context.Context, st Step) (Outcome, error) {
	o := Outcome{Step: st}
	sess, err := r.Session(ctx, st.Set)
	if err != nil {
		return o, err
	}
	o.Receipt, o.Err = sess.Measure(ctx, st.Point)
	if o.Err == nil && o.Receipt != nil {
		o.Err = LittlesLaw(o.Receipt)
	}
	if o.Receipt == nil || r.Dir == nil {
		return o, nil
	}
	path, _, err := r.Dir.NextReceipt(filepath.Base(bench.ReceiptPath("", st.Set, st.Point)))
	if err == nil {
		err = r.write(func() error { return receipts.WriteFile(path, o.Receipt) })
	}
	if err != nil {
		return o, fmt.Errorf("write receipt: %w", err)
	}
	o.Path = path
	return o, nil
}

// Line writes a benchmark line to bench.txt (no run directory: nothing).
func (r *Run) Line(benchmark, point string, iters int, ms []metrics.Metric) error {
	if r.Lines == nil {
		return nil
	}
	if err := r.write(func() error { return r.Lines.WriteNamed(benchmark, point, iters, ms) }); err != nil {
		return fmt.Errorf("bench.txt: %w", err)
	}
	return nil
}

// Pass measures every step once, yielding each outcome as it is written
// (its benchmark line too: a point that did not pass has its line, with
// its failed-items, as the benchmark suite prints it). Failed outcomes do
// not end the pass. The error yielded last (with the outcome it came
// with) is what ended it: ErrInterrupted (Ctrl-C), an error wrapping
// bench.ErrServerDown (nothing later can be measured on the target), or
// anything else (bad configuration, an unreachable target, a receipt that
// could not be written).
func (r *Run) Pass(ctx context.Context) iter.Seq2[Outcome, error] {
	return func(yield func(Outcome, error) bool) {
		for _, st := range r.Steps() {
			if ctx.Err() != nil {
				yield(Outcome{Step: st}, ErrInterrupted)
				return
			}
			if r.opts.OnStep != nil {
				r.opts.OnStep(st)
			}
			o, err := r.step(ctx, st)
			if !yield(o, err) || err != nil {
				return
			}
		}
	}
}

// step measures st, writes its receipt and line, and says whether the
// pass ends with it.
func (r *Run) step(ctx context.Context, st Step) (Outcome, error) {
	o, err := r.Measure(ctx, st)
	if err != nil {
		if ctx.Err() != nil {
			return o, fmt.Errorf("%w (%v)", ErrInterrupted, err)
		}
		return o, err
	}
	if o.Receipt != nil {
		if err := r.Line(metrics.Benchmark, st.Name(r.Armed()), 1, metrics.FromReceipt(o.Receipt)); err != nil {
			return o, err
		}
	}
	switch {
	case o.Err == nil:
		return o, nil
	case ctx.Err() != nil:
		return o, ErrInterrupted
	case errors.Is(o.Err, bench.ErrServerDown):
		return o, o.Err
	case !o.Failed():
		return o, fmt.Errorf("%s %s: %w", st.Set, st.Point.Describe(), o.Err)
	}
	return o, nil
}

// MeasurePass measures one Pass, handing each outcome to each (to print)
// before it is counted, and returns how many points did not pass (Failed;
// none while ctx is done) and what ended the pass early: ErrInterrupted
// (ctx done, whatever the network said), an error wrapping ErrServerDown,
// or the run's error, prefixed with label when there is one.
func (r *Run) MeasurePass(ctx context.Context, label string, each func(Outcome)) (failed int, err error) {
	for o, err := range r.Pass(ctx) {
		each(o)
		if o.Err != nil && ctx.Err() == nil && o.Failed() {
			failed++
		}
		switch {
		case err == nil:
		case ctx.Err() != nil || errors.Is(err, ErrInterrupted):
			return failed, ErrInterrupted
		case errors.Is(err, ErrServerDown) || label == "":
			return failed, err
		default:
			return failed, fmt.Errorf("%s %w", label, err)
		}
	}
	return failed, nil
}

// Problem is what went wrong at the outcome's point, for a console line
// ("" when nothing did or nothing is to be said): interrupted, FAILED
// (Failed), or the server found down. interrupted says ctx was done.
func (o Outcome) Problem(interrupted bool) string {
	switch {
	case o.Err == nil:
	case interrupted:
		return fmt.Sprintf("interrupted: %v", o.Err)
	case o.Failed():
		return fmt.Sprintf("FAILED: %v", o.Err)
	case errors.Is(o.Err, ErrServerDown):
		return o.Err.Error()
	}
	return ""
}
