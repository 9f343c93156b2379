package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/bench/config"
	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/quality"
	"github.com/vetbench/vetbench/receipts/tally"
)

// HarnessVersion names this harness in every receipt's identity: a change in
// how prompts are built or answers scored must bump it.
const HarnessVersion = "vetbench/0.1"

// ErrStopped wraps the reason of a run that ended before its set did.
var ErrStopped = errors.New("run stopped early")

// Session is one endpoint and one set, ready to be measured: the server
// probed and the controls tokenized once per run, never per judgment.
type Session struct {
	Endpoint Endpoint
	Config   config.Config
	Set      fixtures.Set
	Client   *judgments.Client
	Info     probe.Info
	Controls judgments.Controls
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

	// Test seams (export_test.go): the pool's and sampler's clock, the
	// pool's held hook, and a wrapper around the judge in the window.
	clock func() time.Time
	held  func(i int)
	wrap  func(Judge) Judge
}

// NewSession probes the endpoint and pins the control tokens. cfg gives the
// run settings (scoring mode, timeouts, what the receipt pins).
func NewSession(ctx context.Context, ep Endpoint, set fixtures.Set, cfg config.Config) (*Session, error) {
	if ep.Target.Kind == "" {
		return nil, errors.New("endpoint: no target kind (live, container or inprocess) for the receipts")
	}
	if err := set.Spec.Validate(); err != nil {
		return nil, err
	}
	ep.BaseURL = strings.TrimRight(ep.BaseURL, "/")
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	kind := ep.Target.Kind
	info, err := probe.Server(ctx, hc, ep.BaseURL, ep.authorize)
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
	s := &Session{Endpoint: ep, Config: cfg, Set: set, Info: info, Notes: append(append([]string(nil), ep.Notes...), info.Notes...),
		hc: hc, idPrefix: "vetbench-" + newRunID()[:8]}
	s.Client = s.newClient(model, cfg.Mode)
	s.Controls, err = s.Client.Tokenize(ctx, set.Spec.Controls())
	if err != nil {
		// Text-matched scoring needs no ids; a server without /tokenize is
		// fine there, and the receipt says the ids are not pinned.
		if cfg.Mode != judgments.ModeTopLogprobs || !errors.Is(err, judgments.ErrNoTokenizer) {
			return nil, fmt.Errorf("pin control tokens: %w", err)
		}
		s.Controls = nil
		s.Notes = append(s.Notes, "server has no /tokenize: control token ids not pinned (top_logprobs matches on text)")
	}
	if err := s.checkTokenIDs(ctx, hc, model); err != nil {
		return nil, fmt.Errorf("%s target: %w", kind, err)
	}
	return s, nil
}

// Point is one measured point of a sweep.
type Point struct {
	Concurrency int
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
// measured, with its Stopped block, and the error wraps ErrStopped.
func (s *Session) Measure(ctx context.Context, p Point) (*receipts.Receipt, error) {
	c := max(p.Concurrency, 1)
	rec := s.receipt(c)
	hc := s.Client.HTTPClient()
	auth := s.Endpoint.authorize
	base := s.Endpoint.BaseURL

	// Warmup: connections, server-side compilation; outside the window.
	for range p.Warmup {
		if _, err := s.Client.Judge(ctx, s.Set.Spec, s.Controls, s.Set.Cases[0].Item); err != nil {
			rec.Stopped = &receipts.Stopped{Index: 0, Item: s.Set.Cases[0].ID, Reason: receipts.StopError,
				ErrorClass: errorClass(err), Message: "warmup: " + err.Error()}
			if ctx.Err() != nil {
				rec.Stopped.Reason = receipts.StopCanceled
			}
			rec.Finished = time.Now().UTC()
			return rec, fmt.Errorf("%w: warmup: %w", ErrStopped, err)
		}
	}

	reset := probe.WarmArm()
	if p.Arm != receipts.ArmWarm {
		var err error
		reset, err = probe.ResetCaches(ctx, hc, base, auth)
		if err != nil {
			return nil, fmt.Errorf("reset caches: %w", err)
		}
	}

	metricsURL := base + "/metrics"
	before, _ := scrape.Fetch(ctx, hc, metricsURL, scrape.WithAuthorize(auth))
	var sopts []audit.SamplerOption
	if s.clock != nil {
		sopts = append(sopts, audit.WithClock(s.clock))
	}
	sampler := audit.NewSampler(c, sopts...)
	pool := Pool{Concurrency: c, StopOnError: !s.Config.ContinueOnError, Observer: sampler, clock: s.clock, held: s.held}
	report := s.progress(c, p.Arm)
	if report != nil {
		pool.Progress = func(done, failed int, elapsed time.Duration) { report(done, failed, elapsed, false) }
	}
	var judge Judge = s.Client
	if s.wrap != nil {
		judge = s.wrap(judge)
	}
	o := pool.Run(ctx, judge, s.Set, s.Controls)
	occ := sampler.Close()
	if report != nil {
		failed := 0
		for _, r := range o.Results {
			if r.Err != nil {
				failed++
			}
		}
		report(len(o.Results), failed, o.Wall, true)
	}
	// The closing scrape must happen even after Ctrl-C: what was measured is kept.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	after, _ := scrape.Fetch(sctx, hc, metricsURL, scrape.WithAuthorize(auth))

	items, tp, stopped := figures(s.Set, o, c)
	rec.Items, rec.Throughput, rec.Stopped = items, tp, stopped
	rec.OffFormat = receipts.OffFormatOf(items)
	rec.Finished = time.Now().UTC()

	// Diff records a failed reading in Status and Problems; never guessed.
	server := scrape.Diff(before, after)
	server.CacheReset = &reset
	rec.Server = &server
	if rec.Identity.CacheConfig = scrape.CacheConfig(before); rec.Identity.CacheConfig == nil {
		rec.Identity.CacheConfig = scrape.CacheConfig(after)
	}
	if p.Arm != receipts.ArmWarm && !reset.Prefix {
		rec.Warnings = append(rec.Warnings, "cold arm, but the prefix cache was not reset: "+reset.Note)
	}

	var timed []float64
	unanswered := 0
	for _, r := range o.Results {
		timed = append(timed, r.Latency().Seconds())
		unanswered += r.Judgment.Requests - len(r.Judgment.Answers)
	}
	ll := audit.LittlesLaw(occ, audit.Window{WallSeconds: tp.WallSeconds, Judgments: len(timed), MeanLatencySeconds: tally.LatencyOf(timed).Mean})
	rc := audit.Reconcile(audit.ClientCounts{Requests: tp.Requests, PromptTokens: tp.PromptTokens, Unanswered: unanswered,
		CachedTokens: cachedTokens(o)}, rec.Server)
	rec.Checks = &receipts.Checks{LittlesLaw: &ll, Reconciliation: &rc}
	if s.Config.GPUHourlyUSD > 0 && tp.Judgments > 0 {
		cost, err := audit.CostOf(s.Config.GPUHourlyUSD, tp)
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
	rec.Identity.Digest = rec.IdentityDigest()

	if stopped != nil {
		return rec, fmt.Errorf("%w at item %d (%s): %s: %w", ErrStopped, stopped.Index, stopped.Item, stopped.Reason, o.StopErr)
	}
	return rec, nil
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
			Model:           s.Client.Model(),
			ModelRevision:   s.Config.ModelRevision,
			ScoringMode:     string(s.Client.Mode()),
			ScoringFallback: s.Fallback,
			Controls:        s.Controls,
			Concurrency:     c,
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
			ServerFlags:    s.Config.ServerFlags,
			ServerEnv:      s.Config.ServerEnv,
		},
		// Set before the run so that a receipt of a run that never got to
		// its window (a failed warmup) is still a valid receipt.
		Throughput: receipts.Throughput{Concurrency: c},
		Warnings:   append([]string(nil), s.Notes...),
	}
	if s.Client.Mode() == judgments.ModeTopLogprobs {
		rec.Pins.TopLogprobs = s.Config.TopLogprobs
	}
	s.Info.Pin(&rec.Pins)
	return rec
}

// ReceiptPath is where a point's receipt goes: <dir>/<set>_c<N>[_warm].json.
func ReceiptPath(dir, set string, p Point) string {
	name := fmt.Sprintf("%s_c%d", set, max(p.Concurrency, 1))
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
