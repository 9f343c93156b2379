package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/judgments/errclass"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/quality"
	"github.com/vetbench/vetbench/receipts/slo"
	"github.com/vetbench/vetbench/receipts/tally"
)

// HarnessVersion names this harness in every receipt's identity: a change in
// how prompts are built or answers scored must bump it.
const HarnessVersion = "vetbench/0.1"

// Errors of Measure; a point's error may wrap several.
var (
	// ErrStopped wraps the reason of a run that ended before its set did.
	ErrStopped = errors.New("run stopped early")
	// ErrFailures: the run went through its set (continue on error) but
	// more of its judgments failed than config.Options.MaxFailed accepts.
	ErrFailures = errors.New("judgments failed")
	// ErrServerDown: after the point's failures the server's /health
	// answered 503 (engine dead) or nothing answered. Nothing later can be
	// measured on it: a ladder ends here.
	ErrServerDown = errors.New("server down")
)

// Session is one endpoint and one set, ready to be measured: the server
// probed and the controls tokenized once per run, never per judgment.
type Session struct {
	Endpoint Endpoint
	Options  Options
	Set      fixtures.Set
	Client   *judgments.Client
	Info     probe.Info
	Controls judgments.Controls
	// control is the HTTP client of the probe, resets, scrapes and health
	// checks: the judgments' connections, each call bounded by
	// Options.ControlTimeout.
	control *http.Client
	// Notes are facts about the session worth a line in the receipt.
	Notes []string
	// Fallback says why the session scores in another mode than the one
	// configured (the server ignores logprob_token_ids); empty when not.
	Fallback string
	// OnProgress, when set, is told how far each measured window has got
	// (see Progress); the caller renders it. It must be cheap.
	OnProgress func(Progress)

	hc       *http.Client
	idPrefix string
	// replicas are the endpoints judgments are spread over, the first
	// endpoint first; nil for one (replicas.go).
	replicas []replica

	// Test seams (export_test.go): the pool's and sampler's clock, the
	// pool's held hook, and a wrapper around the judge in the window.
	clock func() time.Time
	held  func(i int)
	wrap  func(Judge) Judge
}

// NewSession probes the endpoint and pins the control tokens. o gives the
// run settings (scoring mode, timeouts, what the receipt pins).
func NewSession(ctx context.Context, ep Endpoint, set fixtures.Set, o Options) (*Session, error) {
	if ep.Target.Kind == "" {
		return nil, errors.New("endpoint: no target kind (live, container or inprocess) for the receipts")
	}
	if err := set.Spec.Validate(); err != nil {
		return nil, err
	}
	ep.BaseURL = strings.TrimRight(ep.BaseURL, "/")
	tr := o.Transport
	if tr == nil {
		tr = judgments.NewTransport(InFlight(o, set))
	}
	hc := &http.Client{Transport: tr}
	control := &http.Client{Transport: tr, Timeout: o.controlDeadline()}
	kind := ep.Target.Kind
	info, err := probe.Server(ctx, control, ep.BaseURL, ep.Authorize)
	if err != nil {
		return nil, fmt.Errorf("probe %s target: %w", kind, err)
	}
	model := ep.Model
	if model == "" && len(info.Served) > 0 {
		model = info.Served[0].ID
	}
	if err := info.Check(model); err != nil {
		return nil, fmt.Errorf("%s target: %w", kind, err)
	}
	s := &Session{Endpoint: ep, Options: o, Set: set, Info: info, control: control, Notes: append(append([]string(nil), ep.Notes...), info.Notes...),
		hc: hc, idPrefix: "vetbench-" + newRunID()[:8]}
	s.Client = s.newClient(model, o.Mode)
	s.Controls, err = s.Client.Tokenize(ctx, set.Spec.Controls())
	if err != nil {
		// Text-matched scoring needs no ids; a server without /tokenize is
		// fine there, and the receipt says the ids are not pinned.
		if o.Mode != judgments.ModeTopLogprobs || !errors.Is(err, judgments.ErrNoTokenizer) {
			return nil, fmt.Errorf("pin control tokens: %w", err)
		}
		s.Controls = nil
		s.Notes = append(s.Notes, "server has no /tokenize: control token ids not pinned (top_logprobs matches on text)")
	}
	if err := s.checkTokenIDs(ctx, hc, model); err != nil {
		return nil, fmt.Errorf("%s target: %w", kind, err)
	}
	if err := s.addReplicas(ctx, model); err != nil {
		return nil, fmt.Errorf("%s target: %w", kind, err)
	}
	return s, nil
}

// Point is one measured point of a sweep.
type Point struct {
	// Concurrency is the closed loop's judgments in flight; in an open
	// loop (Rate > 0) the cap on them, 0 for none.
	Concurrency int
	// Rate, when > 0, makes the point an open loop: judgments arrive at
	// Rate per second (Session.Options give the burstiness and
	// the seed; see Arrivals) and wait in the client for a slot.
	Rate float64
	// Arm is cold (reset the server's caches before the window, when the
	// server allows it; also when empty) or warm (keep whatever the caches
	// hold).
	Arm receipts.Arm
	// Warmup judgments run before the window, outside every figure.
	Warmup int
}

// Measure runs the set once at the point and returns its receipt. The
// receipt is returned whenever anything ran, also with an error: a run that
// stops early (failed judgment, timeout, cancelled ctx) still yields what it
// measured, with its Stopped block, and the error wraps ErrStopped; one that
// went through its set with more failed judgments than Options.MaxFailed
// accepts wraps ErrFailures. After failures the server's health is asked:
// ErrServerDown (also wrapped) means nothing more can be measured on it,
// and a warmup that failed on a server that is down yields no receipt.
func (s *Session) Measure(ctx context.Context, p Point) (*receipts.Receipt, error) {
	c := max(p.Concurrency, 1)
	var schedule []time.Duration
	if p.Rate > 0 {
		var err error
		if schedule, err = s.arrivals(p).Schedule(len(s.Set.Cases)); err != nil {
			return nil, err
		}
		c = max(p.Concurrency, 0) // the cap; 0 = none
	}
	rec := s.receipt(c)
	rec.Pins.Load = s.loadPins(p)
	ctl := s.controlClient()

	// Warmup: connections, server-side compilation; outside the window
	// (at each endpoint).
	for i := range p.Warmup * len(s.judges()) {
		if _, err := s.judges()[i%len(s.judges())].Judge(ctx, s.Set.Spec, s.Controls, s.Set.Cases[0].Item); err != nil {
			if down := s.down(ctx); down != nil {
				// Nothing was measured and nothing can be: no receipt.
				return nil, fmt.Errorf("%w: warmup: %w; %w", ErrStopped, err, down)
			}
			rec.Stopped = &receipts.Stopped{Index: 0, Item: s.Set.Cases[0].ID, Reason: stopReason(ctx.Err() != nil, err),
				ErrorClass: errclass.Of(err), Message: "warmup: " + err.Error()}
			rec.Finished = time.Now().UTC()
			return rec, fmt.Errorf("%w: warmup: %w", ErrStopped, err)
		}
	}

	reset := probe.WarmArm()
	var resets []receipts.CacheReset
	if p.Arm != receipts.ArmWarm {
		var err error
		reset, resets, err = s.resetCaches(ctx, ctl)
		if err != nil {
			if down := s.down(ctx); down != nil {
				return nil, fmt.Errorf("reset caches: %w; %w", err, down)
			}
			return nil, fmt.Errorf("reset caches: %w", err)
		}
	}

	before := s.scrapeAll(ctx, ctl)
	var sopts []audit.SamplerOption
	if s.clock != nil {
		sopts = append(sopts, audit.WithClock(s.clock))
	}
	sampler := audit.NewSampler(c, sopts...)
	pool := Pool{Concurrency: c, Arrivals: schedule, StopOnError: !s.Options.ContinueOnError, Observer: sampler, clock: s.clock, held: s.held}
	var system *audit.Sampler // an open loop's: queued or in service
	if schedule != nil {
		system = audit.NewSampler(0, sopts...)
		pool.System = system
	}
	report := s.progress(c, p.Rate, p.Arm)
	if report != nil {
		pool.Progress = func(done, failed int, elapsed time.Duration) { report(done, failed, elapsed, false) }
	}
	judge, bal := s.windowJudge()
	if s.wrap != nil {
		judge = s.wrap(judge)
	}
	o := pool.Run(ctx, judge, s.Set, s.Controls)
	occ := sampler.Close()
	var sysOcc audit.Occupancy
	if system != nil {
		sysOcc = system.Close()
	}
	if report != nil {
		failed := 0
		for _, r := range o.Results {
			if r.Err != nil {
				failed++
			}
		}
		report(len(o.Results), failed, o.Wall, true)
	}
	// The closing scrape must happen even after Ctrl-C: what was measured
	// is kept. The control client's timeout bounds it.
	after := s.scrapeAll(context.WithoutCancel(ctx), ctl)

	items, tp, stopped := figuresWith(s.Set, o, tally.Tally{Concurrency: c, OpenLoop: schedule != nil,
		SLOSeconds: s.Options.SLOLatency.Seconds(), GoodputTarget: s.Options.SLOGoodput})
	rec.Items, rec.Throughput, rec.Stopped = items, tp, stopped
	rec.OffFormat = receipts.OffFormatOf(items)
	rec.Finished = time.Now().UTC()

	// Diff records a failed reading in Status and Problems; never guessed.
	server, parts := s.windowServer(before, after, reset, resets)
	rec.Server = &server
	if rec.Identity.CacheConfig = scrape.CacheConfig(before[0]); rec.Identity.CacheConfig == nil {
		rec.Identity.CacheConfig = scrape.CacheConfig(after[0])
	}
	if p.Arm != receipts.ArmWarm && !reset.Prefix {
		rec.Warnings = append(rec.Warnings, "cold arm, but the prefix cache was not reset: "+reset.Note)
	}

	var timed, responses []float64
	for _, r := range o.Results {
		timed = append(timed, r.Latency().Seconds())
		responses = append(responses, r.Response().Seconds())
	}
	open := schedule != nil
	ll := audit.LittlesLaw(occ, audit.Window{WallSeconds: tp.WallSeconds, Judgments: len(timed), MeanLatencySeconds: tally.LatencyOf(timed).Mean,
		OpenLoop: open, W: "service"})
	rc := audit.Reconcile(clientCounts(o, tp), rec.Server)
	rec.Checks = &receipts.Checks{LittlesLaw: &ll, Reconciliation: &rc}
	var split string
	if rec.Endpoints, split = s.endpointFigures(s.Set, o, c, bal, parts); split != "" {
		rec.Warnings = append(rec.Warnings, split)
	}
	if open {
		// Over the whole client: arrivals waiting for a slot count in L,
		// and W is the response time (arrival → end).
		llr := audit.LittlesLaw(sysOcc, audit.Window{WallSeconds: tp.WallSeconds, Judgments: len(responses),
			MeanLatencySeconds: tally.LatencyOf(responses).Mean, OpenLoop: true, W: "response"})
		rec.Checks.LittlesLawResponse = &llr
		if !llr.OK {
			rec.Warnings = append(rec.Warnings, "little's law (response time): "+strings.Join(llr.Problems, "; "))
		}
		if w := lagWarning(tp.ArrivalLag, p.Rate); w != "" {
			rec.Warnings = append(rec.Warnings, w)
		}
	}
	if s.Options.GPUHourlyUSD > 0 && tp.Judgments > 0 {
		cost, err := audit.CostOf(s.Options.GPUHourlyUSD, tp)
		switch {
		case err != nil:
			rec.Warnings = append(rec.Warnings, "cost: "+err.Error())
		case s.Endpoint.Target.TimeScale > 1:
			rec.Warnings = append(rec.Warnings, fmt.Sprintf("cost not computed: the twin ran %gx faster than real time", s.Endpoint.Target.TimeScale))
		default:
			rec.Cost = &cost
		}
	}
	q := quality.Compute(items, quality.Rules{Verdict: s.Set.Verdict, CannotTell: s.Set.CannotTell, Agreement: s.Set.Agreement})
	rec.Quality = &q
	if !ll.OK {
		rec.Warnings = append(rec.Warnings, "little's law: "+strings.Join(ll.Problems, "; "))
	}
	if !rc.OK {
		rec.Warnings = append(rec.Warnings, "reconciliation: "+rc.Verdict+": "+rc.Detail)
	}

	var err error
	switch {
	case stopped != nil:
		err = fmt.Errorf("%w at item %d (%s): %s: %w", ErrStopped, stopped.Index, stopped.Item, stopped.Reason, o.StopErr)
	case tp.Failed > 0:
		var warn string
		warn, err = s.failures(tp)
		rec.Warnings = append(rec.Warnings, warn)
	}
	if missed := slo.Check(rec); missed != nil {
		// The point fails, its receipt and benchmark line kept: what was
		// measured is what shows the SLO was missed.
		rec.Warnings = append(rec.Warnings, missed.Error())
		if err == nil {
			err = missed
		} else {
			err = fmt.Errorf("%w; %w", err, missed)
		}
	}
	if tp.Failed > 0 || (stopped != nil && stopped.Reason != receipts.StopCanceled) {
		if down := s.downAfter(ctx, scrapeErr(after)); down != nil {
			rec.Warnings = append(rec.Warnings, down.Error()+": no later point can be measured")
			if err == nil {
				err = down
			} else {
				err = fmt.Errorf("%w; %w", err, down)
			}
		}
	}
	rec.Identity.Digest = rec.IdentityDigest()
	return rec, err
}

// failures says what a run that went through its set with failed
// judgments did (the receipt's warning) and, when more failed than
// Options.MaxFailed accepts, the point's error.
func (s *Session) failures(tp receipts.Throughput) (string, error) {
	what := fmt.Sprintf("%d of %d judgments failed (%s)", tp.Failed, tp.Judgments+tp.Failed, FailureClasses(tp))
	share := tally.FailedShare(tp)
	names := s.Options.Settings
	maxFailed := setting(names.MaxFailed, "the accepted share")
	if share > s.Options.MaxFailed {
		return "the run continued past failures (" + setting(names.ContinueOnError, "continue on error") + "): " + what,
			fmt.Errorf("%w: %s, more than the accepted %s (%s)", ErrFailures, what, percent(s.Options.MaxFailed), maxFailed)
	}
	return fmt.Sprintf("%s, within the accepted %s (%s)", what, percent(s.Options.MaxFailed), maxFailed), nil
}

// FailureClasses lists a window's failures by class, most frequent first:
// "136 http_500, 2 timeout" (tally.FailureClasses).
func FailureClasses(tp receipts.Throughput) string { return tally.FailureClasses(tp) }

func percent(share float64) string {
	return strconv.FormatFloat(100*share, 'g', 4, 64) + "%"
}

// down asks the server's /health after a failure: ErrServerDown when its
// engine is dead or nothing answers, nil when it is up, cannot say (no
// /health) or ctx is cancelled (an interrupt is not the server's fault).
func (s *Session) down(ctx context.Context) error {
	if ctx.Err() != nil {
		return nil
	}
	// With several endpoints, one down is down: the balancer would keep
	// sending it judgments.
	for _, base := range s.bases() {
		err := probe.Health(ctx, s.controlClient(), base, s.Endpoint.Authorize)
		if len(s.replicas) > 0 && err != nil {
			err = fmt.Errorf("endpoint %s: %w", judgments.RedactURL(base), err)
		}
		switch {
		case err == nil || ctx.Err() != nil:
			continue
		case errors.Is(err, probe.ErrEngineDead):
			return fmt.Errorf("%w: %w", ErrServerDown, err)
		}
		return fmt.Errorf("%w: %s: %w", ErrServerDown, errclass.Of(err), err)
	}
	return nil
}

// downAfter is down, unless the closing scrape already found nothing
// answering (a frozen server is not asked again: one deadline less).
func (s *Session) downAfter(ctx context.Context, scrapeErr error) error {
	if ctx.Err() == nil && scrapeErr != nil {
		switch c := errclass.Of(scrapeErr); c {
		case errclass.Timeout, errclass.ConnectionRefused, errclass.ConnectionReset, errclass.Unreachable:
			return fmt.Errorf("%w: %s: %w", ErrServerDown, c, scrapeErr)
		}
	}
	return s.down(ctx)
}

// controlClient is the session's bounded client (a Session built by hand
// gets one on the judgments' transport).
func (s *Session) controlClient() *http.Client {
	if s.control == nil {
		s.control = &http.Client{Transport: s.Client.HTTPClient().Transport, Timeout: s.Options.controlDeadline()}
	}
	return s.control
}

// receipt starts a receipt with everything known before the run.
func (s *Session) receipt(c int) *receipts.Receipt {
	rec := &receipts.Receipt{
		Schema:  receipts.Schema,
		Source:  receipts.SourceVetbench,
		Set:     s.Set.Name,
		RunID:   newRunID(),
		Started: time.Now().UTC(),
		Target:  s.Endpoint.Receipt(),
		Pins: receipts.Pins{
			Model:            s.Client.Model(),
			ModelRevision:    s.Options.ModelRevision,
			ScoringMode:      string(s.Client.Mode()),
			ScoringFallback:  s.Fallback,
			Controls:         s.Controls,
			Concurrency:      c,
			QuestionDispatch: dispatch(s.Client.FanOut()),
			Fixture: receipts.FixturePins{
				Dataset:     s.Set.Pins.Dataset,
				Source:      s.Set.Pins.Source,
				Seed:        s.Set.Pins.Seed,
				Items:       len(s.Set.Cases),
				SliceSHA256: s.Set.SliceSHA256(),
				Extra:       s.Set.Pins.Extra,
			},
		},
		Identity: receipts.Identity{
			PromptDigests:  s.Set.Spec.PromptDigests(),
			FixtureDigests: s.Set.Digests(),
			HarnessVersion: HarnessVersion,
			ServerFlags:    s.Options.ServerFlags,
			ServerEnv:      s.Options.ServerEnv,
		},
		// Set before the run so that a receipt of a run that never got to
		// its window (a failed warmup) is still a valid receipt.
		Throughput: receipts.Throughput{Concurrency: c},
		Warnings:   append([]string(nil), s.Notes...),
	}
	if s.Client.Mode() == judgments.ModeTopLogprobs {
		rec.Pins.TopLogprobs = s.Options.TopLogprobs
	}
	s.Info.Pin(&rec.Pins)
	return rec
}

// dispatch is how the session's client sends a judgment's questions.
func dispatch(fanOut bool) receipts.Dispatch {
	if fanOut {
		return receipts.DispatchFanOut
	}
	return receipts.DispatchSequential
}

// InFlight is the most requests a session of set has in flight at once:
// the judgments in flight (o.InFlight), times the questions of a judgment
// with fan-out. The transport keeps an idle connection for each.
func InFlight(o Options, set fixtures.Set) int {
	n := max(o.InFlight, 1)
	if o.FanOut {
		n *= max(len(set.Spec.Questions), 1)
	}
	return n
}

// ReceiptPath is where a point's receipt goes: <dir>/<set>_c<N>[_warm].json,
// or for an open loop <dir>/<set>_rate<R>[_max<N>][_warm].json.
func ReceiptPath(dir, set string, p Point) string {
	name := fmt.Sprintf("%s_c%d", set, max(p.Concurrency, 1))
	if p.Rate > 0 {
		name = fmt.Sprintf("%s_rate%s", set, strconv.FormatFloat(p.Rate, 'g', -1, 64))
		if p.Concurrency > 0 {
			name += fmt.Sprintf("_max%d", p.Concurrency)
		}
	}
	if p.Arm == receipts.ArmWarm {
		name += "_warm"
	}
	return filepath.Join(dir, name+".json")
}

func newRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
