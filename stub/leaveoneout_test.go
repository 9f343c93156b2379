package stub

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/roofline"
	"github.com/vetbench/vetbench/stub/internal/simplex"
)

// looSet is one set of published figures as the leave-one-out table
// reads it: every figure of the set, each marked fit or predicted.
type looSet struct {
	name string
	rows []predicted
}

// looRow is one line of the table: constants fitted on one set, the error
// on every set.
type looRow struct {
	fittedOn, constants string
	sets                []looSet
}

// leaveOneOut is the leave-one-out table over every published figure the
// project holds that a physical profile stands for (make predict; issue
// 21): the Hopper constants fitted on one model and GPU, the error on the
// other. The E2B rows' constants are the package's (fitted by
// cmd/twinfit); the DeepSeek row's are fitted here, on the DeepSeek
// matrix alone, in milliseconds (its cells are priced step by step, not
// simulated).
func leaveOneOut(t *testing.T) (string, []looRow) {
	hopperE2B := e2bPredictions(t)
	dsOnHopper := deepseekPredictions(t)
	allE2B := e2bAll(t, EfficiencyE2BH200NVL, true)
	dsOnE2B := deepseekPredictionsOn(t, EfficiencyE2BH200NVL)
	effDS, accDS := fitDeepSeek(t)
	e2bOnDS := e2bAll(t, effDS, false)
	dsFit := deepseekFigures(deepseekProfileOn(t, effDS, accDS), roofline.Speculative{Tokens: 3, Acceptance: accDS}, loadDeepSeekMatrix(t))
	for i := range dsFit {
		dsFit[i].Fitted = true
	}
	rows := []looRow{
		{"E2B 8K/16K rows", "EfficiencyHopper (make fit FIT=hopper)", []looSet{{"E2B", hopperE2B}, {"DeepSeek", dsOnHopper}}},
		{"E2B every row", "EfficiencyE2BH200NVL (make fit FIT=e2b)", []looSet{{"E2B", allE2B}, {"DeepSeek", dsOnE2B}}},
		{"DeepSeek every cell", fmt.Sprintf("shares %.3f/%.3f/%.3f, %v a kernel, %v a sequence, acceptance %.3f",
			effDS.BandwidthShare, effDS.ComputeShare, effDS.AttentionShare, effDS.KernelLaunch, effDS.PerSeq, accDS),
			[]looSet{{"E2B", e2bOnDS}, {"DeepSeek", dsFit}}},
	}
	var b strings.Builder
	b.WriteString("\nleave-one-out: constants fitted on one set, mean |error| / worst |error| (figures) on each\n")
	fmt.Fprintf(&b, "  %-20s %-42s %-42s %s\n", "fitted on", "E2B on H200 NVL", "DeepSeek-V4-Flash on 4×H200", "constants")
	for _, r := range rows {
		fmt.Fprintf(&b, "  %-20s", r.fittedOn)
		for _, s := range r.sets {
			fmt.Fprintf(&b, " %-42s", looCell(s.rows))
		}
		fmt.Fprintf(&b, " %s\n", r.constants)
	}
	rtx := rtx3090Figures(t, ProfileRTX3090())
	worst, mean := errorSummary(rtx)
	fmt.Fprintf(&b, "  %-20s fit %.1f%%/%.1f%% (%d); a fitted formula, the receipt names no model: no physical profile can be fitted on it or predict it\n",
		"RTX 3090 receipt", 100*mean, 100*worst, len(rtx))
	b.WriteString("  typevet's H100 receipts (gemma-4-31B): the h100-gemma4-31b profile is a fitted formula (make calibrate compares it); no physical profile of it yet\n")
	b.WriteString("  (the DeepSeek row's host-side terms, frontend and ingest, are E2B's: the DeepSeek cells as priced carry none;\n")
	b.WriteString("   its Triton attention share is the published figure EfficiencyHopper holds: DeepSeek's attention runs MLA kernels)\n")
	return b.String(), rows
}

// looCell is one set's errors: fit and predicted figures apart.
func looCell(rows []predicted) string {
	var parts []string
	for _, fitted := range []bool{true, false} {
		var figs []figure
		for _, r := range rows {
			if r.Fitted == fitted {
				figs = append(figs, r.figure)
			}
		}
		if len(figs) == 0 {
			continue
		}
		worst, mean := errorSummary(figs)
		parts = append(parts, fmt.Sprintf("%s %.1f/%.1f%% (%d)", map[bool]string{true: "fit", false: "pred"}[fitted], 100*mean, 100*worst, len(figs)))
	}
	return strings.Join(parts, ", ")
}

// e2bAll is every figure of the E2B matrix on eff, all fit or all
// predicted.
func e2bAll(t *testing.T, eff Efficiency, fitted bool) []predicted {
	cells, prefill := simulateE2B(t, eff)
	var out []predicted
	for _, f := range e2bFigures(t, cells, prefill, E2BMatrixRun.Contexts, allPrefill) {
		out = append(out, predicted{"E2B", f, fitted})
	}
	return out
}

// fitDeepSeek fits the step constants (bandwidth, compute and attention
// shares, the per-kernel and per-sequence costs) and the draft acceptance
// on every Valid cell of the DeepSeek matrix, from EfficiencyHopper:
// Nelder–Mead on squared log errors.
func fitDeepSeek(t *testing.T) (Efficiency, float64) {
	cells := loadDeepSeekMatrix(t)
	from := func(v []float64) (Efficiency, float64) {
		e := EfficiencyHopper
		e.BandwidthShare, e.ComputeShare, e.AttentionShare = min(1, math.Exp(v[0])), min(1, math.Exp(v[1])), min(1, math.Exp(v[2]))
		e.KernelLaunch, e.PerSeq = time.Duration(math.Exp(v[3])), time.Duration(math.Exp(v[4]))
		return e, 1 / (1 + math.Exp(-v[5]))
	}
	score := func(v []float64) float64 {
		e, acc := from(v)
		sum, worst := 0.0, 0.0
		for _, r := range deepseekFigures(deepseekProfileOn(t, e, acc), roofline.Speculative{Tokens: 3, Acceptance: acc}, cells) {
			x := math.Log(r.Got / r.Want)
			if math.IsNaN(x) || math.IsInf(x, 0) {
				x = 5
			}
			sum, worst = sum+x*x, max(worst, math.Abs(x))
		}
		return sum + worst
	}
	h := EfficiencyHopper
	x := []float64{math.Log(h.BandwidthShare), math.Log(h.ComputeShare), math.Log(h.AttentionShare),
		math.Log(float64(h.KernelLaunch)), math.Log(float64(h.PerSeq)), math.Log(0.678 / (1 - 0.678))}
	best := simplex.NelderMead(score, x, 2, 300)
	require.LessOrEqual(t, score(best), score(x), "the DeepSeek fit made it worse")
	return from(best)
}
