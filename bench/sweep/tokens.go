package sweep

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/grid"
	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// TokenStep is one token-throughput point of a run: a workload at a level,
// k-th of N.
type TokenStep struct {
	Workload    string
	Concurrency int
	K, N        int
}

// Name is the point's sub-benchmark name: workload=<w>/c=<c>.
func (s TokenStep) Name() string { return fmt.Sprintf("workload=%s/c=%d", s.Workload, s.Concurrency) }

// TokenSteps are the configured workloads × levels, in order.
func (r *Run) TokenSteps() []TokenStep {
	var out []TokenStep
	for _, w := range r.Config.Tokens.Workloads {
		for _, c := range r.Config.Tokens.Levels {
			out = append(out, TokenStep{Workload: w, Concurrency: c})
		}
	}
	for i := range out {
		out[i].K, out[i].N = i+1, len(out)
	}
	return out
}

// TokenPoint is what decode measures at st: the configuration's output
// length, repeats, warm-ups, accepted failures and SLO.
func (r *Run) TokenPoint(st TokenStep) decode.Point {
	return TokenPoint(r.Config, st.Workload, st.Concurrency)
}

// TokenPoint is the token point cfg asks for at a workload and level: the
// one place a configuration becomes a decode.Point.
func TokenPoint(cfg config.Config, workload string, c int) decode.Point {
	t := cfg.Tokens
	p := decode.Point{Workload: workload, Concurrency: c, OutputTokens: t.OutputTokens, Repeats: t.Repeats,
		Warmup: t.Warmup, MaxFailed: t.MaxFailed, NumPrompts: t.NumPrompts, RequestRate: t.RequestRate,
		Burstiness: t.Burstiness, Seed: cfg.OpenLoop.Seed, ServeGoodput: t.Goodput, MetricPercentiles: t.MetricPercentiles}
	return p.WithSLO(cfg.SLO.TTFT, cfg.SLO.TPOT, cfg.SLO.Goodput)
}

// TokenRunner is a token-throughput runner on the run's target (probed
// now; opts as decode's, e.g. decode.WithSharedPrompts for the pitfall).
func (r *Run) TokenRunner(ctx context.Context, opts ...decode.Option) (*decode.Runner, error) {
	if r.Config.Tokens.API == tokens.APICompletions && slices.Contains(r.Config.Tokens.Workloads, tokens.WorkloadOneImage) {
		return nil, fmt.Errorf("workload %s through %s: a completion is text only; measure it with -api chat, or set -workload %s",
			tokens.WorkloadOneImage, tokens.APICompletions, tokens.WorkloadText)
	}
	base := []decode.Option{decode.WithStallTimeout(r.Config.RequestTimeout), decode.WithBudget(StreamBudget(r.Config)),
		decode.WithServerFlags(r.Config.ServerFlags), decode.WithAPI(r.Config.Tokens.API),
		decode.WithHTTPClient(&http.Client{Transport: r.transport}), decode.WithControlTimeout(r.Config.ControlDeadline())}
	return decode.NewRunner(ctx, r.Target.Endpoint, append(base, opts...)...)
}

// TokenOutcome is one measured token point: its receipt (nil when nothing
// ran), where it was written, and its error.
type TokenOutcome struct {
	TokenStep
	Receipt *tokens.Receipt
	Path    string
	Err     error
}

// MeasureTokens measures st with tr and writes its receipt
// (receipts/tokens_<workload>_c<N>.json, then receipts/pass<k>) and its
// benchmark line, a failed point's included (its failed-requests count
// says so, and the run's bench.txt ends FAIL), as a judgments point's. The error is the run's (a receipt or line that could
// not be written); the point's is the outcome's.
func (r *Run) MeasureTokens(ctx context.Context, tr *decode.Runner, st TokenStep) (TokenOutcome, error) {
	o := TokenOutcome{TokenStep: st}
	o.Receipt, o.Err = tr.Measure(ctx, r.TokenPoint(st))
	if o.Err == nil && o.Receipt != nil {
		o.Err = TokenLittlesLaw(o.Receipt)
	}
	if o.Receipt == nil || r.Dir == nil {
		return o, nil
	}
	path, err := r.WriteTokens(o.Receipt)
	if err != nil {
		return o, err
	}
	o.Path = path
	// A point that did not pass has its line too, its failed-requests
	// beside what it measured, as a judgments point has: a run whose
	// points all failed still says what it measured, and bench.txt ends
	// FAIL.
	return o, r.Line("Tokens", st.Name(), 1, decode.Metrics(o.Receipt))
}

// TokenLittlesLaw is a token point's error when a repeat breaks Little's
// law by audit.Check, the one rule vetbench tokens (MeasureTokens) and
// BenchmarkTokens both apply; nil when every repeat holds.
func TokenLittlesLaw(rec *tokens.Receipt) error {
	var errs []error
	for i, run := range rec.Runs {
		errs = append(errs, audit.Check(fmt.Sprintf("repeat %d", i+1), run.LittlesLaw))
	}
	return errors.Join(errs...)
}

// WriteTokens writes a token receipt into the run directory.
func (r *Run) WriteTokens(rec *tokens.Receipt) (string, error) {
	if r.Dir == nil {
		return "", fmt.Errorf("no run directory: receipts are written only when benchmarking (-bench)")
	}
	path, _, err := r.Dir.NextReceipt(fmt.Sprintf("%s%s_c%d.json", tokens.ReceiptPrefix, rec.Point.Workload, rec.Point.Concurrency))
	if err == nil {
		err = r.write(func() error { return tokens.WriteFile(path, rec) })
	}
	if err != nil {
		return "", fmt.Errorf("write receipt: %w", err)
	}
	return path, nil
}

// MatrixRunner is a speed-matrix runner on the run's target and the
// configuration's matrix options.
func (r *Run) MatrixRunner(ctx context.Context) (*grid.Runner, grid.Options, error) {
	gr, err := grid.NewRunner(ctx, r.Target.Endpoint, grid.WithStallTimeout(r.Config.RequestTimeout), grid.WithBudget(StreamBudget(r.Config)),
		grid.WithServerFlags(r.Config.ServerFlags), grid.WithHTTPClient(&http.Client{Transport: r.transport}),
		grid.WithControlTimeout(r.Config.ControlDeadline()))
	return gr, MatrixOptions(r.Config.Matrix), err
}

// StreamBudget is the configuration's deadline rule for every stream of
// the token benchmark and the matrix: the one place it becomes a
// stream.Budget.
func StreamBudget(cfg config.Config) stream.Budget {
	return stream.Budget{TTFT: cfg.Stream.TTFTBudget, TPOT: cfg.Stream.SlowestTPOT}
}

// MatrixOptions are the configuration's matrix, with the peer's waits: the
// one place a configuration becomes grid.Options.
func MatrixOptions(m config.Matrix) grid.Options {
	return grid.Options{Contexts: slices.Clone(m.Contexts), Levels: slices.Clone(m.Levels), Duration: m.Duration,
		OutputTokens: m.OutputTokens, Targeting: m.Targeting, ReadyTimeout: m.ReadyTimeout, LoopDetection: m.LoopDetection,
		ScrapeInterval: m.ScrapeInterval, Hold: m.Hold, Pause: m.Pause, Budget: m.Budget}
}

// Pitfall measures the cache pitfall on a run's target: its two runners,
// repeating prompts and unique ones.
type Pitfall struct {
	run            *Run
	shared, unique *decode.Runner
}

// Pitfall opens the two runners of the cache pitfall.
func (r *Run) Pitfall(ctx context.Context) (*Pitfall, error) {
	unique, err := r.TokenRunner(ctx)
	if err != nil {
		return nil, err
	}
	shared, err := r.TokenRunner(ctx, decode.WithSharedPrompts())
	if err != nil {
		return nil, err
	}
	return &Pitfall{run: r, shared: shared, unique: unique}, nil
}

// Measure measures the configured levels of workload with repeating and
// with unique prompts (decode.CachePitfall). The SLO is left out: the
// inflation is throughput's, there is no target to miss.
func (p *Pitfall) Measure(ctx context.Context, workload string) ([]decode.Inflation, error) {
	base := TokenPoint(p.run.Config, workload, 1)
	base.SLO = nil
	return decode.CachePitfall(ctx, p.shared, p.unique, base, p.run.Config.Tokens.Levels)
}

// MeasureTokenPass measures every token point with tr, in order (each
// written by MeasureTokens), handing each outcome to each, and returns
// the receipts, how many points failed (an error with a receipt), and
// what ended the pass early: ErrInterrupted (ctx done), the run's error
// (a receipt not written), or the error of a point that measured nothing.
func (r *Run) MeasureTokenPass(ctx context.Context, tr *decode.Runner, each func(TokenOutcome)) (recs []*tokens.Receipt, failed int, err error) {
	for _, st := range r.TokenSteps() {
		if ctx.Err() != nil {
			return recs, failed, ErrInterrupted
		}
		o, err := r.MeasureTokens(ctx, tr, st)
		if err != nil {
			return recs, failed, err
		}
		each(o)
		switch {
		case o.Receipt == nil && o.Err != nil:
			return recs, failed, o.Err
		case o.Err != nil:
			failed++
		}
		if o.Receipt != nil {
			recs = append(recs, o.Receipt)
		}
	}
	return recs, failed, nil
}
