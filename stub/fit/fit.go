// Package fit is the twin's fitting tools: Nelder–Mead searches that fit
// a profile's constants to published figures through the twin's
// simulation API (stub.SimulateMatrix, stub.SimulateTokens,
// stub.TypevetSweep), on
// simulated time, so a fit is the same on any machine. cmd/twinfit runs
// them (make fit) and prints the constants to paste into stub and the
// figures each fit used: a figure a fit used is never reported as a
// prediction of itself (docs/prediction.md).
package fit

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/internal/simplex"
)

// Search bounds a Nelder–Mead search: Restarts simplexes of Iterations
// steps each (0: the defaults of each fit).
type Search struct {
	Restarts, Iterations int
	// Margin is where the score's steep penalty starts (a relative error;
	// 0: the fit's default).
	Margin float64
	// Levels, when set, simulates only these concurrency levels of a
	// matrix (a quick look; a fit for a profile uses the published ones).
	Levels []int
	// Progress, when set, is told every 25 evaluations how many ran and
	// the best score so far.
	Progress func(evals int, best float64)
}

// watch wraps a score so that Progress hears of it.
func (s Search) watch(score func([]float64) float64) func([]float64) float64 {
	if s.Progress == nil {
		return score
	}
	n, best := 0, math.Inf(1)
	return func(v []float64) float64 {
		x := score(v)
		n, best = n+1, min(best, x)
		if n%25 == 0 {
			s.Progress(n, best)
		}
		return x
	}
}

func (s Search) or(restarts, iters int, margin float64) Search {
	if s.Restarts <= 0 {
		s.Restarts = restarts
	}
	if s.Iterations <= 0 {
		s.Iterations = iters
	}
	if s.Margin <= 0 {
		s.Margin = margin
	}
	return s
}

// Result is what a fit found: the score before and after, the constants
// (a Go value to paste), and every figure the fit used, at the fitted
// constants.
type Result struct {
	Name          string
	Before, After float64
	Constants     string
	Used          []stub.Figure
	// HeldOut names the results beside the fitted ones that the fit did
	// not use (the H100 fit's held-out receipts): predictions.
	HeldOut []string
}

// Score is the fits' objective: squared log errors, a steep penalty past
// margin, plus the worst error.
func Score(figs []stub.Figure, margin float64) float64 {
	sum, worst := 0.0, 0.0
	for _, f := range figs {
		e := math.Log(f.Got / f.Want)
		if math.IsNaN(e) || math.IsInf(e, 0) {
			e = 5
		}
		over := max(0, math.Abs(e)-margin)
		sum += e*e + 50*over*over
		worst = max(worst, math.Abs(e))
	}
	return sum + worst
}

// logDur and expDur map durations to the searches' log space.
func logDur(x time.Duration) float64 { return math.Log(max(float64(x), 1)) }
func expDur(x float64) time.Duration { return time.Duration(math.Exp(x)) }

// RTX3090 fits ProfileRTX3090's timings (the step and frontend terms and
// the step's token exponent) to the receipt's ten points.
func RTX3090(rec stub.RTX3090Receipt, s Search) Result {
	s = s.or(4, 400, 0.10)
	durs := func(p *stub.Profile) []*time.Duration {
		return []*time.Duration{&p.StepBase, &p.StepPerToken, &p.StepPerSeq, &p.StepPerImage,
			&p.FrontendBase, &p.FrontendImageMiss, &p.FrontendPerInflight, &p.IngestBase}
	}
	toVec := func(p stub.Profile) []float64 {
		var v []float64
		for _, d := range durs(&p) {
			v = append(v, logDur(*d))
		}
		return append(v, math.Log(p.StepTokenExponent))
	}
	fromVec := func(v []float64) stub.Profile {
		q := stub.ProfileRTX3090()
		for i, d := range durs(&q) {
			*d = expDur(v[i])
		}
		q.StepTokenExponent = min(1.5, math.Exp(v[len(v)-1]))
		return q
	}
	score := func(v []float64) float64 { return Score(stub.RTX3090Figures(fromVec(v), rec), s.Margin) }
	x := toVec(stub.ProfileRTX3090())
	best := simplex.NelderMead(s.watch(score), x, s.Restarts, s.Iterations)
	q := fromVec(best)
	consts := ""
	for i, name := range []string{"StepBase", "StepPerToken", "StepPerSeq", "StepPerImage", "FrontendBase", "FrontendImageMiss", "FrontendPerInflight", "IngestBase"} {
		consts += fmt.Sprintf("%s: %d * time.Nanosecond, // %v\n", name, int64(*durs(&q)[i]), *durs(&q)[i])
	}
	consts += fmt.Sprintf("StepTokenExponent: %.4f,\n", q.StepTokenExponent)
	return Result{Name: "rtx3090-vlm", Before: score(x), After: score(best), Constants: consts, Used: stub.RTX3090Figures(q, rec)}
}

// String is a result as cmd/twinfit prints it.
func (r Result) String() string {
	worst, mean := stub.ErrorSummary(r.Used)
	s := fmt.Sprintf("fit %s: score %.4f -> %.4f; %d figures used, mean |error| %.1f%%, worst %.1f%%\nconstants:\n%s\nfigures used to fit (twin at the fitted constants vs published):\n",
		r.Name, r.Before, r.After, len(r.Used), 100*mean, 100*worst, r.Constants)
	for _, f := range r.Used {
		s += fmt.Sprintf("  %-22s %-18s twin %10.4g  published %10.4g  %+6.1f%%\n", f.Row, f.Name, f.Got, f.Want, 100*f.Rel())
	}
	if len(r.HeldOut) > 0 {
		s += fmt.Sprintf("held out, not used to fit (predictions): %s\n", strings.Join(r.HeldOut, ", "))
	}
	return s
}
