package report

import (
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/receipts/tokens"
)

// A token point's figures over a run's passes, as the judgment curves'
// (spread.go): bench.txt's lines when the run has them (the medians
// vetbench gate compares), else one value per pass's receipt.

// tokenKey is a token point of a run as its bench.txt names it: workload
// and concurrency (a run measures one output length, which the name
// leaves out).
type tokenKey struct {
	workload string
	c        int
}

// tokenFigure is one figure of a token point: its unit in bench.txt and
// its value in a receipt in that unit (false when the receipt has none,
// as BenchmarkTokens then reports none).
type tokenFigure struct {
	unit string
	of   func(*tokens.Receipt) (float64, bool)
}

var (
	tokAggregate = tokenFigure{tokens.UnitOutputTokPerSec, func(r *tokens.Receipt) (float64, bool) {
		return r.Summary.AggregateOutputTokS, r.Summary.AggregateOutputTokS > 0
	}}
	tokPerRequest = tokenFigure{tokens.UnitRequestTokPerSec, func(r *tokens.Receipt) (float64, bool) {
		return r.Summary.PerRequestOutputTokS, r.Summary.AggregateOutputTokS > 0
	}}
	tokBatch = tokenFigure{tokens.UnitBatchSecPerToken, func(r *tokens.Receipt) (float64, bool) {
		return r.Summary.MeanBatchMsPerToken / 1000, r.Summary.MeanBatchMsPerToken > 0
	}}
	tokTTFT = tokenFigure{tokens.UnitTTFTP50Sec, func(r *tokens.Receipt) (float64, bool) {
		v := r.Summary.Serve
		if v == nil || v.Completed == 0 {
			return 0, false
		}
		return v.MedianTTFTMs / 1000, true
	}}
)

// tokenBenchPoints maps bench.txt's token benchmarks
// (Tokens/workload=text/c=4-2) to their points; other names map to none.
func tokenBenchPoints(names []string) map[tokenKey]string {
	out := map[tokenKey]string{}
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, "Tokens/")
		if !ok {
			continue
		}
		w, cs, ok := strings.Cut(trimProcs(rest), "/")
		w, wok := strings.CutPrefix(w, "workload=")
		cs, cok := strings.CutPrefix(cs, "c=")
		c, err := strconv.Atoi(cs)
		if ok && wok && cok && err == nil && w != "" && c > 0 {
			out[tokenKey{w, c}] = name
		}
	}
	return out
}

// tokenPasses are the run's receipts of t's point, one per pass, in pass
// order (t among them).
func (r *Run) tokenPasses(t *tokens.Receipt) []*tokens.Receipt {
	var out []*tokens.Receipt
	for _, pass := range append([][]TokensEntry{r.Tokens}, r.TokenPasses...) {
		for _, e := range pass {
			if p := e.Receipt.Point; p.Workload == t.Point.Workload && p.OutputTokens == t.Point.OutputTokens && p.Concurrency == t.Point.Concurrency {
				out = append(out, e.Receipt)
			}
		}
	}
	return out
}

// tokenSpread is figure f of t's point over run r's passes.
func (b *builder) tokenSpread(r *Run, t *tokens.Receipt, f tokenFigure) (Spread, bool) {
	var vs []float64
	for _, p := range r.tokenPasses(t) {
		if v, ok := f.of(p); ok {
			vs = append(vs, v)
		}
	}
	return b.spreadOf(r, r.tokenNames[tokenKey{t.Point.Workload, t.Point.Concurrency}], f.unit, vs)
}

// tokenSpreadNote says what the token curves' points and bars are, per
// run; "" when no run has more than one pass.
func (b *builder) tokenSpreadNote() string {
	var labels, froms []string
	several := false
	for _, r := range b.runs() {
		if len(r.Tokens) == 0 {
			continue
		}
		if sp, ok := b.tokenSpread(r, r.Tokens[0].Receipt, tokAggregate); ok {
			labels, froms = append(labels, r.Label), append(froms, sp.source())
			several = several || sp.N > 1
		}
	}
	if !several {
		return ""
	}
	return "Curves and the points table: the median of the passes at each concurrency, bars their min–max (" + spreadSources(labels, froms) + ")."
}
