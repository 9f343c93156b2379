package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/term"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/bench/sweep/interrupt"
	"github.com/vetbench/vetbench/bench/sweep/progress"
	"github.com/vetbench/vetbench/bench/sweep/rundir"
	"github.com/vetbench/vetbench/bench/sweep/target"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/fixtures/sets"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/slo"
	"github.com/vetbench/vetbench/receipts/speed"
)

// sweep measures one target into one run directory, pass after pass: what
// vetbench run does, and each side of gate -run. It measures through the
// library (bench, bench/sweep/target) and writes what the benchmark suite writes:
// receipts (every pass kept), bench.txt with the same benchmark-line
// writer, settings.toml.
type sweep struct {
	cmd      string // the command, for messages: run or gate
	label    string // "" for vetbench run; baseline or candidate in gate -run
	cfg      config.Config
	dir      *rundir.Dir
	target   *target.Target
	benchTxt *os.File
	lines    *metrics.Writer
	sets     map[string]fixtures.Set // may be shared between sweeps
	sessions map[string]*bench.Session
	progress *progress.Renderer
	// out gets the target line and, when summaries, one line per point;
	// errors go to errw.
	out, errw io.Writer
	summaries bool
	// signals holds a second Ctrl-C back while a receipt or a line of
	// bench.txt is written (nil in tests).
	signals *interrupt.Handler
}

// openSweep starts the target cfg names (the container twin logs to
// dir/twin.log), then writes settings.toml and opens bench.txt in dir.
// Point lines go to out, errors to e's stderr; cmd and label name the
// sweep in messages.
func openSweep(ctx context.Context, cmd, label string, cfg config.Config, dir *rundir.Dir, e *env, out io.Writer, prog *progress.Renderer, shared map[string]fixtures.Set) (*sweep, error) {
	s := &sweep{cmd: cmd, label: label, cfg: cfg, dir: dir, sets: shared, sessions: map[string]*bench.Session{}, progress: prog,
		out: out, errw: e.stderr, summaries: true, signals: e.signals}
	if cfg.Target.Endpoint == "" && cfg.Twin.Placement != receipts.TargetInProcess {
		log, err := os.OpenFile(dir.File(rundir.TwinLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		target.LogContainersTo(log) // kept open: testcontainers logs until the container is gone
	}
	var err error
	if s.target, err = target.Open(ctx, cfg); err != nil {
		return nil, err
	}
	err = writeNew(dir.File(rundir.SettingsFile), func(w io.Writer) error { return config.WriteSettings(w, cfg) })
	if err == nil {
		s.benchTxt, err = os.OpenFile(dir.File(rundir.BenchFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return nil, errors.Join(err, s.target.Close())
	}
	ep := s.target.Endpoint
	// The identity lines (bench.SpeedConfig), so the gate can refuse to
	// compare other experiments.
	var measured []fixtures.Set
	for _, name := range cfg.Sets {
		set, ok := s.sets[name]
		if !ok {
			if set, err = sets.Open(ctx, name, cfg.Fixtures); err != nil {
				return nil, errors.Join(err, s.benchTxt.Close(), s.target.Close())
			}
			s.sets[name] = set
		}
		measured = append(measured, set)
	}
	sc, err := bench.SpeedConfig(ctx, ep, cfg, measured)
	if err != nil {
		fmt.Fprintf(e.stderr, "vetbench: configuration lines incomplete: %v\n", err)
	}
	s.lines = metrics.NewWriter(s.benchTxt, configPairs(sc)...)
	shown := ep.Receipt().Endpoint
	if eps := ep.Receipt().Endpoints; len(eps) > 1 {
		shown = fmt.Sprintf("%d endpoints: %s", len(eps), strings.Join(eps, ", "))
	}
	line := fmt.Sprintf("target: %s %s", ep.Target.Kind, shown)
	if label != "" {
		line = label + " " + line
	}
	if ts := ep.Target.TimeScale; ts > 0 && ts != 1 {
		line += fmt.Sprintf(" (twin ×%g time scale: figures below in model time, converted from the wall clock)", ts)
	}
	fmt.Fprintln(s.out, line)
	return s, nil
}

// close stops the target and ends bench.txt as go test ends its output:
// PASS when the sweep passed, FAIL when not (a failed point, an
// interrupt). A sweep cut short by a second Ctrl-C has no end line, and
// the speed gate refuses its bench.txt as cut short.
func (s *sweep) close(passed bool) error {
	err := s.target.Close()
	if s.benchTxt != nil {
		err = errors.Join(err, s.signals.Write(func() error { return s.lines.End(passed) }), s.benchTxt.Sync(), s.benchTxt.Close())
		s.benchTxt = nil
	}
	return err
}

// session is the set's session on the target, opened once.
func (s *sweep) session(ctx context.Context, name string) (*bench.Session, error) {
	if sess, ok := s.sessions[name]; ok {
		return sess, nil
	}
	set, ok := s.sets[name]
	if !ok {
		var err error
		if set, err = sets.Open(ctx, name, s.cfg.Fixtures); err != nil {
			return nil, err
		}
		s.sets[name] = set
	}
	sess, err := bench.NewSession(ctx, s.target.Endpoint, set, s.cfg)
	if err != nil {
		return nil, err
	}
	if s.progress != nil {
		sess.OnProgress = s.progress.Observe
	}
	s.sessions[name] = sess
	return sess, nil
}

// errInterrupted ends a sweep at Ctrl-C.
var errInterrupted = errors.New("interrupted")

// pass measures every point once. failed counts the points that did not
// pass (stopped early, more failed judgments than Config.MaxFailed
// accepts): their receipts and benchmark lines are written and the pass
// goes on. err is what ended the pass: errInterrupted (Ctrl-C, whatever
// the network said then), an error wrapping bench.ErrServerDown (nothing
// later can be measured on the target), or anything else (bad
// configuration, an unreachable target, a receipt that could not be
// written).
func (s *sweep) pass(ctx context.Context) (failed int, err error) {
	armed := len(s.cfg.Arms) > 1
	scale := s.target.Endpoint.Target.TimeScale
	for _, name := range s.cfg.Sets {
		sess, err := s.session(ctx, name)
		if err != nil {
			if ctx.Err() != nil {
				return failed, fmt.Errorf("%w (%v)", errInterrupted, err)
			}
			return failed, err
		}
		for _, p := range bench.Points(s.cfg) {
			if ctx.Err() != nil {
				return failed, errInterrupted
			}
			rec, err := sess.Measure(ctx, p)
			if s.progress != nil {
				s.progress.Clear()
			}
			if rec != nil {
				path, _, werr := s.dir.NextReceipt(filepath.Base(bench.ReceiptPath("", name, p)))
				if werr == nil {
					werr = s.signals.Write(func() error { return receipts.WriteFile(path, rec) })
				}
				if werr != nil {
					return failed, fmt.Errorf("write receipt: %w", werr)
				}
				if s.summaries || err != nil {
					fmt.Fprintln(s.out, pointSummary(s.label, rec, path, scale))
				}
				// A point that did not pass has its line too, with its
				// failed-items and discarded-items, as the benchmark
				// suite prints it: what it measured is seen.
				line := func() error {
					return s.lines.Write(p.Name(name, armed), 1, metrics.FromReceipt(rec))
				}
				if werr := s.signals.Write(line); werr != nil {
					return failed, fmt.Errorf("bench.txt: %w", werr)
				}
			}
			if err == nil {
				continue
			}
			where := fmt.Sprintf("vetbench %s: %s%s %s", s.cmd, labelPrefix(s.label), name, p.Describe())
			switch {
			case ctx.Err() != nil:
				fmt.Fprintf(s.errw, "%s: interrupted: %v\n", where, err)
				return failed, errInterrupted
			case errors.Is(err, bench.ErrServerDown):
				// Its failures may have been within the accepted share:
				// then it is the server, not the point, that failed.
				if errors.Is(err, bench.ErrStopped) || errors.Is(err, bench.ErrFailures) || errors.Is(err, slo.ErrMissed) {
					where += ": FAILED"
					failed++
				}
				fmt.Fprintf(s.errw, "%s: %v\n", where, err)
				return failed, err
			case rec == nil || !(errors.Is(err, bench.ErrStopped) || errors.Is(err, bench.ErrFailures) || errors.Is(err, slo.ErrMissed)):
				return failed, fmt.Errorf("%s%s %s: %w", labelPrefix(s.label), name, p.Describe(), err)
			}
			fmt.Fprintf(s.errw, "%s: FAILED: %v\n", where, err)
			failed++
		}
	}
	return failed, nil
}

// writeNew creates path (never replacing a file) and writes it with write.
func writeNew(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	err = write(f)
	return errors.Join(err, f.Close())
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

func armName(a receipts.Arm) string {
	if a == "" {
		return string(receipts.ArmCold)
	}
	return string(a)
}

// configPairs are the identity lines of sc (speed.ConfigLines) as the
// key, value pairs metrics.NewWriter takes.
func configPairs(sc map[string]string) []string {
	var pairs []string
	for _, l := range speed.ConfigLines(sc) {
		k, v, _ := strings.Cut(l, ": ")
		pairs = append(pairs, k, v)
	}
	return pairs
}
