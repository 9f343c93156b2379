package stub

import (
	"fmt"
	"math"
)

// Figure is one published figure next to the twin's: what the twin's
// tests compare and cmd/twinfit fits.
type Figure struct {
	Row, Name string
	Got, Want float64
}

// Rel is the twin's signed relative error, Got/Want − 1.
func (f Figure) Rel() float64 { return relErr(f.Got, f.Want) }

// Outside says whether the twin misses the published figure by more than
// tol (or cannot be compared).
func (f Figure) Outside(tol float64) bool {
	r := f.Rel()
	return math.IsNaN(r) || math.IsInf(r, 0) || math.Abs(r) > tol
}

// E2BFitted are the contexts whose rows the Hopper constants were fitted
// on (prefill and sustained decode); E2BPrefill every prefill row.
var (
	E2BFitted  = []int{8192, 16384}
	E2BPrefill = []int{8192, 16384, 32768, 65536, 126912, 131008}
)

// contextLabel is a context's label on the published pages.
func contextLabel(ctx int) string {
	for k, v := range ContextTokens {
		if v == ctx {
			return k
		}
	}
	return itoa(ctx)
}

// E2BFigures pairs a simulated matrix with the published one, for the
// given contexts: prefill tok/s and TTFT per prefill context; total and
// per-request tok/s, TTFT and time between tokens per decode cell of the
// levels.
func E2BFigures(cells map[[2]int]*MatrixCell, prefill map[int]*MatrixCell, dec map[[2]int]PublishedCell, pre map[int]PublishedCell,
	levels, contexts, prefillContexts []int) []Figure {
	var out []Figure
	for _, ctx := range prefillContexts {
		g, w := prefill[ctx], pre[ctx]
		if g == nil {
			continue
		}
		row := "Prefill " + contextLabel(ctx)
		out = append(out, Figure{row, "tok/s", g.PrefillTokS, w.TotalTokS}, Figure{row, "TTFT s", g.PrefillTTFT, w.TTFT})
	}
	for _, ctx := range contexts {
		for _, c := range levels {
			g, w := cells[[2]int{ctx, c}], dec[[2]int{ctx, c}]
			if g == nil {
				continue
			}
			row := fmt.Sprintf("Decode %s c=%d", contextLabel(ctx), c)
			out = append(out, Figure{row, "total tok/s", g.TotalTokS, w.TotalTokS}, Figure{row, "per-request tok/s", g.PerRequestTokS, w.PerRequestTokS},
				Figure{row, "TTFT s", g.TTFT, w.TTFT}, Figure{row, "between tokens s", g.ITL, w.ITL})
		}
	}
	return out
}

// RTX3090Run is the receipt's method as the twin runs it: short unique
// prompts (32 tokens; the receipt does not say how short), one unique
// image of 256 placeholder tokens for one_image_per_request (a square
// image at Gemma's budget), 128 output tokens, a warm-up batch and three
// timed repeats.
var RTX3090Run = TokensRun{PromptTokens: 32, ImageTokens: 256, Output: 128, Repeats: 3}

// RTX3090Figures pairs the twin's token-throughput points with the
// receipt's: aggregate and per-request tok/s, mean completion seconds.
func RTX3090Figures(p Profile, rec RTX3090Receipt) []Figure {
	var out []Figure
	for _, r := range rec.Records {
		g := SimulateTokens(p, RTX3090Run, r.Workload, r.Concurrency)
		row := fmt.Sprintf("%s c=%d", r.Workload, r.Concurrency)
		out = append(out, Figure{row, "aggregate tok/s", g.Aggregate, r.Aggregate}, Figure{row, "per-request tok/s", g.PerRequest, r.PerRequest},
			Figure{row, "mean completion s", g.MeanS, r.MeanCompletion})
	}
	return out
}

// ErrorSummary is the largest and the mean absolute relative error.
func ErrorSummary(figs []Figure) (worst, mean float64) {
	for _, f := range figs {
		a := math.Abs(f.Rel())
		worst = max(worst, a)
		mean += a / float64(len(figs))
	}
	return worst, mean
}
