package stub

import (
	"fmt"
	"strings"
	"testing"
)

// figure is Figure, as the tests name it.
type figure = Figure

// e2bFigures is E2BFigures against the published matrix at its levels.
func e2bFigures(t testing.TB, cells map[[2]int]*MatrixCell, prefill map[int]*MatrixCell, contexts []int, prefillContexts []int) []figure {
	dec, pre := loadE2BMatrix(t)
	return E2BFigures(cells, prefill, dec, pre, E2BMatrixRun.Levels, contexts, prefillContexts)
}

// rtx3090Figures is RTX3090Figures against the published receipt.
func rtx3090Figures(t testing.TB, p Profile) []figure { return RTX3090Figures(p, loadRTX3090(t)) }

// errorSummary is ErrorSummary.
func errorSummary(figs []figure) (worst, mean float64) { return ErrorSummary(figs) }

var (
	fittedContexts = E2BFitted
	allPrefill     = E2BPrefill
	rtx3090Run     = RTX3090Run
)

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
		if tol := tolFor(f); f.Outside(tol) {
			mark = fmt.Sprintf("  <-- outside ±%.0f%%", 100*tol)
			bad = append(bad, fmt.Sprintf("%s %s: twin %.4g, published %.4g (%s)", f.Row, f.Name, f.Got, f.Want, pct(f.Rel())))
		}
		fmt.Fprintf(&b, "  %-22s %-18s twin %10.4g  published %10.4g  %s%s\n", f.Row, f.Name, f.Got, f.Want, pct(f.Rel()), mark)
	}
	t.Log(b.String())
	return bad
}
