// Package grid measures the speed test matrix: for each context length a
// prefill row (prompt tokens ÷ time to first token of a cold request) and,
// for each concurrency C, a cell of fixed-duration sustained decode.
//
// A cell's prompt starts with a tag of its own, so no cell or run shares
// cache with another; within the cell all C streams send the same prompt,
// and a scout request (one output token) warms its prefix first, as the
// peer tool does (method.md §1). C workers then keep C streams in flight,
// each sending the next request the moment its stream ends. The window
// opens only when the server is ready — nothing waiting, at least C
// running (/metrics gauges), every stream has tokens — for Hold without a
// break, and lasts Duration; tokens are counted inside it from continuous
// usage (stream.Measure). Every stream runs through a loop detector; a
// confirmed loop cancels the cell. A cell whose KV demand C × (context +
// output) exceeds the server's KV cache is skipped.
//
// Every wait has a deadline and honours ctx; a cancelled run returns the
// cells measured so far with a stopped block.
package grid

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/bench/loop"
	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/matrix"
)

// Options say what to measure and how long to wait.
type Options struct {
	Contexts     []int
	Levels       []int
	Duration     time.Duration
	OutputTokens int
	Targeting    string // TargetingEstimate or TargetingExact
	// ReadyTimeout bounds a cell's warm-up (0: ReadyTimeout(context)).
	ReadyTimeout  time.Duration
	LoopDetection bool
	// ScrapeInterval is how often /metrics is read (default 1 s); Hold how
	// long the ready conditions must hold (default 3 s; below 0: none);
	// DrainTimeout how long to wait for the server to empty between cells
	// (default 60 s); Pause the rest between cells (default 2 s; below 0:
	// none).
	ScrapeInterval, Hold, DrainTimeout, Pause time.Duration
	// NoPrefill leaves out the prefill rows.
	NoPrefill bool
	// Budget, when > 0, is the time the whole matrix may take: each cell
	// gets an equal share, its warm-up what the share leaves after the
	// window and the pause, and once the budget is spent the cells left
	// are Skipped. A budget too small for the windows is refused up front.
	Budget time.Duration
	// CalibrationTokens is the prompt length at which characters per
	// token are measured, once per run (default 8192, the peer's
	// --calibration-context 8k; less when no row is that long).
	CalibrationTokens int

	// cellWarmup is the warm-up a cell may take within the budget.
	cellWarmup time.Duration
}

// How a cell's context length is reached: estimated from a calibrated
// characters-per-token ratio, or counted exactly (tokenize).
const (
	TargetingEstimate = "estimate"
	TargetingExact    = "exact"
)

func (o Options) withDefaults() Options {
	if o.ScrapeInterval <= 0 {
		o.ScrapeInterval = time.Second
	}
	if o.Hold < 0 {
		o.Hold = 0
	} else if o.Hold == 0 {
		o.Hold = 3 * time.Second
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 60 * time.Second
	}
	if o.Pause < 0 {
		o.Pause = 0
	} else if o.Pause == 0 {
		o.Pause = 2 * time.Second
	}
	if o.Targeting == "" {
		o.Targeting = TargetingEstimate
	}
	if o.CalibrationTokens <= 0 {
		o.CalibrationTokens = 8192
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if len(o.Contexts) == 0 || slices.ContainsFunc(o.Contexts, func(c int) bool { return c < 1 }) {
		errs = append(errs, fmt.Errorf("contexts %v: want at least one, each >= 1", o.Contexts))
	}
	if len(o.Levels) == 0 || slices.ContainsFunc(o.Levels, func(c int) bool { return c < 1 }) {
		errs = append(errs, fmt.Errorf("levels %v: want at least one, each >= 1", o.Levels))
	}
	if o.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration %s: want > 0", o.Duration))
	}
	if o.Budget < 0 {
		errs = append(errs, fmt.Errorf("budget %s: want >= 0 (0: none)", o.Budget))
	}
	if o.OutputTokens < 2 {
		errs = append(errs, fmt.Errorf("output tokens %d: want at least 2", o.OutputTokens))
	}
	switch o.Targeting {
	case TargetingEstimate, TargetingExact:
	default:
		errs = append(errs, fmt.Errorf("targeting %q: want estimate or exact", o.Targeting))
	}
	return errors.Join(errs...)
}

// Runner measures matrices on one endpoint.
type Runner struct {
	Endpoint bench.Endpoint
	Model    string
	Identity matrix.Identity
	RunID    string
	Notes    []string
	// MaxModelLen is the model's, from /v1/models (0 unknown); KVTokens
	// the KV cache in tokens (0 unknown).
	MaxModelLen, KVTokens int
	// SharedPrefix: the server caches prefixes (cache_config_info
	// enable_prefix_caching), so a cell's streams share its prompt's KV
	// (CellSkipReason).
	SharedPrefix bool
	// Log, when set, gets one line per prefill row and cell as it ends.
	Log io.Writer
	// TimeScale > 1 is a twin that runs that many times faster than real
	// time (from the endpoint's target): every wait and every timestamp
	// of the run is on the twin's model clock, so the options are model
	// time and so is every figure.
	TimeScale float64

	client *stream.Client
	// streamOpts built client; rowClient adds a budget fitted to a row.
	streamOpts []stream.Option
	hc         *http.Client
	auth       func(*http.Request)
	wall       func() time.Time
	epoch      time.Time
	// cal holds the calibration per targeting mode, chars the document
	// length found per (mode, context): nothing is calibrated twice.
	cal   map[string]calibration
	chars map[calKey]int
	// stall and serverFlags are the options' (WithStallTimeout,
	// WithServerFlags).
	stall        time.Duration
	streamBudget stream.Budget
	serverFlags  string
	control      time.Duration
}

// Option configures a Runner.
type Option func(*Runner)

// WithStallTimeout fails a stream that sends nothing for d (0: never).
func WithStallTimeout(d time.Duration) Option { return func(r *Runner) { r.stall = d } }

// WithBudget bounds every stream at b.For(its max_tokens) after it is sent
// (default stream.DefaultBudget): past it the request fails as
// "deadline" and its cell with it, however the server keeps it alive.
func WithBudget(b stream.Budget) Option { return func(r *Runner) { r.streamBudget = b } }

// WithServerFlags are the server's flags as the user states them, pinned
// in the matrix's identity.
func WithServerFlags(flags string) Option { return func(r *Runner) { r.serverFlags = flags } }

// WithControlTimeout bounds each probe, /tokenize and /metrics scrape
// (default probe.DefaultTimeout): a server that does not answer one is
// found out in the control timeout, not in a stream's.
func WithControlTimeout(d time.Duration) Option { return func(r *Runner) { r.control = d } }

// WithHTTPClient sends every request with hc: the run's one client per
// target (default: a client of its own).
func WithHTTPClient(hc *http.Client) Option { return func(r *Runner) { r.hc = hc } }

// NewRunner probes the endpoint: served model and its max_model_len,
// vLLM version, and the cache configuration from /metrics.
func NewRunner(ctx context.Context, ep bench.Endpoint, opts ...Option) (*Runner, error) {
	if ep.Target.Kind == "" {
		return nil, errors.New("endpoint: no target kind (live, container or inprocess) for the matrix")
	}
	if len(ep.Replicas) > 0 {
		// Its figures are one server's (a C-stream point, a cell): spread
		// over several they would describe none of them.
		return nil, fmt.Errorf("%w: the speed matrix measures one endpoint, %d given (measure a router URL, or each replica in turn)", bench.ErrSeveralEndpoints, len(ep.Replicas)+1)
	}
	o := &Runner{streamBudget: stream.DefaultBudget}
	for _, opt := range opts {
		opt(o)
	}
	hc, auth := o.hc, ep.Authorize
	if hc == nil {
		hc = &http.Client{Transport: judgments.NewTransport(1024)}
	}
	// The key masked in what the server sends, no redirect out of the
	// origin; the probes, /tokenize and /metrics (r.hc) bounded by the
	// control timeout, the streams by their own.
	streams := judgments.Secret(ep.APIKey).Guard(hc)
	control := *streams
	control.Timeout = cmp.Or(o.control, probe.DefaultTimeout)
	hc = &control
	info, err := probe.Server(ctx, hc, ep.BaseURL, auth)
	if err != nil {
		return nil, fmt.Errorf("probe %s target: %w", ep.Target.Kind, err)
	}
	model := ep.Model
	if model == "" {
		model = info.Served[0].ID
	}
	if err := info.Check(model); err != nil {
		return nil, fmt.Errorf("%s target: %w", ep.Target.Kind, err)
	}
	r := &Runner{Endpoint: ep, Model: model, RunID: newRunID(), hc: hc, auth: auth, wall: time.Now, epoch: time.Now(), stall: o.stall,
		TimeScale: ep.Target.TimeScale, cal: map[string]calibration{}, chars: map[calKey]int{},
		Notes: append(append([]string(nil), ep.Notes...), info.Notes...)}
	pins := receipts.Pins{Model: model}
	info.Pin(&pins)
	for _, s := range info.Served {
		if s.ID == model {
			r.MaxModelLen = s.MaxModelLen
		}
	}
	r.Identity = matrix.Identity{Model: receipts.Weights(pins), ServerBuild: info.Version, ServerFlags: o.serverFlags,
		Tool: "vetbench", HarnessVersion: bench.HarnessVersion}
	if snap, err := scrape.Fetch(ctx, hc, ep.BaseURL+"/metrics", scrape.WithAuthorize(auth)); err == nil {
		r.Identity.CacheConfig = scrape.CacheConfig(snap)
		r.SharedPrefix = r.Identity.CacheConfig["enable_prefix_caching"] == "True"
		if kv, ok := KVCapacity(r.Identity.CacheConfig); ok {
			r.KVTokens = kv
		} else {
			r.Notes = append(r.Notes, "no KV capacity in vllm:cache_config_info: no cell is skipped for KV")
		}
	} else {
		r.Notes = append(r.Notes, fmt.Sprintf("no /metrics (%v): readiness from client streams only, no queue check, no KV skip", err))
	}
	r.streamBudget = o.streamBudget
	r.streamOpts = []stream.Option{stream.WithAPIKey(ep.APIKey), stream.WithHTTPClient(streams),
		stream.WithStallTimeout(r.stall), stream.WithClock(r.now)}
	r.client = stream.New(ep.BaseURL, append(r.streamOpts, stream.WithBudget(o.streamBudget))...)
	return r, nil
}

// RowBudget is the stream budget for a row of tokens: under the default
// budget a stream may wait for its first token as long as its cell may
// last (the context's warm-up bound, then the window), for a prefill of a
// million tokens takes two minutes on four H200 (the published 1024K row:
// 117.6 s), past the default 120 s. A budget the caller set (WithBudget,
// other than the default) is kept as it is.
func RowBudget(b stream.Budget, tokens int, o Options) stream.Budget {
	if b != stream.DefaultBudget {
		return b
	}
	warm := o.ReadyTimeout
	if warm <= 0 {
		warm = ReadyTimeout(tokens)
	}
	b.TTFT = max(b.TTFT, warm+o.Duration)
	return b
}

// rowClient is the run's client on a row's budget (RowBudget).
func (r *Runner) rowClient(tokens int, o Options) *stream.Client {
	b := RowBudget(r.streamBudget, tokens, o)
	if b == r.streamBudget {
		return r.client
	}
	return stream.New(r.Endpoint.BaseURL, append(slices.Clone(r.streamOpts), stream.WithBudget(b))...)
}

func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ErrStopped wraps why a matrix ended before its last cell.
var ErrStopped = errors.New("matrix stopped early")

// Run measures the matrix. It returns the matrix whenever anything was
// measured, also with an error (wrapping ErrStopped) when ctx was
// cancelled or the server could not be used; the matrix then says so in
// its stopped block.
func (r *Runner) Run(ctx context.Context, o Options) (*matrix.Matrix, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	m := &matrix.Matrix{
		Schema: matrix.Schema, Source: matrix.SourceVetbench, RunID: r.RunID, Started: r.wall().UTC(),
		Target: r.Endpoint.Receipt(), Identity: r.Identity,
		DurationSeconds: o.Duration.Seconds(), MaxOutputTokens: o.OutputTokens,
		Prefill: []matrix.Prefill{}, Cells: []matrix.Cell{},
		Warnings: slices.Clone(r.Notes),
	}
	// One line whatever the server calls its model (judgments.Printable).
	m.Description = fmt.Sprintf("vetbench %s on %s: sustained decode %s per cell, max_tokens %d, ignore_eos",
		bench.HarnessVersion, judgments.Printable(m.Identity.Model), o.Duration, o.OutputTokens)
	if s := r.TimeScale; s > 1 {
		m.Description += fmt.Sprintf("; twin at ×%g time scale, every figure in model time", s)
	}
	err := r.run(ctx, o, m)
	m.Finished = r.wall().UTC()
	m.Sort()
	m.Identity.Digest = m.IdentityDigest()
	if err != nil {
		m.Stopped = matrix.StoppedBy(err)
		return m, fmt.Errorf("%w: %w", ErrStopped, err)
	}
	return m, nil
}

func (r *Runner) run(ctx context.Context, o Options, m *matrix.Matrix) error {
	plan, err := r.Plan(o)
	if err != nil {
		return err
	}
	m.Warnings = append(m.Warnings, plan.Notice...)
	if len(plan.Rows) == 0 {
		return nil // no context fits (the notice says so)
	}
	o.cellWarmup = plan.CellWarmup
	o.CalibrationTokens = min(o.CalibrationTokens, slices.MaxFunc(plan.Rows, func(a, b PlanRow) int { return a.Tokens - b.Tokens }).Tokens)
	spent := r.budget(o)
	// The peer's order (method.md §2, test order L11740): every context
	// at the first level, each row's prefill just before it, on a server
	// that has not yet run a long cell; then the first context at every
	// level; then the other rows, row by row.
	rows := make([]*Row, len(plan.Rows))
	for i, pr := range plan.Rows {
		row, err := r.row(ctx, o, pr.Asked[0])
		if err != nil {
			return err
		}
		rows[i] = row
		if err := r.prefills(ctx, o, pr, row, spent, m); err != nil {
			return err
		}
		if err := r.measure(ctx, o, row, o.Levels[0], spent, m); err != nil {
			return err
		}
	}
	for _, row := range rows {
		for _, c := range o.Levels[1:] {
			if err := r.measure(ctx, o, row, c, spent, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// prefills measures a row's prefill, and the asked context's when the
// row was trimmed for its output (askedPrefill).
func (r *Runner) prefills(ctx context.Context, o Options, pr PlanRow, row *Row, spent func(time.Duration) string, m *matrix.Matrix) error {
	if o.NoPrefill {
		return nil
	}
	p := matrix.Prefill{Context: row.Label, ContextTokens: row.Tokens, Requests: 1, Status: matrix.Skipped, Reason: spent(0)}
	if p.Reason == "" {
		p = row.Prefill(ctx)
	}
	m.Prefill = append(m.Prefill, p)
	r.logf("prefill %s: %s", row.Label, prefillLine(p))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if p, ok := r.askedPrefill(ctx, o, pr, spent); ok {
		m.Prefill = append(m.Prefill, p)
		r.logf("prefill %s: %s", p.Context, prefillLine(p))
	}
	return ctx.Err()
}

// measure runs one cell (or skips it when the budget is spent) and the
// pause after it.
func (r *Runner) measure(ctx context.Context, o Options, row *Row, c int, spent func(time.Duration) string, m *matrix.Matrix) error {
	var cell matrix.Cell
	if why := spent(o.Duration + o.Pause); why != "" {
		cell = matrix.Cell{Context: row.Label, ContextTokens: row.Tokens, Concurrency: c, Status: matrix.Skipped, Reason: why}
	} else {
		cell = row.Cell(ctx, c)
	}
	m.Cells = append(m.Cells, cell)
	for _, w := range cell.Warnings {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%s c=%d: %s", row.Label, c, w))
	}
	r.logf("%s c=%d: %s", row.Label, c, cellLine(cell))
	if err := ctx.Err(); err != nil {
		return err
	}
	if cell.Status != matrix.Skipped {
		return r.sleep(ctx, o.Pause)
	}
	return nil
}

// askedPrefill is the prefill row of a context the decode row trimmed
// for its output: a prefill asks one token, so its prompt needs room for
// that alone, and it runs at the context asked, up to max_model_len − 64
// (the peer's prefill cap, method.md §6), under the asked context's
// label; the published DeepSeek-V4-Flash matrix has both, 1019K (the
// decode row's scout) and 1024K. False when the row was not trimmed or
// the prompt would be no longer than the row's.
func (r *Runner) askedPrefill(ctx context.Context, o Options, pr PlanRow, spent func(time.Duration) string) (matrix.Prefill, bool) {
	tokens, label := askedPrefillContext(pr, r.MaxModelLen)
	if label == "" {
		return matrix.Prefill{}, false
	}
	if why := spent(0); why != "" {
		return matrix.Prefill{Context: label, ContextTokens: tokens, Requests: 1, Status: matrix.Skipped, Reason: why}, true
	}
	chars, err := r.promptChars(ctx, o, tokens)
	if err != nil {
		return matrix.Prefill{Context: label, ContextTokens: slices.Max(pr.Asked), Requests: 1, Status: matrix.Failed, Reason: "calibrate the prompt: " + err.Error()}, true
	}
	row := &Row{Asked: slices.Max(pr.Asked), Tokens: tokens, Label: label, r: r, o: o, chars: chars}
	p := row.Prefill(ctx)
	p.ContextTokens = row.Asked // the row is the context asked; its prompt is what fits (PromptTokens says)
	return p, true
}

// askedPrefillContext is the asked context's prefill length and label,
// for an asked context the server takes as a prompt (at most the 64-token
// room taken from it: "1024K" for 1048512 tokens of max_model_len
// 1048576); "" when there is no such row (not trimmed, or asked beyond
// max_model_len, as the default grid on a short-context twin).
func askedPrefillContext(pr PlanRow, maxModelLen int) (int, string) {
	if !pr.Trimmed || maxModelLen <= 0 {
		return 0, ""
	}
	want := slices.Max(pr.Asked)
	tokens := min(want, maxModelLen-64)
	label := matrix.ContextLabel(want)
	if want-tokens > 64 || tokens <= pr.Tokens || label == pr.Label {
		return 0, ""
	}
	return tokens, label
}

// budget returns a check of the run's budget: "" while need more time
// still fits, else why the next prefill or cell is skipped.
func (r *Runner) budget(o Options) func(need time.Duration) string {
	start := r.now()
	return func(need time.Duration) string {
		if o.Budget <= 0 {
			return ""
		}
		used := r.now().Sub(start)
		if used+need <= o.Budget {
			return ""
		}
		return fmt.Sprintf("the matrix's budget of %s is spent (%s used)", o.Budget, used.Round(time.Second))
	}
}

// Row is one context length of a matrix, its prompt calibrated: measure
// its prefill and its cells with it.
type Row struct {
	// Asked is the context asked for; Tokens what it became (trimmed to
	// max_model_len − output − 64); Label the row's name ("123K").
	Asked, Tokens int
	Label         string
	// Warnings say what was changed (a trimmed context).
	Warnings []string

	r     *Runner
	o     Options
	chars int
	cl    *stream.Client
}

// client is the row's stream client (rowClient), made once.
func (row *Row) client() *stream.Client {
	if row.cl == nil {
		row.cl = row.r.rowClient(row.Tokens, row.o)
	}
	return row.cl
}

// Row prepares context (in tokens) for o: trims it to fit, and finds how
// many characters of document make a prompt that long — from the run's
// one calibration (the first row's; see promptChars), checked by
// /tokenize for exact targeting. It returns nil and no error for a
// context that cannot fit at all.
func (r *Runner) Row(ctx context.Context, o Options, context int) (*Row, error) {
	o = o.withDefaults()
	probe := o
	probe.Contexts, probe.Levels = []int{max(context, 1)}, []int{1}
	if err := probe.validate(); err != nil {
		return nil, err
	}
	o.CalibrationTokens = min(o.CalibrationTokens, max(context, 1))
	row, err := r.row(ctx, o, context)
	if row != nil && row.chars == 0 {
		return nil, err
	}
	return row, err
}

func (r *Runner) row(ctx context.Context, o Options, want int) (*Row, error) {
	row := &Row{Asked: want, Tokens: want, r: r, o: o}
	if tokens, fits := r.fit(want, o.OutputTokens); !fits {
		row.Tokens = tokens
		row.Warnings = append(row.Warnings, fmt.Sprintf("context %s trimmed to %d tokens (%s) to fit max_model_len %d − output %d − 64",
			matrix.ContextLabel(want), tokens, matrix.ContextLabel(tokens), r.MaxModelLen, o.OutputTokens))
	}
	if row.Tokens < 1 {
		row.Warnings = append(row.Warnings, fmt.Sprintf("context %s does not fit at all: skipped", matrix.ContextLabel(want)))
		return row, nil
	}
	row.Label = matrix.ContextLabel(row.Tokens)
	chars, err := r.promptChars(ctx, o, row.Tokens)
	if err != nil {
		if ctx.Err() != nil {
			return row, ctx.Err()
		}
		return row, fmt.Errorf("context %s: calibrate the prompt: %w", row.Label, err)
	}
	row.chars = chars
	return row, nil
}

func (r *Runner) logf(format string, args ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, format+"\n", args...)
	}
}

// tag is the unique start of a prompt: run, purpose, context, level.
func (r *Runner) tag(purpose string, tokens, c int) string {
	return fmt.Sprintf("[vb-%s-%s-ctx%d-c%d]", r.RunID, purpose, tokens, c)
}

// Prefill sends one cold request (a tag of its own, one output token)
// and reads prompt tokens ÷ time to first token.
func (row *Row) Prefill(ctx context.Context) matrix.Prefill {
	r, tokens, chars, o := row.r, row.Tokens, row.chars, row.o
	p := matrix.Prefill{Context: row.Label, ContextTokens: tokens, Requests: 1}
	if reason := SkipReason(1, tokens, 1, r.KVTokens, r.MaxModelLen); reason != "" {
		p.Status, p.Reason = matrix.Skipped, reason
		return p
	}
	if err := r.drain(ctx, o); err != nil {
		p.Status, p.Reason = matrix.Failed, err.Error()
		return p
	}
	req := stream.Text(prompt(r.tag("prefill", tokens, 1), chars), 1)
	req.Model = r.Model
	res := row.client().Do(ctx, req, nil)
	ttft, ok := res.TTFT()
	switch {
	case res.Err != nil:
		p.Status, p.Reason = matrix.Failed, res.Err.Error()
	case !ok || ttft <= 0 || res.PromptTokens <= 0:
		p.Status, p.Reason = matrix.Failed, "no first token or no usage.prompt_tokens to time the prefill by"
	default:
		p.Status = matrix.Valid
		p.Samples = 1
		p.PromptTokens = ptr(res.PromptTokens)
		p.TTFTMs = ptr(ttft.Seconds() * 1000)
		p.TokS = ptr(float64(res.PromptTokens) / ttft.Seconds())
	}
	return p
}

// drain waits until the server runs and queues nothing (the last cell's
// streams are gone), at most DrainTimeout. Without metrics it returns at
// once.
func (r *Runner) drain(ctx context.Context, o Options) error {
	deadline := r.now().Add(o.DrainTimeout)
	for {
		g := r.gauges(ctx)
		if !g.OK || (g.Running == 0 && g.Waiting == 0) {
			return nil
		}
		if !r.now().Before(deadline) {
			return fmt.Errorf("the server did not drain within %s (%s running, %s waiting)", o.DrainTimeout, num(g.Running), num(g.Waiting))
		}
		if err := r.sleep(ctx, min(o.ScrapeInterval, 100*time.Millisecond)); err != nil {
			return err
		}
	}
}

// scrapeTimeout bounds one /metrics reading: a server that does not
// answer is a failed reading, not a hung cell.
const scrapeTimeout = 10 * time.Second

// gauges reads num_requests_running and num_requests_waiting.
func (r *Runner) gauges(ctx context.Context) Gauges {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	snap, err := scrape.Fetch(ctx, r.hc, r.Endpoint.BaseURL+"/metrics", scrape.WithAuthorize(r.auth))
	g := Gauges{At: r.now(), snap: snap}
	if err != nil {
		return g
	}
	run, ok1 := gaugeSum(snap, "vllm:num_requests_running")
	wait, ok2 := gaugeSum(snap, "vllm:num_requests_waiting")
	g.Running, g.Waiting, g.OK = run, wait, ok1 && ok2
	return g
}

// gaugeSum sums a gauge over its series (engines); false when absent.
func gaugeSum(s scrape.Snapshot, name string) (float64, bool) {
	f := s.Families[name]
	if f == nil || len(f.GetMetric()) == 0 {
		return 0, false
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		switch {
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, true
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Cell measures the row's cell at concurrency c: sustained decode for the
// options' duration after the cell is ready, or its status when it is
// skipped, queued, looped or failed.
func (row *Row) Cell(ctx context.Context, c int) matrix.Cell {
	r, tokens, chars, o := row.r, row.Tokens, row.chars, row.o
	cell := matrix.Cell{Context: matrix.ContextLabel(tokens), ContextTokens: tokens, Concurrency: c}
	if reason := CellSkipReason(c, tokens, o.OutputTokens, r.KVTokens, r.MaxModelLen, r.SharedPrefix); reason != "" {
		cell.Status, cell.Reason = matrix.Skipped, reason
		return cell
	}
	fail := func(why string) matrix.Cell {
		cell.Status, cell.Reason = matrix.Failed, why
		return cell
	}
	if err := r.drain(ctx, o); err != nil {
		return fail("before the cell: " + err.Error())
	}
	text := prompt(r.tag("cell", tokens, c), chars)
	scout := stream.Text(text, 1)
	scout.Model = r.Model
	client := row.client()
	if res := client.Do(ctx, scout, nil); res.Err != nil {
		return fail("the scout request failed: " + res.Err.Error())
	}

	cellCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := &workers{c: c, has: map[int]bool{}, detect: o.LoopDetection, client: client}
	var wg sync.WaitGroup
	for i := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(cellCtx, cancel, r, i, text, o)
		}()
	}
	stop := func() {
		w.closing.Store(true)
		cancel(errWindowClosed)
		wg.Wait()
	}

	// Warm-up: until ready, or the timeout (measured anyway, flagged).
	g, notReady := r.warmUp(cellCtx, row, c, w)
	if cause := context.Cause(cellCtx); cause != nil {
		stop()
		return r.finish(ctx, cell, w, time.Time{}, time.Time{}, nil, notReady, o)
	}

	// The window.
	start := r.now()
	end := start.Add(o.Duration)
	readings := []Gauges{g}
	for cellCtx.Err() == nil {
		left := end.Sub(r.now())
		if left <= 0 {
			break
		}
		_ = r.sleep(cellCtx, min(o.ScrapeInterval, left))
		if cellCtx.Err() != nil {
			break
		}
		readings = append(readings, r.gauges(cellCtx))
	}
	closed := r.now()
	stop()
	return r.finish(ctx, cell, w, start, closed, readings, notReady, o)
}

var errWindowClosed = errors.New("the window closed")

// warmUp waits until the cell at c is ready, or its warm-up timeout (by
// context, or what the budget leaves it) has passed: then notReady says
// what was missing. g is the last reading.
func (r *Runner) warmUp(ctx context.Context, row *Row, c int, w *workers) (g Gauges, notReady string) {
	o := row.o
	timeout := o.ReadyTimeout
	if timeout <= 0 {
		timeout = ReadyTimeout(row.Tokens)
	}
	if o.cellWarmup > 0 {
		timeout = min(timeout, o.cellWarmup)
	}
	ready := Readiness{C: c, Hold: o.Hold, ShortOutput: o.OutputTokens <= ShortOutputTokens}
	deadline := r.now().Add(timeout)
	for {
		g = r.gauges(ctx)
		ok, why := ready.ObserveDone(g, w.streaming(), w.completed())
		if ok || ctx.Err() != nil {
			return g, ""
		}
		if !r.now().Before(deadline) {
			return g, fmt.Sprintf("%s after %s", why, timeout)
		}
		_ = r.sleep(ctx, o.ScrapeInterval)
	}
}

// finish classifies the cell and fills its figures.
func (r *Runner) finish(ctx context.Context, cell matrix.Cell, w *workers, start, end time.Time, readings []Gauges, notReady string, o Options) matrix.Cell {
	out := Outcome{C: cell.Concurrency, Loop: w.loopErr(), Failures: w.failures(), NotReady: notReady, Occupancy: Occupy(readings)}
	if ctx.Err() != nil && out.Loop == nil {
		out.Failures = append([]string{"canceled: " + ctx.Err().Error()}, out.Failures...)
	}
	cell.Status, cell.Reason = Classify(out)
	if err := r.drain(ctx, o); err != nil && ctx.Err() == nil {
		cell.Status = matrix.Failed
		cell.Reason = joinReason(cell.Reason, "after the cell: "+err.Error())
	}
	// A loop voids the cell (the peer's aggregate −3): figures of a model
	// repeating itself measure nothing worth keeping.
	if start.IsZero() || cell.Status == matrix.Looped {
		return cell
	}
	if !Figures(&cell, w.all(), start, end, out.Occupancy) &&
		(cell.Status == matrix.Valid || cell.Status == matrix.RequestsQueued) {
		cell.Status = matrix.Failed
		cell.Reason = joinReason(cell.Reason, "no token arrived inside the window")
	}
	cell.Serve = Serve(w.all(), end, o.OutputTokens)
	if len(readings) > 1 {
		srv := scrape.Diff(readings[0].snap, readings[len(readings)-1].snap)
		if dw := audit.DeliveryWarning(&srv); dw != "" {
			fellBehind(&cell, dw)
		}
	}
	return cell
}

// fellBehind records that the twin fell behind its model in the cell: the
// warning, and on a Requests queued cell a reason that says the queue may
// be the machine's (requests that reach a late twin late leave it running
// fewer than C), so the status does not read as the model's alone.
func fellBehind(cell *matrix.Cell, warning string) {
	cell.Warnings = append(cell.Warnings, warning)
	if cell.Status == matrix.RequestsQueued {
		cell.Reason = joinReason(cell.Reason, behindQueued)
	}
}

// behindQueued ends the reason of a Requests queued cell measured while
// the twin fell behind its model.
const behindQueued = "the twin fell behind its model here, so the queue may be this machine's, not the model's"

// Figures fills a cell's figures from its streams and the window (start,
// end]: tokens whose usage update arrived inside (a stream that began
// before counts from start, one still running at end up to end) ÷ the
// usage window (start to the last update); per request = total ÷ C; TTFT
// and time between tokens as medians over every request of the cell,
// warm-up included (as the peer reports them); completed = streams that
// ended cleanly inside; average active from the window's gauge readings.
// False when no token arrived inside the window.
func Figures(cell *matrix.Cell, results []*stream.Result, start, end time.Time, occ Occupancy) bool {
	win := stream.Measure(results, start, end)
	if win.Last.IsZero() {
		return false
	}
	total := win.TokS()
	cell.TotalTokS = ptr(total)
	cell.PerRequestTokS = ptr(total / float64(cell.Concurrency))
	cell.OutputTokens = ptr(win.Tokens)
	cell.MeasuredSeconds = ptr(win.Seconds())
	var ttft, tbt []float64
	for _, res := range results {
		if d, ok := res.TTFT(); ok {
			ttft = append(ttft, d.Seconds()*1000)
		}
		if d, ok := res.TimeBetweenTokens(); ok {
			tbt = append(tbt, d.Seconds()*1000)
		}
		if res.Done && res.Err == nil && res.End.After(start) && !res.End.After(end) {
			cell.CompletedRequests++
		}
	}
	cell.TTFTMs = median(ttft)
	cell.TimeBetweenTokensMs = median(tbt)
	if occ.Samples > 0 {
		cell.AverageActive = ptr(occ.MeanRunning)
	}
	return true
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// median is the p50 (linear) of xs; nil without samples.
func median(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	pos := 0.5 * float64(len(s)-1)
	lo := int(pos)
	hi := min(lo+1, len(s)-1)
	return ptr(s[lo] + (s[hi]-s[lo])*(pos-float64(lo)))
}

func ptr[T any](v T) *T { return &v }

func prefillLine(p matrix.Prefill) string {
	if p.TokS == nil {
		return p.Status.Label() + ": " + p.Reason
	}
	return fmt.Sprintf("%.1f tok/s, TTFT %.0f ms (%d prompt tokens)", *p.TokS, *p.TTFTMs, *p.PromptTokens)
}

func cellLine(c matrix.Cell) string {
	s := c.Status.Label()
	if c.TotalTokS != nil {
		s = fmt.Sprintf("%.1f tok/s total, %s", *c.TotalTokS, s)
	}
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// workers keeps C streams in flight and remembers every result.
type workers struct {
	c       int
	client  *stream.Client
	closing atomic.Bool

	mu      sync.Mutex
	results []*stream.Result
	has     map[int]bool // workers whose streams have had tokens
	looped  error
	failed  []string
	// detect: loop detection is on; repeats confirms a loop across the
	// cell's requests (all of one prompt) that each end in a tail too
	// short to confirm alone.
	detect  bool
	repeats loop.Repeats
}

func (w *workers) loop(ctx context.Context, cancel context.CancelCauseFunc, r *Runner, i int, text string, o Options) {
	for ctx.Err() == nil {
		req := stream.Text(text, o.OutputTokens)
		req.Model = r.Model
		var pair loop.Pair
		res := w.client.Do(ctx, req, func(u stream.Update) error {
			if u.Tokens > 0 || u.Content != "" || u.Reasoning != "" {
				w.mark(i)
			}
			if !o.LoopDetection {
				return nil
			}
			return pair.Write(u.Content, u.Reasoning)
		})
		w.mu.Lock()
		w.results = append(w.results, res)
		var le *loop.Error
		if w.detect && !errors.As(res.Err, &le) {
			// The tail after the last 256-character check, and what
			// earlier requests of the prompt suspected.
			_ = errors.As(w.repeats.Close(&pair), &le)
		}
		switch {
		case le != nil:
			if w.looped == nil {
				w.looped = le
			}
			w.mu.Unlock()
			cancel(le)
			return
		case res.Err != nil && !w.closing.Load() && ctx.Err() == nil:
			w.failed = append(w.failed, fmt.Sprintf("%s (%s)", res.Err, stream.ErrorClass(res.Err)))
			w.mu.Unlock()
			cancel(res.Err)
			return
		case res.Err == nil && res.OutputTokens != o.OutputTokens:
			// ignore_eos asked for exactly OutputTokens: a short stream is a
			// failure, and the cell stops at it like at any other.
			err := res.Verify(o.OutputTokens)
			w.failed = append(w.failed, err.Error())
			w.mu.Unlock()
			cancel(err)
			return
		}
		w.mu.Unlock()
	}
}

func (w *workers) mark(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.has[i] = true
}

// streaming counts workers whose streams have received a token.
func (w *workers) streaming() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, ok := range w.has {
		if ok {
			n++
		}
	}
	return n
}

// completed counts the cell's requests that ended cleanly.
func (w *workers) completed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, res := range w.results {
		if res.Err == nil && res.Done {
			n++
		}
	}
	return n
}

func (w *workers) all() []*stream.Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.results)
}

func (w *workers) loopErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.looped
}

func (w *workers) failures() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.failed)
}
