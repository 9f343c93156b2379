package stub

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	for _, seg := range []struct {
		name string
		in   func(predicted) bool
	}{
		{"DeepSeek decode c≤16", func(r predicted) bool { return strings.HasPrefix(r.Row, "Decode") && concurrency(r.Row) <= 16 }},
		{"DeepSeek decode c≥32", func(r predicted) bool { return strings.HasPrefix(r.Row, "Decode") && concurrency(r.Row) >= 32 }},
		{"DeepSeek prefill", func(r predicted) bool { return strings.HasPrefix(r.Row, "Prefill") }},
	} {
		var figs []figure
		for _, r := range rows {
			if r.Source == "DeepSeek" && !r.Fitted && seg.in(r) {
				figs = append(figs, r.figure)
			}
		}
		worst, mean := errorSummary(figs)
		fmt.Fprintf(&b, "  %-20s mean %5.1f%%  worst %5.1f%%  n=%d (predicted)\n", seg.name, 100*mean, 100*worst, len(figs))
	}
	b.WriteString(qwen3Prediction(t))
	loo, _ := leaveOneOut(t)
	b.WriteString(loo)
	t.Log("\n" + b.String())
	require.Less(t, sum["E2B predicted"][0], 0.10, "E2B held-out rows: mean error")
	require.Less(t, sum["DeepSeek predicted"][0], predictionBoundDeepSeek, "DeepSeek-V4-Flash: mean error")
	moved := rows[0]
	moved.Want *= 1.3
	require.Greater(t, math.Abs(moved.Rel()), math.Abs(rows[0].Rel())+0.1, "a figure moved by 30% shows")
}

// predictionBoundDeepSeek bounds the DeepSeek prediction's mean error: the
// model misses the large batches by a factor (docs/prediction.md says
// why), and this bound is what the closing note quotes, not a target.
const predictionBoundDeepSeek = 0.40

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

// deepseekProfile is DeepSeek-V4-Flash on 4 H200 SXM as published (TP 4,
// fp8 KV, block 256, 3 draft tokens) on the Hopper constants.
func deepseekProfile(t *testing.T, acceptance float64) *physical {
	return deepseekProfileOn(t, EfficiencyHopper, acceptance)
}

// deepseekProfileOn is deepseekProfile on other constants.
func deepseekProfileOn(t *testing.T, eff Efficiency, acceptance float64) *physical {
	cfg, err := roofline.ReadConfig(filepath.Join("..", "receipts", "roofline", "testdata", "deepseek-v4-flash.json"))
	require.NoError(t, err)
	hw, err := roofline.LookupGPU("h200-sxm")
	require.NoError(t, err)
	p, err := ProfilePhysical("deepseek-ai/DeepSeek-V4-Flash-Vision-Exp", cfg, roofline.Dtypes{KV: roofline.FP8}, hw, eff,
		ServeFlags{MaxModelLen: 1 << 20, GPUMemoryUtilization: 0.78331, TensorParallel: 4, BlockSize: 256,
			Speculative: &roofline.Speculative{Tokens: 3, Acceptance: acceptance}})
	require.NoError(t, err)
	return p.Physical.model()
}

// decodeStep is a step of c decodes each holding ctx tokens.
func decodeStep(c, ctx int) *step {
	s := &step{}
	for range c {
		s.entries = append(s.entries, stepEntry{from: ctx, n: 1})
	}
	return s
}

// deepseekPredictions prices the DeepSeek matrix's cells from the model:
// a decode cell's step at its concurrency and mean context (context +
// half the 4096-token output) yields TokensPerStep tokens a sequence;
// a prefill row is its prompt in chunks of 8192 tokens (vLLM's default
// max_num_batched_tokens). The acceptance is fitted on the 8K c=1 cell.
func deepseekPredictions(t *testing.T) []predicted { return deepseekPredictionsOn(t, EfficiencyHopper) }

// deepseekPredictionsOn is deepseekPredictions on other constants.
func deepseekPredictionsOn(t *testing.T, eff Efficiency) []predicted {
	cells := loadDeepSeekMatrix(t)
	i := slices.IndexFunc(cells, func(c deepseekCell) bool { return c.phase != "Prefill" && c.label == "8K" && c.c == 1 })
	require.GreaterOrEqual(t, i, 0)
	base := deepseekProfileOn(t, eff, 0.5)
	step1 := base.seconds(decodeStep(1, cells[i].ctx+2048))
	want := step1 / cells[i].tb // tokens per step the 8K c=1 cell implies
	spec := roofline.Speculative{Tokens: 3}
	lo, hi := 0.0, 1.0
	for range 60 {
		spec.Acceptance = (lo + hi) / 2
		if spec.TokensPerStep() < want {
			lo = spec.Acceptance
		} else {
			hi = spec.Acceptance
		}
	}
	t.Logf("DeepSeek-V4-Flash: a c=1 8K step is %.3f ms; the published %.1f ms between tokens implies %.3f tokens a step: acceptance %.3f (fitted on that cell alone)",
		1e3*step1, 1e3*cells[i].tb, want, spec.Acceptance)
	require.Greater(t, spec.Acceptance, 0.0)
	require.Less(t, spec.Acceptance, 1.0)
	out := deepseekFigures(deepseekProfileOn(t, eff, spec.Acceptance), spec, cells)
	for k := range out {
		out[k].Fitted = out[k].Row == fmt.Sprintf("Decode %s c=%d", cells[i].label, cells[i].c)
	}
	return out
}

// deepseekFigures prices every Valid cell of the DeepSeek matrix on m at
// the acceptance of spec.
func deepseekFigures(m *physical, spec roofline.Speculative, cells []deepseekCell) []predicted {
	perStep := spec.TokensPerStep()
	var out []predicted
	for _, c := range cells {
		row := fmt.Sprintf("%s %s c=%d", map[bool]string{true: "Prefill", false: "Decode"}[c.phase == "Prefill"], c.label, c.c)
		if c.status != "Valid" {
			continue
		}
		if c.phase == "Prefill" {
			sec := 0.0
			for done := 0; done < c.ctx; done += 8192 {
				sec += m.seconds(&step{entries: []stepEntry{{from: done, n: min(8192, c.ctx-done)}}})
			}
			out = append(out, predicted{"DeepSeek", figure{row, "tok/s", float64(c.ctx) / sec, c.total}, false})
			continue
		}
		st := m.seconds(decodeStep(c.c, c.ctx+2048))
		out = append(out, predicted{"DeepSeek", figure{row, "total tok/s", float64(c.c) * perStep / st, c.total}, false},
			predicted{"DeepSeek", figure{row, "between tokens s", st / perStep, c.tb}, false})
	}
	return out
}

// qwen3Prediction is the first-principles profile of Qwen3-8B (bf16) on
// one H100 SXM: what a measurement held back from this project will be
// read against. No figure of it was used to fit anything; none is known
// here.
func qwen3Prediction(t *testing.T) string {
	cfg, err := roofline.ReadConfig(filepath.Join("..", "receipts", "roofline", "testdata", "qwen3-8b.json"))
	require.NoError(t, err)
	hw, err := roofline.LookupGPU("h100-sxm")
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("\nQwen3-8B bf16 on one H100 SXM (predicted; the measurement is held back)\n")
	for _, eager := range []bool{false, true} {
		p, err := ProfilePhysical("Qwen/Qwen3-8B", cfg, roofline.Dtypes{}, hw, EfficiencyHopper, ServeFlags{EnforceEager: eager})
		require.NoError(t, err)
		m := p.Physical.model()
		mode := map[bool]string{false: "CUDA graphs", true: "eager"}[eager]
		fmt.Fprintf(&b, "  %-11s fixed %.3f ms a step (%d kernels)", mode, 1e3*m.fixed, m.shape.Launches())
		for _, c := range []int{1, 128} {
			st := m.seconds(decodeStep(c, 1024))
			fmt.Fprintf(&b, "; c=%d at 1K context: step %.3f ms, %.1f tok/s", c, 1e3*st, float64(c)/st)
		}
		b.WriteString("\n")
	}
	return b.String()
}
