package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/bench/scrape"
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

// Measure runs the set once at the point and returns its receipt. The
// receipt is returned whenever anything ran, also with an error: a run that
// stops early (failed judgment, timeout, cancelled ctx) still yields what it
// measured, with its Stopped block, and the error wraps ErrStopped; one that
// went through its set with more failed judgments than Options.MaxFailed
// accepts wraps ErrFailures. After failures the server's health is asked:
// ErrServerDown (also wrapped) means nothing more can be measured on it,
// and a warmup that failed on a server that is down yields no receipt; nor
// does one whose images the server refuses (ErrRefused: no point of the
// set can be measured there).
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
	s.prepare()
	if err := s.warm(ctx, min(max(c, 1), max(len(s.Set.Cases), 1)), p.Warmup); err != nil {
		if refused := s.imagesRefused(err); refused != nil {
			return nil, refused
		}
		if down := s.down(ctx); down != nil {
			// Nothing was measured and nothing can be: no receipt.
			return nil, fmt.Errorf("%w: warmup: %w; %w", ErrStopped, err, down)
		}
		rec.Stopped = &receipts.Stopped{Index: 0, Item: s.Set.Cases[0].ID, Reason: stopReason(ctx.Err() != nil, err),
			ErrorClass: errclass.Of(err), Message: "warmup: " + err.Error()}
		rec.Finished = time.Now().UTC()
		return rec, fmt.Errorf("%w: warmup: %w", ErrStopped, err)
	}
	reset, resets, err := s.arm(ctx, ctl, p.Arm)
	if err != nil {
		return nil, err
	}
	w := s.window(ctx, ctl, c, p, schedule)
	s.figures(rec, w, c, p, reset, resets)
	return rec, s.verdict(ctx, rec, w)
}

// prepare has every endpoint's client encode the set's request parts
// before the window (judgments.Client.Prepare): the base64 of each image,
// most of every body, is then done once per run, not inside the first
// pass, which otherwise runs slower than the later ones by the client's
// encoding (BenchmarkWarmWindow). Later calls cost a lookup per part.
func (s *Session) prepare() {
	items := make([]judgments.Item, len(s.Set.Cases))
	for i, c := range s.Set.Cases {
		items[i] = c.Item
	}
	for _, j := range s.judges() {
		j.Prepare(s.Set.Spec, s.Controls, items)
	}
}

// warm runs the point's warmup outside the window: rounds of c judgments
// at once at every endpoint (c no more than the set's items), so the
// window opens on as many connections, open and exercised, as it holds
// in flight (a first pass measures what
// the tenth does), and the server has compiled what it compiles. The
// first error ends it.
func (s *Session) warm(ctx context.Context, c, rounds int) error {
	item := s.Set.Cases[0].Item
	for range rounds {
		for _, j := range s.judges() {
			errs := make([]error, c)
			var wg sync.WaitGroup
			for i := range c {
				wg.Go(func() { _, errs[i] = j.Judge(ctx, s.Set.Spec, s.Controls, item) })
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// arm prepares the point's cache arm: a cold arm resets every endpoint's
// caches (what took is recorded), a warm one keeps them.
func (s *Session) arm(ctx context.Context, ctl *http.Client, arm receipts.Arm) (receipts.CacheReset, []receipts.CacheReset, error) {
	if arm == receipts.ArmWarm {
		return probe.WarmArm(), nil, nil
	}
	reset, resets, err := s.resetCaches(ctx, ctl)
	if err != nil {
		if down := s.down(ctx); down != nil {
			return reset, nil, fmt.Errorf("reset caches: %w; %w", err, down)
		}
		return reset, nil, fmt.Errorf("reset caches: %w", err)
	}
	return reset, resets, nil
}

// measured is one window: the pool's outcome, its occupancy (and an open
// loop's, queued or in service), the scrapes around it, and the balancer
// that spread it (nil for one endpoint).
type measured struct {
	o             Outcome
	occ, system   audit.Occupancy
	before, after []scrape.Snapshot
	bal           *Balancer
	open          bool
}

// window runs the pool over the set between two /metrics scrapes.
func (s *Session) window(ctx context.Context, ctl *http.Client, c int, p Point, schedule []time.Duration) measured {
	w := measured{open: schedule != nil, before: s.scrapeAll(ctx, ctl)}
	var sopts []audit.SamplerOption
	if s.clock != nil {
		sopts = append(sopts, audit.WithClock(s.clock))
	}
	sampler := audit.NewSampler(c, sopts...)
	pool := Pool{Concurrency: c, Arrivals: schedule, StopOnError: !s.Options.ContinueOnError, Observer: sampler, clock: s.clock, held: s.held}
	var system *audit.Sampler // an open loop's: queued or in service
	if w.open {
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
	w.o, w.bal = pool.Run(ctx, judge, s.Set, s.Controls), bal
	w.occ = sampler.Close()
	if system != nil {
		w.system = system.Close()
	}
	if report != nil {
		failed := 0
		for _, r := range w.o.Results {
			if r.Err != nil {
				failed++
			}
		}
		report(len(w.o.Results), failed, w.o.Wall, true)
	}
	// The closing scrape must happen even after Ctrl-C: what was measured
	// is kept. The control client's timeout bounds it.
	w.after = s.scrapeAll(context.WithoutCancel(ctx), ctl)
	return w
}

// figures fills rec from the window: items, throughput, the server's
// deltas, the self-checks, each endpoint's share, cost and quality.
func (s *Session) figures(rec *receipts.Receipt, w measured, c int, p Point, reset receipts.CacheReset, resets []receipts.CacheReset) {
	items, tp, stopped := figuresWith(s.Set, w.o, tally.Tally{Concurrency: c, OpenLoop: w.open,
		SLOSeconds: s.Options.SLOLatency.Seconds(), GoodputTarget: s.Options.SLOGoodput})
	rec.Items, rec.Throughput, rec.Stopped = items, tp, stopped
	rec.OffFormat = receipts.OffFormatOf(items)
	rec.Finished = time.Now().UTC()

	// Diff records a failed reading in Status and Problems; never guessed.
	server, parts := s.windowServer(w.before, w.after, reset, resets)
	rec.Server = &server
	if rec.Identity.CacheConfig = scrape.CacheConfig(w.before[0]); rec.Identity.CacheConfig == nil {
		rec.Identity.CacheConfig = scrape.CacheConfig(w.after[0])
	}
	if p.Arm != receipts.ArmWarm && !reset.Prefix {
		rec.Warnings = append(rec.Warnings, "cold arm, but the prefix cache was not reset: "+reset.Note)
	}
	s.checks(rec, w, p)
	var split string
	if rec.Endpoints, split = s.endpointFigures(s.Set, w.o, c, w.bal, parts); split != "" {
		rec.Warnings = append(rec.Warnings, split)
	}
	s.cost(rec)
	q := quality.Compute(items, quality.Rules{Verdict: s.Set.Verdict, CannotTell: s.Set.CannotTell, Agreement: s.Set.Agreement})
	rec.Quality = &q
}

// checks are the window's self-checks: Little's law over service (and
// for an open loop over the response time, and the arrivals' lag), the
// reconciliation of the client's counts with the server's, and a twin's
// report that it fell behind its model.
func (s *Session) checks(rec *receipts.Receipt, w measured, p Point) {
	tp := rec.Throughput
	var timed, responses []float64
	for _, r := range w.o.Results {
		timed = append(timed, r.Latency().Seconds())
		responses = append(responses, r.Response().Seconds())
	}
	ll := audit.LittlesLaw(w.occ, audit.Window{WallSeconds: tp.WallSeconds, Judgments: len(timed), MeanLatencySeconds: tally.LatencyOf(timed).Mean,
		OpenLoop: w.open, W: "service"})
	rc := audit.Reconcile(clientCounts(w.o, tp), rec.Server)
	rec.Checks = &receipts.Checks{LittlesLaw: &ll, Reconciliation: &rc}
	if w.open {
		// Over the whole client: arrivals waiting for a slot count in L,
		// and W is the response time (arrival → end).
		llr := audit.LittlesLaw(w.system, audit.Window{WallSeconds: tp.WallSeconds, Judgments: len(responses),
			MeanLatencySeconds: tally.LatencyOf(responses).Mean, OpenLoop: true, W: "response"})
		rec.Checks.LittlesLawResponse = &llr
		if !llr.OK {
			rec.Warnings = append(rec.Warnings, "little's law (response time): "+strings.Join(llr.Problems, "; "))
		}
		if lw := lagWarning(tp.ArrivalLag, p.Rate); lw != "" {
			rec.Warnings = append(rec.Warnings, lw)
		}
	}
	if !ll.OK {
		rec.Warnings = append(rec.Warnings, "little's law: "+strings.Join(ll.Problems, "; "))
	}
	if !rc.OK {
		rec.Warnings = append(rec.Warnings, "reconciliation: "+rc.Verdict+": "+rc.Detail)
	}
	if dw := audit.DeliveryWarning(rec.Server); dw != "" {
		rec.Warnings = append(rec.Warnings, dw)
	}
}

// cost is the receipt's cost per 1,000 judgments at the stated hourly
// price; none on a twin faster than real time.
func (s *Session) cost(rec *receipts.Receipt) {
	tp := rec.Throughput
	if s.Options.GPUHourlyUSD <= 0 || tp.Judgments == 0 {
		return
	}
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

// verdict is the point's error: stopped, too many failures, a missed SLO,
// and after failures a server found down; nil when it passed. Warnings say
// the same in the receipt, whose identity digest is sealed here.
func (s *Session) verdict(ctx context.Context, rec *receipts.Receipt, w measured) error {
	tp, stopped := rec.Throughput, rec.Stopped
	var err error
	switch {
	case stopped != nil:
		err = fmt.Errorf("%w at item %d (%s): %s: %w", ErrStopped, stopped.Index, stopped.Item, stopped.Reason, w.o.StopErr)
	case tp.Failed > 0:
		var warn string
		warn, err = s.failures(tp)
		rec.Warnings = append(rec.Warnings, warn)
	}
	if missed := slo.Check(rec); missed != nil {
		// The point fails, its receipt and benchmark line kept: what was
		// measured is what shows the SLO was missed.
		rec.Warnings = append(rec.Warnings, missed.Error())
		err = joinErr(err, missed)
	}
	if tp.Failed > 0 || (stopped != nil && stopped.Reason != receipts.StopCanceled) {
		if down := s.downAfter(ctx, scrapeErr(w.after)); down != nil {
			rec.Warnings = append(rec.Warnings, down.Error()+": no later point can be measured")
			err = joinErr(err, down)
		}
	}
	rec.Identity.Digest = rec.IdentityDigest()
	return err
}

// joinErr is err; next, or next alone.
func joinErr(err, next error) error {
	if err == nil {
		return next
	}
	return fmt.Errorf("%w; %w", err, next)
}

// failures says what a run that went through its set with failed
// judgments did (the receipt's warning) and, when more failed than
// Options.MaxFailed accepts, the point's error.
func (s *Session) failures(tp receipts.Throughput) (string, error) {
	what := fmt.Sprintf("%d of %d judgments failed (%s)", tp.Failed, tp.Judgments+tp.Failed, FailureClasses(tp))
	share := tally.FailedShare(tp)
	names := s.Options.Settings
	maxFailed := setting(names.MaxFailed, "the accepted share")
	if tp.Judgments == 0 && tp.Failed > 0 {
		// Nothing succeeded: a point with no answer measured nothing, so
		// it fails whatever share is accepted (100% included).
		return "the run continued past failures: " + what,
			fmt.Errorf("%w: %s: no judgment succeeded (a point fails with none, whatever %s accepts)", ErrFailures, what, maxFailed)
	}
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
