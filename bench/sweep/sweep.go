// Package sweep owns a run: it opens the target a configuration names and
// the run directory the results go to, measures passes over the points
// (sets × levels × arms, or token workloads × levels), writes every receipt
// and benchmark line, says which points failed, and closes with the
// verdict (bench.txt ends PASS or FAIL as go test ends its output).
//
// vetbench run, each side of gate -run, tokens and matrix, and the go test
// suites of bench all measure through it: the definition of a failed point
// (Failed), the one session per set and HTTP client per target, and the
// model-time view of a time-scaled twin's figures (Scale) live here and
// nowhere else. Its edge packages are config (what a run is told), target
// (what it measures), rundir (where results land), progress (what a
// console shows) and interrupt (Ctrl-C).
package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/bench/sweep/rundir"
	"github.com/vetbench/vetbench/bench/sweep/target"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/fixtures/sets"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/speed"
)

// Writer runs one file write so that a second Ctrl-C cannot cut it
// (*interrupt.Handler; nil runs it as is).
type Writer interface {
	Write(write func() error) error
}

// Options say how a run meets its edges. The zero value is a quiet run
// with no signal handling.
type Options struct {
	// Signals holds a second Ctrl-C back while a receipt or a line of
	// bench.txt is written.
	Signals Writer
	// Sets are image sets already built, shared between runs (the two
	// sides of gate -run); sets the run builds are added to it. Nil: the
	// run's own.
	Sets map[string]fixtures.Set
	// OnProgress is given to every session (bench.Session.OnProgress).
	OnProgress func(bench.Progress)
	// OnStep, when set, is told as each step of a pass begins (a console
	// counts the points of the run).
	OnStep func(Step)
	// Warn gets what the run wants the user to know that is no error (the
	// configuration lines incomplete); nil drops it.
	Warn func(string)
	// Kind is what the run measures: judgments (the default), token
	// throughput, or both as the test suite does.
	Kind Kind
}

// Kind is what a run measures, which sets what its bench.txt declares.
type Kind int

const (
	// Judgments: the sets' slices are part of the identity.
	Judgments Kind = iota
	// Tokens: token units declared, no set measured.
	Tokens
	// Suite: what go test -bench ./bench measures, judgments and tokens.
	Suite
)

// Run is one target measured into one run directory.
type Run struct {
	Config config.Config
	// Dir is where results land; nil for a run that writes nothing (the
	// matrix command, the test suite without -bench).
	Dir    *rundir.Dir
	Target *target.Target
	// Lines writes bench.txt (nil without Dir).
	Lines *metrics.Writer
	// Identity is what the run measures as configuration lines
	// (speed.ConfigLines): bench.txt starts with them.
	Identity []string

	opts     Options
	benchTxt *os.File
	twinLog  *pendingLog // the twin's log, dir/twin.log once recorded; nil for a live target
	// transport carries every request of the run's sessions and runners:
	// one per target, its idle connections sized to the most the run
	// holds in flight.
	transport *http.Transport
	mu        sync.Mutex
	sessions  map[string]*bench.Session
}

// Open starts the target cfg names and, when dir is not nil, records the
// run there (Record; the twin, in-process or in a container, logs to
// dir/twin.log).
func Open(ctx context.Context, cfg config.Config, dir *rundir.Dir, o Options) (*Run, error) {
	if o.Sets == nil {
		o.Sets = map[string]fixtures.Set{}
	}
	r := &Run{Config: cfg, opts: o, sessions: map[string]*bench.Session{}}
	var twinLog io.Writer // nil: a live target
	if cfg.Target.Endpoint == "" {
		r.twinLog = &pendingLog{}
		twinLog = r.twinLog
		if dir != nil && cfg.Twin.Placement != receipts.TargetInProcess {
			target.LogContainersTo(r.twinLog) // until the container is gone
		}
	}
	var err error
	if r.transport, err = r.newTransport(ctx); err != nil {
		return nil, err
	}
	if r.Target, err = target.Open(ctx, cfg, twinLog); err != nil {
		if dir != nil && r.twinLog != nil {
			// What testcontainers said of a container that did not start.
			err = errors.Join(err, r.twinLog.attach(dir.File(rundir.TwinLog)))
		}
		return nil, errors.Join(err, r.twinLog.close())
	}
	if dir == nil {
		return r, nil
	}
	if err := r.Record(ctx, dir); err != nil {
		return nil, errors.Join(err, r.Target.Close(), r.twinLog.close())
	}
	return r, nil
}

// newTransport is the run's transport: an idle connection for each request
// the run may hold in flight (judgments, their questions with fan-out,
// token streams, matrix cells).
func (r *Run) newTransport(ctx context.Context) (*http.Transport, error) {
	o := SessionOptions(r.Config)
	n := max(o.InFlight, slices.Max(append([]int{1}, r.Config.Tokens.Levels...)), slices.Max(append([]int{1}, r.Config.Matrix.Levels...)))
	if o.Dispatch == judgments.DispatchFanOut {
		for _, name := range r.Config.Sets {
			set, err := r.Set(ctx, name)
			if err != nil {
				return nil, err
			}
			n = max(n, bench.InFlight(o, set))
		}
	}
	return judgments.NewTransport(n), nil
}

// Record makes dir the run's results directory: it writes settings.toml
// there, opens bench.txt with the run's configuration lines, and the
// twin's log goes to twin.log from then on (what it logged before first).
// A command
// that first checks the target answers (a token runner's probe) records
// only then, so that a target that does not leaves no empty run behind.
func (r *Run) Record(ctx context.Context, dir *rundir.Dir) error {
	if r.Dir != nil {
		return errors.New("run already recorded in " + r.Dir.Path)
	}
	r.Dir = dir
	if err := r.openBenchFile(ctx); err != nil {
		r.Dir = nil
		return err
	}
	if r.twinLog != nil {
		return r.twinLog.attach(dir.File(rundir.TwinLog))
	}
	return nil
}

// openBenchFile writes settings.toml and opens bench.txt, its configuration
// lines first.
func (r *Run) openBenchFile(ctx context.Context) error {
	err := writeNew(r.Dir.File(rundir.SettingsFile), func(w io.Writer) error { return config.WriteSettings(w, r.Config) })
	if err != nil {
		return err
	}
	if r.benchTxt, err = os.OpenFile(r.Dir.File(rundir.BenchFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
		return err
	}
	measured, err := r.measuredSets(ctx)
	if err != nil {
		return errors.Join(err, r.benchTxt.Close())
	}
	sc, err := SpeedConfig(ctx, r.Target.Endpoint, r.Config, measured)
	if err != nil {
		r.warn(fmt.Sprintf("configuration lines incomplete: %v", err))
	}
	r.Identity = speed.ConfigLines(sc)
	var pairs []string
	for _, l := range r.Identity {
		k, v, _ := strings.Cut(l, ": ")
		pairs = append(pairs, k, v)
	}
	r.Lines = metrics.NewWriter(r.benchTxt, pairs...)
	if r.opts.Kind != Judgments {
		r.Lines.AddUnits(decode.Units()...)
	}
	return nil
}

// measuredSets are the judgment sets the run measures (none for a token
// run: their slices are part of the identity only when measured).
func (r *Run) measuredSets(ctx context.Context) ([]fixtures.Set, error) {
	if r.opts.Kind == Tokens {
		return nil, nil
	}
	var out []fixtures.Set
	for _, name := range r.Config.Sets {
		set, err := r.Set(ctx, name)
		if err != nil {
			return nil, err
		}
		out = append(out, set)
	}
	return out, nil
}

func (r *Run) warn(msg string) {
	if r.opts.Warn != nil {
		r.opts.Warn(msg)
	}
}

// Endpoint is what the run measures.
func (r *Run) Endpoint() bench.Endpoint { return r.Target.Endpoint }

// Describe is the target for a console: "inprocess http://…", "live 3
// endpoints: …".
func (r *Run) Describe() string {
	ep := r.Target.Endpoint
	shown := ep.Receipt().Endpoint
	if eps := ep.Receipt().Endpoints; len(eps) > 1 {
		shown = fmt.Sprintf("%d endpoints: %s", len(eps), strings.Join(eps, ", "))
	}
	return fmt.Sprintf("%s %s", ep.Target.Kind, shown)
}

// Close stops the target and ends bench.txt as go test ends its output:
// PASS when the run passed, FAIL when not (a failed point, an interrupt).
// A run cut short by a second Ctrl-C has no end line, and the speed gate
// refuses its bench.txt as cut short. Then the run directory's lock is
// released.
func (r *Run) Close(passed bool) error {
	err := errors.Join(r.Target.Close(), r.twinLog.close())
	r.transport.CloseIdleConnections()
	if r.benchTxt != nil {
		err = errors.Join(err, r.write(func() error { return r.Lines.End(passed) }), r.benchTxt.Sync(), r.benchTxt.Close())
		r.benchTxt = nil
	}
	if r.Dir != nil {
		err = errors.Join(err, r.Dir.Close())
	}
	return err
}

// write runs one write under the signal guard.
func (r *Run) write(w func() error) error {
	if r.opts.Signals == nil {
		return w()
	}
	return r.opts.Signals.Write(w)
}

// Set is the named image set, built once (and shared, see Options.Sets).
func (r *Run) Set(ctx context.Context, name string) (fixtures.Set, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if set, ok := r.opts.Sets[name]; ok {
		return set, nil
	}
	set, err := sets.Open(ctx, name, r.Config.Fixtures)
	if err != nil {
		return fixtures.Set{}, err
	}
	r.opts.Sets[name] = set
	return set, nil
}

// Session is the set's session on the target, probed and tokenized once.
func (r *Run) Session(ctx context.Context, name string) (*bench.Session, error) {
	set, err := r.Set(ctx, name)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if sess, ok := r.sessions[name]; ok {
		return sess, nil
	}
	o := SessionOptions(r.Config)
	o.Transport = r.transport
	sess, err := bench.NewSession(ctx, r.Target.Endpoint, set, o)
	if err != nil {
		return nil, err
	}
	sess.OnProgress = r.opts.OnProgress
	r.sessions[name] = sess
	return sess, nil
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
