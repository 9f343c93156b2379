package fit

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/internal/simplex"
)

// H100 fits ProfileH100Gemma4's timings (and its KV block count) to
// typevet's receipts rec: Nelder–Mead over the log of each, minimising
// weighted squared relative errors against the receipts in
// stub.TypevetFitted only (the six full-set receipts and the signatures
// subset at c=1, 16, 32; every other receipt is held out, a prediction),
// each simulated inside typevet's whole sweep with the typevet dispatch
// (sweep; only: one set, "" all). Judgments/s weigh most, with a steep
// penalty past s.Margin (default 6%); then latency, hit rate, queue time
// (checks only: the twin queues for KV less than the H100 did) and the
// server's own split of a request (e2e and prefill means from /metrics,
// weighed most at c=1, where nothing queues), which with the client
// latency identifies network, frontend, tokenize calls and engine; every
// other figure's penalty starts past 15%.
func H100(sweep *stub.TypevetSweep, rec map[string]stub.TypevetReceipt, only string, s Search) (Result, error) {
	s = s.or(4, 300, 0.06)
	start := stub.ProfileH100Gemma4()
	fitted := h100Fitted(sweep.Run(start, 1, only))
	if len(fitted) == 0 {
		return Result{}, fmt.Errorf("set %q: no receipt of the sweep is one the profile is fitted on", only)
	}
	for _, k := range fitted {
		if _, ok := rec[k]; !ok {
			return Result{}, fmt.Errorf("receipts: no %s, which the fit uses", k)
		}
	}
	figures := func(p stub.Profile) []stub.Figure {
		runs := sweep.Run(p, 1, only)
		var out []stub.Figure
		for _, k := range fitted {
			out = append(out, stub.TypevetFigures(k, runs[k], rec[k])...)
		}
		return out
	}
	score := func(v []float64) float64 { return h100Score(figures(h100From(v)), s.Margin) }
	x := h100Vector(start)
	best := simplex.NelderMead(s.watch(score), x, s.Restarts, s.Iterations)
	q := h100From(best)
	r := Result{Name: "h100-gemma4-31b", Before: score(x), After: score(best), Constants: h100Constants(q), Used: h100Weighed(figures(q))}
	r.HeldOut = h100HeldOut(rec, fitted, only)
	return r, nil
}

// h100HeldOut are the receipts of rec (of set only, "" all) not fitted,
// sorted.
func h100HeldOut(rec map[string]stub.TypevetReceipt, fitted []string, only string) []string {
	var out []string
	for k := range rec {
		if !slices.Contains(fitted, k) && (only == "" || strings.HasPrefix(k, only+"_")) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// h100Fitted are the keys of runs the profile is fitted on, sorted.
func h100Fitted(runs map[string]stub.TypevetRun) []string {
	var keys []string
	for k := range runs {
		if stub.TypevetFitted[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// h100Weights are the weights of a receipt's seven figures in the score.
func h100Weights(key string) []float64 {
	w := []float64{4, 1, 0.5, 0.5, 0, 0.3, 0.3}
	if strings.HasPrefix(key, "checks") {
		w[4] = 0.5
	}
	if strings.HasSuffix(key, "_c1") {
		w[5], w[6] = 1.5, 1.5 // nothing queues: the server's split of one request
	}
	return w
}

// h100Weighed are the figures of figs the score weighs (queue time only
// for checks), so that Result.Used lists what was fitted and no more.
func h100Weighed(figs []stub.Figure) []stub.Figure {
	var out []stub.Figure
	for i, f := range figs {
		if h100Weights(f.Row)[i%7] > 0 {
			out = append(out, f)
		}
	}
	return out
}

// h100Score weighs figs (stub.TypevetFigures' seven per receipt):
// squared relative errors plus a steep penalty past the margin
// (judgments/s: margin, others 15%), plus the worst weighted error.
func h100Score(figs []stub.Figure, margin float64) float64 {
	worst, sum := 0.0, 0.0
	for i := 0; i+7 <= len(figs); i += 7 {
		weights := h100Weights(figs[i].Row)
		for j, f := range figs[i : i+7] {
			e := (f.Got - f.Want) / f.Want
			if math.IsNaN(e) || math.IsInf(e, 0) {
				e = 10
			}
			m := 0.15
			if j == 0 {
				m = margin
			}
			over := max(0, math.Abs(e)-m)
			worst = max(worst, math.Abs(e)*weights[j])
			sum += e*e*weights[j] + 50*over*over*weights[j]
		}
	}
	return sum + worst
}

// h100Durs are the searched timings.
func h100Durs(p *stub.Profile) []*time.Duration {
	return []*time.Duration{&p.StepBase, &p.StepPerToken, &p.StepPerSeq, &p.StepPerImage, &p.Network, &p.NetworkJitter,
		&p.FrontendBase, &p.FrontendImageMiss, &p.FrontendImageHit, &p.FrontendTokenize, &p.FrontendPerInflight}
}

// h100Vector is p in the search space: the timings' logs, then the
// step's token exponent's and the KV block count's.
func h100Vector(p stub.Profile) []float64 {
	var v []float64
	for _, d := range h100Durs(&p) {
		v = append(v, logDur(*d))
	}
	return append(v, math.Log(p.StepTokenExponent), math.Log(float64(p.NumGPUBlocks)))
}

// h100From is the profile at v: ProfileH100Gemma4 with v's timings, the
// exponent at most 1.5, at least one sequence of max_model_len in KV.
func h100From(v []float64) stub.Profile {
	q := stub.ProfileH100Gemma4()
	for i, d := range h100Durs(&q) {
		*d = expDur(v[i])
	}
	q.StepTokenExponent = min(1.5, math.Exp(v[len(v)-2]))
	q.NumGPUBlocks = max(int(math.Exp(v[len(v)-1])), q.MaxModelLen/q.BlockSize)
	return q
}

// h100Constants are q's fitted fields as Go to paste into the profile.
func h100Constants(q stub.Profile) string {
	var b strings.Builder
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"StepBase", q.StepBase}, {"StepPerToken", q.StepPerToken}, {"StepPerSeq", q.StepPerSeq}, {"StepPerImage", q.StepPerImage},
		{"Network", q.Network}, {"NetworkJitter", q.NetworkJitter}, {"FrontendBase", q.FrontendBase},
		{"FrontendImageMiss", q.FrontendImageMiss}, {"FrontendImageHit", q.FrontendImageHit},
		{"FrontendTokenize", q.FrontendTokenize}, {"FrontendPerInflight", q.FrontendPerInflight}} {
		fmt.Fprintf(&b, "%s: %d * time.Nanosecond, // %v\n", d.name, int64(d.v), d.v)
	}
	fmt.Fprintf(&b, "StepTokenExponent: %.4f,\nNumGPUBlocks: %d,\n", q.StepTokenExponent, q.NumGPUBlocks)
	return b.String()
}
