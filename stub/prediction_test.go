package stub

import (
	"encoding/csv"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/roofline"
)

// predicted is one published figure beside the twin's, and whether the
// figure was used to fit what produced the twin's.
type predicted struct {
	Source string
	figure
	Fitted bool
}

// TestPredictionReport prints, per published figure the project holds
// that a physical (first-principles) profile stands for, the twin against
// the published value and whether that figure was used to fit
// (make predict; docs/prediction.md quotes it):
//
//   - the gemma-4-E2B-it H200 NVL matrix on EfficiencyHopper, whose
//     constants were fitted on the 8K and 16K rows only: those rows are
//     "fit", every other row a prediction;
//   - the DeepSeek-V4-Flash 4×H200 matrix on the same Hopper constants (a
//     model, a GPU, tensor parallelism and speculative decoding they never
//     saw), with the one figure the model cannot know, the draft
//     acceptance, fitted on the 8K c=1 cell alone: that cell is "fit",
//     every other decode cell and every prefill row a prediction.
//
// It fails when the held-out error summary grows past the bounds docs
// quote (so a physics change that stops predicting is caught), and a
// figure moved by 30% shows as such (the control).
func TestPredictionReport(t *testing.T) {
	rows := append(e2bPredictions(t), deepseekPredictions(t)...)
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %-22s %-18s %12s %12s %8s  %s\n", "source", "row", "figure", "twin", "published", "error", "used to fit")
	for _, r := range rows {
		fit := "predicted"
		if r.Fitted {
			fit = "fit"
		}
		fmt.Fprintf(&b, "%-10s %-22s %-18s %12.4g %12.4g %8s  %s\n", r.Source, r.Row, r.Name, r.Got, r.Want, pct(r.Rel()), fit)
	}
	b.WriteString("\nsummary (mean |error|, worst |error|, figures)\n")
	sum := map[string][3]float64{}
	for _, src := range []string{"E2B", "DeepSeek"} {
		for _, fitted := range []bool{true, false} {
			var figs []figure
			for _, r := range rows {
				if r.Source == src && r.Fitted == fitted {
					figs = append(figs, r.figure)
				}
			}
			worst, mean := errorSummary(figs)
			key := src + map[bool]string{true: " fit", false: " predicted"}[fitted]
			sum[key] = [3]float64{mean, worst, float64(len(figs))}
			fmt.Fprintf(&b, "  %-20s mean %5.1f%%  worst %5.1f%%  n=%d\n", key, 100*mean, 100*worst, len(figs))
		}
	}
	missed := deepseekCacheMissed(loadDeepSeekMatrix(t))
	hit := func(r predicted) bool { return !missed[rowLabel(r.Row)] }
	speed := func(r predicted) bool { return strings.HasPrefix(r.Row, "Decode") && r.Name != "TTFT s" }
	for _, seg := range []struct {
		name string
		in   func(predicted) bool
	}{
		{"DeepSeek prefill", func(r predicted) bool { return strings.HasPrefix(r.Row, "Prefill") }},
		{"decode tok/s+ITL c≤16, rows the cache hit", func(r predicted) bool { return speed(r) && hit(r) && concurrency(r.Row) <= 16 }},
		{"decode tok/s+ITL c≥32, rows the cache hit", func(r predicted) bool { return speed(r) && hit(r) && concurrency(r.Row) >= 32 }},
		{"decode TTFT, rows the cache hit", func(r predicted) bool { return strings.HasPrefix(r.Row, "Decode") && !speed(r) && hit(r) }},
		{"decode, rows the cache missed", func(r predicted) bool { return strings.HasPrefix(r.Row, "Decode") && !hit(r) }},
	} {
		var figs []figure
		for _, r := range rows {
			if r.Source == "DeepSeek" && !r.Fitted && seg.in(r) {
				figs = append(figs, r.figure)
			}
		}
		worst, mean := errorSummary(figs)
		sum[seg.name] = [3]float64{mean, worst, float64(len(figs))}
		fmt.Fprintf(&b, "  %-42s mean %5.1f%%  worst %5.1f%%  n=%d (predicted)\n", seg.name, 100*mean, 100*worst, len(figs))
	}
	labels := slices.SortedFunc(maps.Keys(missed), func(a, b string) int { return contextOf(a) - contextOf(b) })
	fmt.Fprintf(&b, "  (the cache missed rows %s: their published c=1 TTFT is over half their prefill row's, a full prefill;\n", strings.Join(labels, ", "))
	b.WriteString("   the twin's scouts warm the cache, as the method means them to, and the twin hits)\n")
	b.WriteString(qwen3Prediction(t))
	loo, _ := leaveOneOut(t)
	b.WriteString(loo)
	t.Log("\n" + b.String())
	require.Less(t, sum["E2B predicted"][0], 0.10, "E2B held-out rows: mean error")
	require.Less(t, sum["DeepSeek predicted"][0], predictionBoundDeepSeek, "DeepSeek-V4-Flash: mean error")
	require.Less(t, sum["decode tok/s+ITL c≤16, rows the cache hit"][0], 0.10, "DeepSeek-V4-Flash decode at c ≤ 16 where the cache hit")
	moved := rows[0]
	moved.Want *= 1.3
	require.Greater(t, math.Abs(moved.Rel()), math.Abs(rows[0].Rel())+0.1, "a figure moved by 30% shows")
}

// predictionBoundDeepSeek bounds the DeepSeek prediction's mean error over
// every published figure: the model misses the large batches by a
// quarter and the rows whose published prompt missed the prefix cache by
// up to several times (docs/prediction.md says why); this bound is what
// the closing note quotes, not a target.
const predictionBoundDeepSeek = 0.30

// deepseekCacheMissed are the decode rows whose published c=1 TTFT is over
// half their prefill row's: the re-sent identical prompt was prefilled
// again, not read from the prefix cache (16K, 128K and 256K on the page).
func deepseekCacheMissed(cells []deepseekCell) map[string]bool {
	prefill := map[string]float64{}
	for _, c := range cells {
		if c.phase == "Prefill" {
			prefill[c.label] = c.ttft
		}
	}
	out := map[string]bool{}
	for _, c := range cells {
		if c.phase != "Prefill" && c.c == 1 && c.ttft > prefill[c.label]/2 {
			out[c.label] = true
		}
	}
	return out
}

// contextOf is a context label's thousands ("16K" → 16).
func contextOf(label string) int {
	n, _ := strconv.Atoi(strings.TrimSuffix(label, "K"))
	return n
}

// rowLabel is a row's context label ("Decode 16K c=4" → "16K").
func rowLabel(row string) string {
	f := strings.Fields(row)
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// concurrency reads the c= of a row label.
func concurrency(row string) int {
	_, c, _ := strings.Cut(row, "c=")
	n, _ := strconv.Atoi(c)
	return n
}

// e2bPredictions is the E2B matrix on EfficiencyHopper.
func e2bPredictions(t *testing.T) []predicted {
	cells, prefill := simulateE2B(t, EfficiencyHopper)
	var out []predicted
	for _, f := range e2bFigures(t, cells, prefill, fittedContexts, fittedContexts) {
		out = append(out, predicted{"E2B", f, true})
	}
	for _, f := range e2bFigures(t, cells, prefill, []int{32768, 65536, 126912}, []int{32768, 65536, 126912, 131008}) {
		out = append(out, predicted{"E2B", f, false})
	}
	return out
}

// deepseekCell is one row of the DeepSeek-V4-Flash matrix.
type deepseekCell struct {
	phase, label            string
	ctx, c                  int
	status                  string
	total, perReq, ttft, tb float64
}

func loadDeepSeekMatrix(t *testing.T) []deepseekCell {
	f, err := os.Open(filepath.Join("testdata", "speed-matrix-deepseek-v4-flash-4xh200.csv"))
	require.NoError(t, err)
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	rows, err := r.ReadAll()
	require.NoError(t, err)
	num := func(s string) float64 {
		s = strings.TrimSpace(strings.ReplaceAll(s, ",", ""))
		mult := 1.0
		switch {
		case s == "—" || s == "":
			return math.NaN()
		case strings.HasSuffix(s, " ms"):
			s, mult = strings.TrimSuffix(s, " ms"), 1e-3
		case strings.HasSuffix(s, "K"):
			s, mult = strings.TrimSuffix(s, "K"), 1e3
		}
		v, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err, s)
		return v * mult
	}
	var out []deepseekCell
	for _, row := range rows[1:] {
		k, err := strconv.Atoi(strings.TrimSuffix(row[1], "K"))
		require.NoError(t, err, row[1])
		out = append(out, deepseekCell{phase: row[0], label: row[1], ctx: k * 1024, c: int(num(row[2])), status: row[3],
			total: num(row[4]), perReq: num(row[5]), ttft: num(row[6]), tb: num(row[7])})
	}
	return out
}

// deepseekModelOn is DeepSeek-V4-Flash on 4 H200 SXM as published (TP
// 4, fp8 KV, block 256, 3 draft tokens) on eff, with a GEMM share and a
// flat draft acceptance.
func deepseekModelOn(t *testing.T, eff Efficiency, gemm, acceptance float64) *physical {
	p := deepseekServedOn(t, eff, gemm, acceptance)
	return p.Physical.model()
}

// deepseekServedOn is the profile deepseekModelOn prices: what the twin
// serves and simulates.
func deepseekServedOn(t *testing.T, eff Efficiency, gemm, acceptance float64) Profile {
	p := ProfileDeepSeekV4Flash()
	p.Physical.Efficiency = eff
	p.Physical.GEMMShare = gemm
	p.SetSpeculative(Speculative{Method: "dspark", NumSpeculativeTokens: 3, Acceptance: []float64{acceptance, acceptance, acceptance}})
	require.NoError(t, p.Validate())
	return p
}

// deepseekModel is deepseekModelOn the Hopper constants.
func deepseekModel(t *testing.T, gemm, acceptance float64) *physical {
	return deepseekModelOn(t, EfficiencyHopper, gemm, acceptance)
}

// deepseekProfile is the profile's model at an acceptance.
func deepseekProfile(t *testing.T, acceptance float64) *physical {
	return deepseekProfileOn(t, EfficiencyHopper, acceptance)
}

// deepseekProfileOn is the profile's model on other constants (its GEMM
// share kept: a constant of the deployment, not of the GPU family).
func deepseekProfileOn(t *testing.T, eff Efficiency, acceptance float64) *physical {
	return deepseekModelOn(t, eff, DeepSeekGEMMShare, acceptance)
}

// decodeStep is a step of c decodes each holding ctx tokens.
func decodeStep(c, ctx int) *step {
	s := &step{}
	for range c {
		s.entries = append(s.entries, stepEntry{from: ctx, n: 1})
	}
	return s
}

// prefillTTFT is the twin's time to first token of one prompt of n
// tokens alone on the server: the frontend and ingest (e's host terms),
// then the prompt in chunks of 8192 tokens (vLLM's default
// max_num_batched_tokens).
func prefillTTFT(m *physical, e Efficiency, n int) float64 {
	sec := e.FrontendBase.Seconds() + e.FrontendPerPromptToken.Seconds()*float64(n) + e.IngestBase.Seconds() + e.IngestPerPromptToken.Seconds()*float64(n)
	for done := 0; done < n; done += 8192 {
		sec += m.seconds(&step{entries: []stepEntry{{from: done, n: min(8192, n-done)}}})
	}
	return sec
}

// bisect finds x in [lo, hi] where f(x) crosses 0 (f increasing).
func bisect(lo, hi float64, f func(float64) float64) float64 {
	for range 60 {
		if mid := (lo + hi) / 2; f(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// deepseekFitCells are the two published cells the DeepSeek profile's
// two constants are fitted on: the 8K prefill row (its TTFT fits the GEMM
// share) and the 8K c=1 decode cell (its time between tokens fits the
// draft acceptance, given the step the model prices).
func deepseekFitCells(t *testing.T) (prefill, decode deepseekCell) {
	cells := loadDeepSeekMatrix(t)
	i := slices.IndexFunc(cells, func(c deepseekCell) bool { return c.phase == "Prefill" && c.label == "8K" })
	j := slices.IndexFunc(cells, func(c deepseekCell) bool { return c.phase != "Prefill" && c.label == "8K" && c.c == 1 })
	require.True(t, i >= 0 && j >= 0)
	return cells[i], cells[j]
}

// deepseekFitOn fits the profile's two constants on their two cells on
// eff: the GEMM share that makes the twin's 8K prefill take the published
// TTFT, then the acceptance whose tokens per step make a c=1 step at 8K
// (mean context 8K + 2048) last the published time between tokens × the
// tokens it yields.
func deepseekFitOn(t *testing.T, eff Efficiency) (gemm, acceptance float64) {
	pre, dec := deepseekFitCells(t)
	gemm = bisect(0.01, 1, func(g float64) float64 {
		return pre.ttft - prefillTTFT(deepseekModelOn(t, eff, g, 0.5), eff, pre.ctx)
	})
	step1 := deepseekModelOn(t, eff, gemm, 0.5).seconds(decodeStep(1, dec.ctx+2048))
	want := step1 / dec.tb
	acceptance = bisect(0, 1, func(a float64) float64 {
		return roofline.Speculative{Tokens: 3, Acceptance: a}.TokensPerStep() - want
	})
	return gemm, acceptance
}

// TestDeepSeekFit: the profile's fitted constants are what its two cells
// give on the Hopper constants (so a physics change that moves the fit
// fails here until the constants and docs follow), and a cell moved by
// 20% moves the fit.
func TestDeepSeekFit(t *testing.T) {
	gemm, acc := deepseekFitOn(t, EfficiencyHopper)
	t.Logf("DeepSeek-V4-Flash fit: GEMM share %.4f (8K prefill TTFT), acceptance %.4f (8K c=1 time between tokens)", gemm, acc)
	require.InDelta(t, DeepSeekGEMMShare, gemm, 0.0005, "DeepSeekGEMMShare")
	require.InDelta(t, DeepSeekAcceptance, acc, 0.0005, "DeepSeekAcceptance")
	pre, _ := deepseekFitCells(t)
	moved := bisect(0.01, 1, func(g float64) float64 {
		return 1.2*pre.ttft - prefillTTFT(deepseekModel(t, g, 0.5), EfficiencyHopper, pre.ctx)
	})
	require.Less(t, moved, 0.9*gemm, "a 20% slower prefill fits a smaller share")
}

// deepseekPredictions is the DeepSeek matrix as the twin runs it on the
// profile (deepseekSimulated); the two fitted cells (deepseekFitCells)
// are marked fit, every figure of theirs, every other figure is a
// prediction.
func deepseekPredictions(t *testing.T) []predicted { return deepseekPredictionsOn(t, EfficiencyHopper) }

// deepseekPredictionsOn is deepseekPredictions on other constants, the
// two deployment constants refitted on their two cells on them.
func deepseekPredictionsOn(t *testing.T, eff Efficiency) []predicted {
	gemm, acc := DeepSeekGEMMShare, DeepSeekAcceptance
	if eff != EfficiencyHopper {
		gemm, acc = deepseekFitOn(t, eff)
	}
	pre, dec := deepseekFitCells(t)
	out := deepseekSimulated(t, eff, gemm, acc, loadDeepSeekMatrix(t))
	markFitted(out, fmt.Sprintf("Decode %s c=%d", dec.label, dec.c), "Prefill "+pre.label+" c=1")
	return out
}

// deepseekFigures prices every Valid cell of the DeepSeek matrix on m at
// the acceptance of spec, step by step, in microseconds (what the fits
// search over; the report simulates, deepseekSimulated): a decode cell's
// step at its concurrency and mean context (context + half the 4096-token
// output) yields TokensPerStep tokens a sequence, its total c of those a
// step (a steady state: no stream re-sent inside the window); a prefill
// row is prefillTTFT (on the Hopper host terms: m carries no frontend).
func deepseekFigures(m *physical, spec roofline.Speculative, cells []deepseekCell) []predicted {
	perStep := spec.TokensPerStep()
	var out []predicted
	for _, c := range cells {
		row := fmt.Sprintf("%s %s c=%d", map[bool]string{true: "Prefill", false: "Decode"}[c.phase == "Prefill"], c.label, c.c)
		if c.status != "Valid" {
			continue
		}
		if c.phase == "Prefill" {
			n := c.ctx
			if c.label == "1024K" {
				n = 1<<20 - 64 // the prefill scout's room under max_model_len (method.md §6)
			}
			ttft := prefillTTFT(m, EfficiencyHopper, n)
			out = append(out, predicted{"DeepSeek", figure{row, "tok/s", float64(n) / ttft, c.total}, false},
				predicted{"DeepSeek", figure{row, "TTFT s", ttft, c.ttft}, false})
			continue
		}
		st := m.seconds(decodeStep(c.c, c.ctx+2048))
		out = append(out, predicted{"DeepSeek", figure{row, "total tok/s", float64(c.c) * perStep / st, c.total}, false},
			predicted{"DeepSeek", figure{row, "between tokens s", st / perStep, c.tb}, false})
	}
	return out
}

// qwen3H100 is the first-principles profile of Qwen3-8B (bf16, its public
// config) on one H100 SXM at EfficiencyHopper, as vllmstub -model-config
// receipts/roofline/testdata/qwen3-8b.json -gpu h100-sxm serves it (eager:
// with --enforce-eager) on the spec sheet's peaks, or on what was
// measured where bandwidth (B/s) or flops (FLOP/s) is above 0 (-bandwidth
// and -flops).
func qwen3H100(eager bool, bandwidth, flops float64) (Profile, error) {
	cfg, err := roofline.ReadConfig(filepath.Join("..", "receipts", "roofline", "testdata", "qwen3-8b.json"))
	if err != nil {
		return Profile{}, err
	}
	hw, err := roofline.LookupGPU("h100-sxm")
	if err != nil {
		return Profile{}, err
	}
	return ProfilePhysical("Qwen/Qwen3-8B", cfg, roofline.Dtypes{}, hw.WithMeasured(bandwidth, flops), EfficiencyHopper, ServeFlags{EnforceEager: eager})
}

// qwen3Prediction is the first-principles profile of Qwen3-8B (bf16) on
// one H100 SXM: what a measurement held back from this project will be
// read against. No figure of it was used to fit anything; none is known
// here. Each mode prints a decode step's price at 1K context and the
// token-throughput method simulated (c unique 32-token prompts at once,
// 128 ignore-EOS tokens each, output over each batch's send-to-last-token
// time; BenchmarkHTTPvsSim/qwen3 serves the same over HTTP).
func qwen3Prediction(t *testing.T) string {
	var b strings.Builder
	b.WriteString("\nQwen3-8B bf16 on one H100 SXM (predicted; the measurement is held back)\n")
	tr := TokensRun{PromptTokens: 32, Output: 128, Repeats: 3}
	for _, eager := range []bool{false, true} {
		p, err := qwen3H100(eager, 0, 0)
		require.NoError(t, err)
		m := p.Physical.model()
		mode := map[bool]string{false: "CUDA graphs", true: "eager"}[eager]
		fmt.Fprintf(&b, "  %-11s fixed %.3f ms a step (%d kernels)", mode, 1e3*m.fixed, m.shape.Launches())
		for _, c := range []int{1, 128} {
			st := m.seconds(decodeStep(c, 1024))
			fmt.Fprintf(&b, "; c=%d at 1K context: step %.3f ms, %.1f tok/s", c, 1e3*st, float64(c)/st)
		}
		fmt.Fprintf(&b, "\n  %-11s token throughput (32-token prompts, 128 tokens)", "")
		for _, c := range []int{1, 128} {
			pt := SimulateTokens(p, tr, "text", c)
			fmt.Fprintf(&b, "; c=%d %.1f tok/s (per request %.1f, TTFT %.1f ms)", c, pt.Aggregate, pt.PerRequest, 1e3*pt.TTFT)
		}
		b.WriteString("\n")
	}
	// The card the check was measured on: 2.9 TB/s and 700 TFLOP/s, above
	// what EfficiencyHopper's shares reach on the spec peaks, so the same.
	p, err := qwen3H100(false, 2.9e12, 700e12)
	require.NoError(t, err)
	fmt.Fprintf(&b, "  on measured peaks (-bandwidth 2.9e12 -flops 700e12): c=1 %.1f tok/s, c=128 %.1f (token throughput, CUDA graphs)\n",
		SimulateTokens(p, tr, "text", 1).Aggregate, SimulateTokens(p, tr, "text", 128).Aggregate)
	return b.String()
}

// markFitted marks fit the figures of rows a fit read: a prefill row's
// (its tok/s is its TTFT over the prompt), a decode cell's speed — total
// and per-request tok/s and time between tokens, one measurement of its
// steps — but not its TTFT, which no fit reads. No rows: every row.
func markFitted(out []predicted, rows ...string) {
	for k, r := range out {
		in := len(rows) == 0 || slices.Contains(rows, r.Row)
		out[k].Fitted = in && (strings.HasPrefix(r.Row, "Prefill") || r.Name != "TTFT s")
	}
}

// deepseekRuns caches one simulated DeepSeek matrix per set of constants:
// the report, its leave-one-out table and TestDeepSeekLaunchFit read the
// same runs.
var deepseekRuns sync.Map

// deepseekRun is the published DeepSeek matrix's method as SimulateMatrix
// runs it: its eight decode rows (1019K is 1019 × 1024 tokens), its
// levels, 4096-token streams in 30 s windows, and the 1024K prefill row's
// prompt as the scout's room under max_model_len (method.md §6).
var deepseekRun = MatrixRun{Contexts: []int{8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10, 1019 << 10},
	Levels: []int{1, 2, 4, 8, 16, 32, 64, 128}, MaxTokens: 4096, Duration: 30, PrefillOnly: []int{1<<20 - 64}}

// deepseekSimulated runs the published method on the profile at eff, a
// GEMM share and an acceptance (deepseekServedOn; SimulateMatrix, on
// simulated time: scouts that warm the prefix cache, streams re-sent when
// they reach 4096 tokens, the 30 s window after readiness) and pairs
// every Valid published cell with the twin's: prefill tok/s and TTFT;
// decode total and per-request tok/s, TTFT and time between tokens.
func deepseekSimulated(t *testing.T, eff Efficiency, gemm, acceptance float64, cells []deepseekCell) []predicted {
	type key struct {
		eff              Efficiency
		gemm, acceptance float64
	}
	v, _ := deepseekRuns.LoadOrStore(key{eff, gemm, acceptance}, &matrixOnce{})
	r := v.(*matrixOnce)
	r.once.Do(func() { r.cells, r.prefill = SimulateMatrix(deepseekServedOn(t, eff, gemm, acceptance), deepseekRun) })
	dec, pre := r.cells, r.prefill
	var out []predicted
	for _, c := range cells {
		if c.status != "Valid" {
			continue
		}
		if c.phase == "Prefill" {
			n := c.ctx
			if c.label == "1024K" {
				n = deepseekRun.PrefillOnly[0]
			}
			g := pre[n]
			row := "Prefill " + c.label + " c=1"
			out = append(out, predicted{"DeepSeek", figure{row, "tok/s", g.PrefillTokS, c.total}, false},
				predicted{"DeepSeek", figure{row, "TTFT s", g.PrefillTTFT, c.ttft}, false})
			continue
		}
		g := dec[[2]int{c.ctx, c.c}]
		row := fmt.Sprintf("Decode %s c=%d", c.label, c.c)
		out = append(out, predicted{"DeepSeek", figure{row, "total tok/s", g.TotalTokS, c.total}, false},
			predicted{"DeepSeek", figure{row, "per-request tok/s", g.PerRequestTokS, c.perReq}, false},
			predicted{"DeepSeek", figure{row, "TTFT s", g.TTFT, c.ttft}, false},
			predicted{"DeepSeek", figure{row, "between tokens s", g.ITL, c.tb}, false})
	}
	return out
}
