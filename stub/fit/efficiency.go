package fit

import (
	"fmt"
	"math"

	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/internal/simplex"
)

// Rows says which rows of the E2B matrix a fit of efficiency constants
// uses.
type Rows string

const (
	// Hopper fits stub.EfficiencyHopper, the Hopper family's constants, on
	// the 8K and 16K rows only (prefill and sustained decode): every other
	// row stays a prediction. The Triton attention share is held at the
	// start's (E2B's attention runs Triton; the start's is a published
	// figure, not fitted), and the FlashAttention share is not searched:
	// E2B, whose attention is all Triton, says nothing of it.
	Hopper Rows = "hopper"
	// E2B fits stub.EfficiencyE2BH200NVL, the E2B profile's own constants,
	// on every row, the frontend's prompt exponent free.
	E2B Rows = "e2b"
)

// Efficiency fits efficiency constants from start on the published E2B
// matrix (dec, pre: stub.ReadE2BMatrix).
func Efficiency(rows Rows, start stub.Efficiency, dec map[[2]int]stub.PublishedCell, pre map[int]stub.PublishedCell, s Search) (Result, error) {
	s = s.or(2, 200, 0.12)
	run := stub.E2BMatrixRun
	if len(s.Levels) > 0 {
		run.Levels = s.Levels
	}
	contexts, prefill := stub.E2BFitted, stub.E2BFitted
	switch rows {
	case E2B:
		contexts, prefill = run.Contexts, stub.E2BPrefill
	case Hopper:
		run.Contexts, run.PrefillOnly = stub.E2BFitted, nil
	default:
		return Result{}, fmt.Errorf("fit rows %q: want %q or %q", rows, Hopper, E2B)
	}
	k := knobs{free: rows == E2B, attention: rows == E2B || start.TritonAttentionShare == 0}
	figures := func(e stub.Efficiency) ([]stub.Figure, error) {
		p, err := stub.ProfileE2B(e)
		if err != nil {
			return nil, err
		}
		cells, pf := stub.SimulateMatrix(p, run)
		return stub.E2BFigures(cells, pf, dec, pre, run.Levels, contexts, prefill), nil
	}
	if _, err := figures(start); err != nil {
		return Result{}, err
	}
	score := func(v []float64) float64 {
		figs, err := figures(k.from(start, v))
		if err != nil {
			return math.Inf(1)
		}
		return Score(figs, s.Margin)
	}
	x := k.vector(start)
	best := simplex.NelderMead(s.watch(score), x, s.Restarts, s.Iterations)
	e := k.from(start, best)
	used, err := figures(e)
	return Result{Name: "efficiency " + string(rows), Before: score(x), After: score(best), Constants: fmt.Sprintf("%#v", e), Used: used}, err
}

// knobs maps Efficiency to the search space (logs): the shares, the
// launch and per-sequence costs, the frontend and ingest terms; the
// attention share only when it is identified, the frontend's prompt
// exponent only when free.
type knobs struct{ free, attention bool }

func (k knobs) vector(e stub.Efficiency) []float64 {
	v := []float64{math.Log(e.BandwidthShare), math.Log(e.ComputeShare), logDur(e.KernelLaunch), logDur(e.PerSeq),
		logDur(e.FrontendBase), logDur(e.FrontendPerPromptToken), logDur(e.IngestBase), logDur(e.IngestPerPromptToken), logDur(e.IngestPerInflight),
		math.Log(max(e.IngestInflightExponent, 0.05))}
	if k.attention {
		v = append(v, math.Log(e.AttentionShare))
	}
	if k.free {
		v = append(v, math.Log(max(e.FrontendPromptExponent, 1)))
	}
	return v
}

func (k knobs) from(base stub.Efficiency, v []float64) stub.Efficiency {
	e := base
	e.BandwidthShare, e.ComputeShare = min(1, math.Exp(v[0])), min(1, math.Exp(v[1]))
	e.KernelLaunch, e.PerSeq, e.FrontendBase = expDur(v[2]), expDur(v[3]), expDur(v[4])
	e.FrontendPerPromptToken, e.IngestBase, e.IngestPerPromptToken, e.IngestPerInflight = expDur(v[5]), expDur(v[6]), expDur(v[7]), expDur(v[8])
	e.IngestInflightExponent = min(2, math.Exp(v[9]))
	i := 10
	if k.attention {
		e.AttentionShare = min(1, math.Exp(v[i]))
		i++
	}
	if k.free {
		e.FrontendPromptExponent = min(2, math.Exp(v[i]))
	}
	return e
}
