package stub

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// figure is one published figure next to the twin's.
type figure struct {
	Row, Name string
	Got, Want float64
}

func (f figure) rel() float64 { return relErr(f.Got, f.Want) }

// outside says whether the twin misses the published figure by more than
// tol (or cannot be compared).
func (f figure) outside(tol float64) bool {
	r := f.rel()
	return math.IsNaN(r) || math.IsInf(r, 0) || math.Abs(r) > tol
}

// e2bFigures pairs a simulated matrix with the published one, for the
// given contexts: prefill tok/s and TTFT per context; total and per-request
// tok/s, TTFT and time between tokens per decode cell.
func e2bFigures(t testing.TB, cells map[[2]int]*matrixCell, prefill map[int]*matrixCell, contexts []int, prefillContexts []int) []figure {
	dec, pre := loadE2BMatrix(t)
	var out []figure
	label := func(ctx int) string {
		for k, v := range contextTokens {
			if v == ctx && k != "128K" || (k == "128K" && v == ctx) {
				return k
			}
		}
		return itoa(ctx)
	}
	for _, ctx := range prefillContexts {
		g, w := prefill[ctx], pre[ctx]
		row := "Prefill " + label(ctx)
		out = append(out, figure{row, "tok/s", g.PrefillTokS, w.TotalTokS}, figure{row, "TTFT s", g.PrefillTTFT, w.TTFT})
	}
	for _, ctx := range contexts {
		for _, c := range e2bMatrixRun.Levels {
			g, w := cells[[2]int{ctx, c}], dec[[2]int{ctx, c}]
			row := fmt.Sprintf("Decode %s c=%d", label(ctx), c)
			out = append(out, figure{row, "total tok/s", g.TotalTokS, w.TotalTokS}, figure{row, "per-request tok/s", g.PerRequestTokS, w.PerRequestTokS},
				figure{row, "TTFT s", g.TTFT, w.TTFT}, figure{row, "between tokens s", g.ITL, w.ITL})
		}
	}
	return out
}

// logFigures prints figures side by side and returns those outside tol.
func logFigures(t testing.TB, title string, figs []figure, tol float64) []string {
	t.Helper()
	return logFiguresBy(t, title, figs, func(figure) float64 { return tol })
}

// logFiguresBy is logFigures with a tolerance per figure.
func logFiguresBy(t testing.TB, title string, figs []figure, tolFor func(figure) float64) []string {
	t.Helper()
	var bad []string
	var b strings.Builder
	fmt.Fprintf(&b, "%s (twin vs published):\n", title)
	for _, f := range figs {
		mark := ""
		if tol := tolFor(f); f.outside(tol) {
			mark = fmt.Sprintf("  <-- outside ±%.0f%%", 100*tol)
			bad = append(bad, fmt.Sprintf("%s %s: twin %.4g, published %.4g (%s)", f.Row, f.Name, f.Got, f.Want, pct(f.rel())))
		}
		fmt.Fprintf(&b, "  %-22s %-18s twin %10.4g  published %10.4g  %s%s\n", f.Row, f.Name, f.Got, f.Want, pct(f.rel()), mark)
	}
	t.Log(b.String())
	return bad
}

// errorSummary is the largest and the mean absolute relative error.
func errorSummary(figs []figure) (worst, mean float64) {
	for _, f := range figs {
		a := math.Abs(f.rel())
		worst = max(worst, a)
		mean += a / float64(len(figs))
	}
	return worst, mean
}

// fitScore is the objective of the fits: squared log errors, a steep
// penalty past margin, plus the worst error.
func fitScore(figs []figure, margin float64) float64 {
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

// efficiencyVector maps Efficiency to the fit's search space (logs); the
// frontend's prompt exponent is searched only when free.
func efficiencyVector(e Efficiency, free bool) []float64 {
	d := func(x time.Duration) float64 { return math.Log(max(float64(x), 1)) }
	v := []float64{math.Log(e.BandwidthShare), math.Log(e.ComputeShare), math.Log(e.AttentionShare), d(e.KernelLaunch), d(e.PerSeq),
		d(e.FrontendBase), d(e.FrontendPerPromptToken), d(e.IngestBase), d(e.IngestPerPromptToken), d(e.IngestPerInflight),
		math.Log(max(e.IngestInflightExponent, 0.05))}
	if free {
		v = append(v, math.Log(max(e.FrontendPromptExponent, 1)))
	}
	return v
}

func efficiencyFrom(base Efficiency, v []float64) Efficiency {
	d := func(x float64) time.Duration { return time.Duration(math.Exp(x)) }
	e := base
	e.BandwidthShare, e.ComputeShare, e.AttentionShare = min(1, math.Exp(v[0])), min(1, math.Exp(v[1])), min(1, math.Exp(v[2]))
	e.KernelLaunch, e.PerSeq, e.FrontendBase = d(v[3]), d(v[4]), d(v[5])
	e.FrontendPerPromptToken, e.IngestBase, e.IngestPerPromptToken, e.IngestPerInflight = d(v[6]), d(v[7]), d(v[8]), d(v[9])
	e.IngestInflightExponent = min(2, math.Exp(v[10]))
	if len(v) > 11 {
		e.FrontendPromptExponent = min(2, math.Exp(v[11]))
	}
	return e
}

// The fitted rows of the first-principles profile: the 8K and 16K rows,
// prefill and sustained decode.
var (
	fittedContexts = []int{8192, 16384}
	allPrefill     = []int{8192, 16384, 32768, 65536, 126912, 131008}
)

// TestFitEfficiency is the tool that fitted EfficiencyHopper (STUB_FIT=
// efficiency: on the 8K and 16K rows only) and the E2B profile's own
// constants (STUB_FIT=e2b: every row): Nelder-Mead over the logs of the
// constants, minimising squared log errors with a steep penalty past
// ±12%. It prints the constants to paste; minutes, so opt-in.
func TestFitEfficiency(t *testing.T) {
	mode := os.Getenv("STUB_FIT")
	if mode != "efficiency" && mode != "e2b" {
		t.Skip("fitting tool: STUB_FIT=efficiency (8K and 16K rows) or STUB_FIT=e2b (every row)")
	}
	run := e2bMatrixRun
	contexts, pre := fittedContexts, fittedContexts
	start := EfficiencyHopper
	if mode == "e2b" {
		contexts, pre = run.Contexts, allPrefill
		start = EfficiencyE2BH200NVL
	} else {
		run.Contexts, run.PrefillOnly = fittedContexts, nil
	}
	margin := 0.12
	if m, err := strconv.ParseFloat(os.Getenv("STUB_FIT_MARGIN"), 64); err == nil {
		margin = m
	}
	score := func(v []float64) float64 {
		eff := efficiencyFrom(start, v)
		cells, prefill := runMatrix(e2bProfile(t, eff), run)
		return fitScore(e2bFigures(t, cells, prefill, contexts, pre), margin)
	}
	x := efficiencyVector(start, mode == "e2b")
	before := score(x)
	best := nelderMead(score, x, 2, 200)
	after := score(best)
	e := efficiencyFrom(start, best)
	t.Logf("score %.4f -> %.4f", before, after)
	t.Logf("%#v", e)
	cells, prefill := runMatrix(e2bProfile(t, e), run)
	figs := e2bFigures(t, cells, prefill, contexts, pre)
	logFigures(t, "fit", figs, 0.15)
	worst, mean := errorSummary(figs)
	t.Logf("worst %.1f%%, mean %.1f%%", 100*worst, 100*mean)
}

// rtx3090Run is the receipt's method as the twin runs it: short unique
// prompts (32 tokens; the receipt does not say how short), one unique
// image of 256 placeholder tokens for one_image_per_request (a square
// image at Gemma's budget), 128 output tokens, a warm-up batch and three
// timed repeats.
var rtx3090Run = tokensRun{PromptTokens: 32, ImageTokens: 256, Output: 128, Repeats: 3}

// rtx3090Figures pairs the twin's token-throughput points with the
// receipt's: aggregate and per-request tok/s, mean completion seconds.
func rtx3090Figures(t testing.TB, p Profile) []figure {
	rec := loadRTX3090(t)
	var out []figure
	for _, r := range rec.Records {
		g := runTokens(p, rtx3090Run, r.Workload, r.Concurrency)
		row := fmt.Sprintf("%s c=%d", r.Workload, r.Concurrency)
		out = append(out, figure{row, "aggregate tok/s", g.Aggregate, r.Aggregate}, figure{row, "per-request tok/s", g.PerRequest, r.PerRequest},
			figure{row, "mean completion s", g.MeanS, r.MeanCompletion})
	}
	return out
}

// TestFitRTX3090 is the tool that fitted ProfileRTX3090's timings
// (STUB_FIT=rtx3090): Nelder-Mead over the logs of the step and frontend
// terms against the receipt's ten points.
func TestFitRTX3090(t *testing.T) {
	if os.Getenv("STUB_FIT") != "rtx3090" {
		t.Skip("fitting tool: STUB_FIT=rtx3090")
	}
	durs := func(p *Profile) []*time.Duration {
		return []*time.Duration{&p.StepBase, &p.StepPerToken, &p.StepPerSeq, &p.StepPerImage,
			&p.FrontendBase, &p.FrontendImageMiss, &p.FrontendPerInflight, &p.IngestBase}
	}
	toVec := func(p Profile) []float64 {
		var v []float64
		for _, d := range durs(&p) {
			v = append(v, math.Log(max(float64(*d), 1)))
		}
		return append(v, math.Log(p.StepTokenExponent))
	}
	fromVec := func(v []float64) Profile {
		q := ProfileRTX3090()
		for i, d := range durs(&q) {
			*d = time.Duration(math.Exp(v[i]))
		}
		q.StepTokenExponent = min(1.5, math.Exp(v[len(v)-1]))
		return q
	}
	score := func(v []float64) float64 { return fitScore(rtx3090Figures(t, fromVec(v)), 0.10) }
	x := toVec(ProfileRTX3090())
	before := score(x)
	best := nelderMead(score, x, 4, 400)
	t.Logf("score %.4f -> %.4f", before, score(best))
	q := fromVec(best)
	for i, d := range durs(&q) {
		t.Logf("  %d: %v", i, *d)
	}
	t.Logf("  exponent %v", q.StepTokenExponent)
	logFigures(t, "fit", rtx3090Figures(t, q), 0.15)
}
