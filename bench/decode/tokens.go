// Package decode measures token throughput: Concurrency streamed requests
// sent at once (a closed batch, the published receipts' mode) or
// NumPrompts requests through Concurrency refilled slots (`vllm bench
// serve --max-concurrency C --num-prompts N`, optionally at a request rate
// on bench.Arrivals' gamma schedule), each for a fixed number of output
// tokens (ignore_eos, temperature 0), Repeats times per point after a
// warm-up outside the window. A run's rate is output tokens ÷ end-to-end
// run time (first send to the end of the last stream); each request's
// record — the receipt's own figures and `vllm bench serve`'s per-chunk
// one — comes from bench/stream. Every request
// is verified against the server's own count: one that produced fewer
// tokens than asked is a short stream, counted, and fails the point unless
// the caller accepted a failure share. Little's law is checked on every
// run. The result is one receipts/tokens receipt per point.
//
// Prompts never share a prefix (see Prompts): each starts with a tag of
// its own, and the receipt says so (identity.cache_isolation).
package decode

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/slo"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// Sampling is how every request asks for its output.
const Sampling = "temperature=0 ignore_eos=true"

// ErrStopped wraps why a point ended before its last repeat.
var ErrStopped = errors.New("point stopped early")

// ErrRefused says the server refuses what every request of the workload
// sends (more images than it takes a prompt): the point is not measured,
// and no receipt stands for it.
var ErrRefused = errors.New("the server refuses the workload's requests")

// ErrFailures is a point whose failed and short requests exceed the
// accepted share.
var ErrFailures = errors.New("requests failed or came back short")

// Point is one point to measure.
type Point struct {
	Workload     string
	Concurrency  int
	OutputTokens int
	Repeats      int
	// Warmup batches run before the repeats, outside every figure.
	Warmup int
	// MaxFailed is the share of requests that may fail or come back
	// short without failing the point.
	MaxFailed float64
	// SLO, when set, is the per-request target goodput is counted against
	// (receipts/tokens.Summarize); a stated goodput target it misses
	// fails the point (slo.ErrMissed).
	SLO *tokens.SLO
	// Load: NumPrompts > 0 sends that many requests per repeat through
	// Concurrency refilled slots; RequestRate > 0 offers them on a gamma
	// schedule of shape Burstiness (bench.Arrivals, seeded by Seed), 0
	// queues them all at once (vLLM's --request-rate inf).
	NumPrompts  int
	RequestRate float64
	Burstiness  float64
	Seed        int64
	// ServeGoodput is vLLM's --goodput (ttft, tpot, e2el in ms);
	// MetricPercentiles its --metric-percentiles (empty: 99).
	ServeGoodput      map[string]float64
	MetricPercentiles []float64
}

// receiptPoint is the point as its receipt records it.
func (p Point) receiptPoint() tokens.Point {
	return tokens.Point{Workload: p.Workload, Concurrency: p.Concurrency, OutputTokens: p.OutputTokens, Repeats: p.Repeats,
		SLO: p.SLO, NumPrompts: p.NumPrompts, RequestRate: p.RequestRate, Burstiness: p.Burstiness, Seed: p.Seed,
		ServeGoodput: p.ServeGoodput, MetricPercentiles: p.MetricPercentiles}
}

// WithSLO is p with per-request targets (TTFT, TPOT) and the goodput
// target; p unchanged when neither target is stated.
func (p Point) WithSLO(ttft, tpot time.Duration, goodput float64) Point {
	if ttft <= 0 && tpot <= 0 {
		return p
	}
	p.SLO = &tokens.SLO{TTFTMs: ms(ttft), TPOTMs: ms(tpot), Target: goodput}
	return p
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Runner measures points on one endpoint. It is not safe for concurrent
// Measure calls (points are measured one after another so they do not
// compete).
type Runner struct {
	Endpoint bench.Endpoint
	// Model is the model sent in every request.
	Model    string
	Identity tokens.Identity
	RunID    string
	Notes    []string

	client  *stream.Client
	prompts *Prompts
	now     func() time.Time
	// stall, serverFlags and hc are the options' (WithStallTimeout,
	// WithServerFlags, WithHTTPClient).
	stall       time.Duration
	budget      stream.Budget
	serverFlags string
	hc          *http.Client
	// afterDo runs after a request returns and before its slot is freed
	// (a test seam: time spent here is outside the latency clock).
	afterDo func()
	// control bounds the probes (WithControlTimeout).
	control time.Duration
	// api is the endpoint the points stream from (WithAPI).
	api string
	// metrics reads the server's /metrics (a failure is in the snapshot).
	metrics func(context.Context) scrape.Snapshot
}

// Option configures a Runner.
type Option func(*Runner)

// WithClock replaces time.Now for every timestamp (tests drive time).
func WithClock(now func() time.Time) Option { return func(r *Runner) { r.now = now } }

// WithStallTimeout fails a stream that sends nothing for d (0: never).
func WithStallTimeout(d time.Duration) Option { return func(r *Runner) { r.stall = d } }

// WithBudget bounds every stream at b.For(output tokens) after it is sent
// (default stream.DefaultBudget): past it the request fails as
// "deadline", however the server keeps it alive.
func WithBudget(b stream.Budget) Option { return func(r *Runner) { r.budget = b } }

// WithServerFlags are the server's flags as the user states them, pinned
// in every receipt's identity.
func WithServerFlags(flags string) Option { return func(r *Runner) { r.serverFlags = flags } }

// WithHTTPClient sends every request with hc: the run's one client per
// target (default: a client of its own).
func WithHTTPClient(hc *http.Client) Option { return func(r *Runner) { r.hc = hc } }

// WithControlTimeout bounds each probe and /metrics scrape (default
// probe.DefaultTimeout): a server that does not answer one is found out in
// the control timeout, not in a stream's.
func WithControlTimeout(d time.Duration) Option { return func(r *Runner) { r.control = d } }

// WithAPI sends the points to api: tokens.APIChat (the default) or
// tokens.APICompletions, the text workload's prompt as it stands, as
// `vllm bench serve --backend openai` sends its prompts (no chat
// template). The receipts record it (identity.api).
func WithAPI(api string) Option { return func(r *Runner) { r.api = api } }

// WithSharedPrompts makes every point re-send the same prompts: the cache
// pitfall, for CachePitfall only.
func WithSharedPrompts() Option { return func(r *Runner) { r.prompts = NewSharedPrompts(r.RunID) } }

// NewRunner probes the endpoint (/v1/models, /version, /metrics for the
// cache configuration) and returns a runner for it.
func NewRunner(ctx context.Context, ep bench.Endpoint, opts ...Option) (*Runner, error) {
	if ep.Target.Kind == "" {
		return nil, errors.New("endpoint: no target kind (live, container or inprocess) for the receipts")
	}
	if len(ep.Replicas) > 0 {
		// Its figures are one server's (a C-stream point, a cell): spread
		// over several they would describe none of them.
		return nil, fmt.Errorf("%w: the token benchmark measures one endpoint, %d given (measure a router URL, or each replica in turn)", bench.ErrSeveralEndpoints, len(ep.Replicas)+1)
	}
	r := &Runner{Endpoint: ep, RunID: newRunID(), now: time.Now, budget: stream.DefaultBudget}
	for _, o := range opts {
		o(r)
	}
	if r.hc == nil {
		r.hc = &http.Client{Transport: judgments.NewTransport(1024)}
	}
	switch r.api {
	case "":
		r.api = tokens.APIChat
	case tokens.APIChat, tokens.APICompletions:
	default:
		return nil, fmt.Errorf("api %q: want %s or %s", r.api, tokens.APIChat, tokens.APICompletions)
	}
	if r.prompts == nil {
		r.prompts = NewPrompts(r.RunID)
	}
	// The key masked in what the server sends, no redirect out of the
	// origin; the probes and /metrics bounded by the control timeout.
	hc, auth := judgments.Secret(ep.APIKey).Guard(r.hc), ep.Authorize
	control := *hc
	control.Timeout = cmp.Or(r.control, probe.DefaultTimeout)
	info, err := probe.Server(ctx, &control, ep.BaseURL, auth)
	if err != nil {
		return nil, fmt.Errorf("probe %s target: %w", ep.Target.Kind, err)
	}
	r.Model = ep.Model
	if r.Model == "" {
		r.Model = info.Served[0].ID
	}
	if err := info.Check(r.Model); err != nil {
		return nil, fmt.Errorf("%s target: %w", ep.Target.Kind, err)
	}
	r.Notes = append(append([]string(nil), ep.Notes...), info.Notes...)
	pins := receipts.Pins{Model: r.Model}
	info.Pin(&pins)
	r.Identity = tokens.Identity{
		Model:          receipts.Weights(pins),
		ServerBuild:    info.Version,
		ServerFlags:    r.serverFlags,
		Sampling:       Sampling,
		HarnessVersion: bench.HarnessVersion,
		API:            r.api,
	}
	r.metrics = func(ctx context.Context) scrape.Snapshot {
		snap, _ := scrape.Fetch(ctx, &control, ep.BaseURL+"/metrics", scrape.WithAuthorize(auth))
		return snap
	}
	if snap := r.metrics(ctx); snap.Err == nil {
		r.Identity.Profile = scrape.CacheConfig(snap)
	} else {
		r.Notes = append(r.Notes, fmt.Sprintf("no /metrics: cache configuration unrecorded (%v)", snap.Err))
	}
	r.client = stream.New(ep.BaseURL, stream.WithAPIKey(ep.APIKey), stream.WithHTTPClient(hc),
		stream.WithClock(r.now), stream.WithStallTimeout(r.stall), stream.WithBudget(r.budget))
	return r, nil
}

func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Measure runs the point and returns its receipt. The receipt is returned
// whenever anything ran, also with an error: a point that stops early
// (canceled, every request of a batch failed) keeps its finished repeats
// and a stopped block, and the error wraps ErrStopped; a point whose
// failures exceed the accepted share has every repeat and an error
// wrapping ErrFailures.
func (r *Runner) Measure(ctx context.Context, p Point) (*tokens.Receipt, error) {
	if err := r.check(p); err != nil {
		return nil, err
	}
	rec := &tokens.Receipt{
		Schema: tokens.Schema, Source: tokens.SourceVetbench, RunID: r.RunID,
		Started: r.now().UTC(), Target: r.Endpoint.Receipt(), Identity: r.Identity, Point: p.receiptPoint(),
		Warnings: append([]string(nil), r.Notes...),
	}
	rec.Identity.PromptDigest = Digest(p.Workload)
	rec.Identity.CacheIsolation = r.prompts.Isolation()
	stopErr := r.warmUp(ctx, p, rec)
	if errors.Is(stopErr, ErrRefused) {
		return nil, stopErr
	}
	var before scrape.Snapshot
	if stopErr == nil {
		before = r.metrics(ctx)
		stopErr = r.repeat(ctx, p, rec)
	}
	if dw := r.deliveryWarning(ctx, before, len(rec.Runs)); dw != "" {
		rec.Warnings = append(rec.Warnings, dw)
	}
	rec.Finished = r.now().UTC()
	rec.Summary = tokens.Summarize(rec.Point, rec.Runs)
	rec.Identity.Digest = rec.IdentityDigest()
	if stopErr != nil {
		return rec, fmt.Errorf("%w: %s", ErrStopped, rec.Stopped.Message)
	}
	return rec, verdict(p, rec)
}

// warmUp runs the point's warm-up batches: closed batches of one request
// per slot (refilled or not), which open the connections the point holds
// in flight. An error stops the point, and rec says why; ErrRefused (the
// server refused the point's shape) is returned as it is.
func (r *Runner) warmUp(ctx context.Context, p Point, rec *tokens.Receipt) error {
	warm := p
	warm.NumPrompts, warm.RequestRate = 0, 0
	for i := range p.Warmup {
		run, err := r.batch(ctx, warm)
		if err == nil && run.GeneratedTokens == 0 && len(run.Requests) > 0 {
			err = fmt.Errorf("every warm-up request failed: %s", run.Requests[0].Error)
		}
		if errors.Is(err, ErrRefused) {
			return err
		}
		if err != nil {
			stopAt(rec, stopReason(ctx, err), fmt.Sprintf("warm-up %d: %v", i+1, err))
			return err
		}
	}
	return nil
}

// repeat runs the point's measured batches into rec. An error, or a batch
// in which every request failed, stops the point with the batches done.
func (r *Runner) repeat(ctx context.Context, p Point, rec *tokens.Receipt) error {
	for i := range p.Repeats {
		run, err := r.batch(ctx, p)
		if err != nil {
			stopAt(rec, stopReason(ctx, err), fmt.Sprintf("repeat %d: %v", i+1, err))
			return err
		}
		if ll := run.LittlesLaw; ll != nil && !ll.OK {
			for _, pr := range ll.Problems {
				rec.Warnings = append(rec.Warnings, fmt.Sprintf("repeat %d: Little's law: %s", i+1, pr))
			}
		}
		rec.Runs = append(rec.Runs, run)
		if run.Failed+run.Short == len(run.Requests) {
			stopAt(rec, "error", fmt.Sprintf("repeat %d: every request failed (%s)", i+1, run.Requests[0].Error))
			return errors.New(rec.Stopped.Message)
		}
	}
	return nil
}

// stopAt records on rec why its point stopped, after the batches it holds.
func stopAt(rec *tokens.Receipt, reason, msg string) {
	rec.Stopped = &tokens.Stopped{Reason: reason, Message: msg, Runs: len(rec.Runs)}
}

// verdict is a point's error once every repeat ran: failed or short
// requests past the accepted share (ErrFailures), or a goodput under its
// target (slo.ErrMissed). Failures within the share are a warning on rec.
func verdict(p Point, rec *tokens.Receipt) error {
	s := rec.Summary
	if bad := s.Failed + s.Short; bad > 0 {
		msg := fmt.Sprintf("%d of %d requests failed or came back short (%d short)", bad, s.Requests, s.Short)
		if float64(bad) > p.MaxFailed*float64(s.Requests) {
			return fmt.Errorf("%w: %s, accepted share %.3g", ErrFailures, msg, p.MaxFailed)
		}
		rec.Warnings = append(rec.Warnings, msg+fmt.Sprintf(" (within the accepted share %.3g)", p.MaxFailed))
	}
	if g := s.Goodput; g != nil && g.Met != nil && !*g.Met {
		msg := fmt.Sprintf("%d of %d requests (%.1f%%) within the SLO, below the stated goodput %.1f%%", g.Within, g.Of, 100*g.Share, 100*p.SLO.Target)
		rec.Warnings = append(rec.Warnings, "SLO missed: "+msg)
		return fmt.Errorf("%w: %s", slo.ErrMissed, msg)
	}
	return nil
}

// deliveryWarning reads /metrics again after the repeats (after Ctrl-C
// too, bounded by the control timeout) and says whether a twin fell behind
// its model over them (audit.DeliveryWarning); "" when no repeat ran.
func (r *Runner) deliveryWarning(ctx context.Context, before scrape.Snapshot, runs int) string {
	if runs == 0 {
		return ""
	}
	srv := scrape.Diff(before, r.metrics(context.WithoutCancel(ctx)))
	return audit.DeliveryWarning(&srv)
}

func (p Point) validate() error {
	var errs []error
	if p.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency %d: want at least 1", p.Concurrency))
	}
	if p.OutputTokens < 1 {
		errs = append(errs, fmt.Errorf("output tokens %d: want at least 1", p.OutputTokens))
	}
	if p.Repeats < 1 {
		errs = append(errs, fmt.Errorf("repeats %d: want at least 1", p.Repeats))
	}
	if p.Warmup < 0 || p.MaxFailed < 0 || p.MaxFailed >= 1 {
		errs = append(errs, fmt.Errorf("warmup %d, accepted failure share %g: want warmup >= 0 and a share in [0, 1)", p.Warmup, p.MaxFailed))
	}
	if p.NumPrompts < 0 || (p.NumPrompts == 0 && p.RequestRate != 0) {
		errs = append(errs, fmt.Errorf("num prompts %d with request rate %g: a rate needs refilled slots (num prompts > 0)", p.NumPrompts, p.RequestRate))
	}
	if b, err := BatchBytes(p.Workload, p.receiptPoint().Requests(), p.OutputTokens); err == nil && b > MaxBatchBytes {
		errs = append(errs, fmt.Errorf("%d %s requests a repeat hold about %d MiB, over %d MiB (decode.MaxBatchBytes): every prompt is built before the clock starts; send fewer (-num-prompts, -levels)",
			p.receiptPoint().Requests(), p.Workload, b>>20, MaxBatchBytes>>20))
	}
	if p.RequestRate > 0 {
		a := bench.Arrivals{Rate: p.RequestRate, Burstiness: p.Burstiness, Seed: p.Seed}
		if err := a.Validate(); err != nil || math.IsInf(p.Burstiness, 0) {
			errs = append(errs, fmt.Errorf("request rate %g, burstiness %g: want a finite rate and burstiness > 0", p.RequestRate, p.Burstiness))
		}
	}
	return errors.Join(errs...)
}

func stopReason(ctx context.Context, err error) string {
	switch {
	case errors.Is(ctx.Err(), context.Canceled), errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "error"
}

// batch runs one repeat: p.Concurrency requests sent at once, or
// p.NumPrompts through p.Concurrency refilled slots, and waits for every
// stream to end. The prompts (and images) are built before the clock
// starts. A canceled ctx is an error; failed requests are not (they are
// counted).
func (r *Runner) batch(ctx context.Context, p Point) (tokens.Run, error) {
	reqs, err := r.prompts.Batch(p.Workload, p.receiptPoint().Requests(), p.OutputTokens)
	if err != nil {
		return tokens.Run{}, err
	}
	if r.api == tokens.APICompletions {
		asCompletions(reqs)
	}
	var offsets []time.Duration
	if p.RequestRate > 0 {
		a := bench.Arrivals{Rate: p.RequestRate, Burstiness: p.Burstiness, Seed: p.Seed}
		if offsets, err = a.Schedule(len(reqs)); err != nil {
			return tokens.Run{}, err
		}
	}
	for i := range reqs {
		reqs[i].Model = r.Model
	}
	results := make([]*stream.Result, len(reqs))
	sampler := audit.NewSampler(p.Concurrency, audit.WithClock(r.now))
	slots := make(chan struct{}, p.Concurrency)
	var wg sync.WaitGroup
	sampler.Open()
	start := r.now()
	for i, q := range reqs {
		if offsets != nil && !r.waitUntil(ctx, start.Add(offsets[i])) {
			break
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The slot is taken where the request is sent, so the sampler
			// and the latency clock differ only by what they should not.
			sampler.Start()
			results[i] = r.client.Do(ctx, q, nil)
			if r.afterDo != nil {
				r.afterDo()
			}
			sampler.End()
			<-slots
		}()
	}
	wg.Wait()
	end := r.now()
	occ := sampler.Close()
	if err := ctx.Err(); err != nil {
		return tokens.Run{}, fmt.Errorf("run of %d: %w", len(reqs), err)
	}
	wall := end.Sub(start).Seconds()
	run := tokens.NewRun(p.receiptPoint(), wall, Requests(results, p.OutputTokens, start))
	if run.GeneratedTokens == 0 {
		if err := refused(p, results); err != nil {
			return run, err
		}
	}
	ll := LittlesLaw(occ, wall, results)
	run.LittlesLaw = &ll
	return run, nil
}

// refused is ErrRefused in full when the server refused the batch's
// images (judgments.ImageLimit), with what to do; nil otherwise.
func refused(p Point, results []*stream.Result) error {
	for _, res := range results {
		if res == nil || res.Err == nil {
			continue
		}
		limit, raisable, ok := judgments.ImageLimit(res.Err)
		if !ok {
			return nil
		}
		fix := "start vLLM with a larger --limit-mm-per-prompt, or run -workload text (VETBENCH_TOKENS_WORKLOADS=text)"
		switch {
		case raisable:
		case limit == 0:
			fix = "the model takes no images: run -workload text (VETBENCH_TOKENS_WORKLOADS=text)"
		default:
			fix = "the model takes no more: run -workload text (VETBENCH_TOKENS_WORKLOADS=text)"
		}
		return fmt.Errorf("%w: %s: the server takes at most %d image(s) a prompt (%v); %s", ErrRefused, p.Workload, limit, res.Err, fix)
	}
	return nil
}

// waitUntil sleeps until t on the runner's clock (the arrival schedule of
// a rated run); false when ctx ended first.
func (r *Runner) waitUntil(ctx context.Context, t time.Time) bool {
	d := t.Sub(r.now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Requests turns stream results into receipt requests, each verified
// against want: a request without a transport error whose server count
// differs from want carries the count error (class "short" or "long").
// start is the run's start, from which each send time is counted.
func Requests(results []*stream.Result, want int, start time.Time) []tokens.Request {
	out := make([]tokens.Request, len(results))
	for i, res := range results {
		q := tokens.Request{ID: res.ID, PromptTokens: res.PromptTokens, OutputTokens: res.OutputTokens,
			E2ESeconds: res.E2E().Seconds(), FinishReason: res.FinishReason,
			StartSeconds: max(res.Sent.Sub(start).Seconds(), 0), LatencySeconds: res.ServeLatency().Seconds(),
			ITLSeconds: make([]float64, len(res.ChunkGaps))}
		if d, ok := res.TTFT(); ok {
			q.FirstTextSeconds = ptr(d.Seconds())
		}
		if d, ok := res.TimeBetweenTokens(); ok {
			q.TimeBetweenTokensSeconds = ptr(d.Seconds())
		}
		if d, ok := res.ServeTTFT(); ok {
			q.TTFTSeconds = ptr(d.Seconds())
		}
		for k, g := range res.ChunkGaps {
			q.ITLSeconds[k] = g.Seconds()
		}
		if err := res.Verify(want); err != nil {
			q.Error, q.ErrorClass = err.Error(), stream.ErrorClass(err)
		}
		out[i] = q
	}
	return out
}

// LittlesLaw checks a batch: the sampler's mean requests in flight over
// the window against requests ÷ wall × mean end-to-end latency, every
// request counted whatever its outcome.
func LittlesLaw(occ audit.Occupancy, wallSeconds float64, results []*stream.Result) receipts.LittlesLaw {
	var sum float64
	for _, res := range results {
		sum += res.E2E().Seconds()
	}
	mean := 0.0
	if len(results) > 0 {
		mean = sum / float64(len(results))
	}
	return audit.LittlesLaw(occ, audit.Window{WallSeconds: wallSeconds, Judgments: len(results), MeanLatencySeconds: mean})
}

func ptr[T any](v T) *T { return &v }

// asCompletions turns text chat requests into completions of the same
// prompt text, as it stands.
func asCompletions(reqs []stream.Request) {
	for i, q := range reqs {
		reqs[i].Prompt, reqs[i].Messages = q.Messages[0].Text, nil
	}
}

// check refuses a point the runner cannot measure: an invalid one, or an
// image workload through the completions endpoint.
func (r *Runner) check(p Point) error {
	if err := p.validate(); err != nil {
		return err
	}
	if r.api == tokens.APICompletions && p.Workload != tokens.WorkloadText {
		return fmt.Errorf("workload %s through %s: a completion is text only; measure it with %s", p.Workload, tokens.APICompletions, tokens.APIChat)
	}
	return nil
}
