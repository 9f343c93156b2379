package fit

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/stub"
)

// TestScore: a perfect fit scores 0, a 20% miss past a 12% margin far
// more than a 10% one inside it.
func TestScore(t *testing.T) {
	fig := func(got float64) []stub.Figure { return []stub.Figure{{Row: "r", Name: "n", Got: got, Want: 1}} }
	require.Zero(t, Score(fig(1), 0.12))
	require.Greater(t, Score(fig(1.2), 0.12), 3*Score(fig(1.1), 0.12))
	require.Greater(t, Score(fig(math.NaN()), 0.12), 25.0, "a figure the twin cannot give scores as a 5-log miss")
}

// TestEfficiencyUsesFittedRowsOnly runs a one-step Hopper fit: it scores
// no worse than its start and uses the 8K and 16K rows and nothing else
// (what docs/prediction.md calls fitted); the E2B fit uses every row.
func TestEfficiencyUsesFittedRowsOnly(t *testing.T) {
	dec, pre, err := stub.ReadE2BMatrix("../testdata/speed-matrix-gemma-4-E2B-h200nvl.csv")
	require.NoError(t, err)
	r, err := Efficiency(Hopper, stub.EfficiencyHopper, dec, pre, Search{Restarts: 1, Iterations: 1, Levels: []int{1}})
	require.NoError(t, err)
	require.LessOrEqual(t, r.After, r.Before)
	require.Len(t, r.Used, 2*2+2*4, "prefill tok/s and TTFT at 8K and 16K, four figures of each decode cell (c=1 here)")
	for _, f := range r.Used {
		require.True(t, strings.Contains(f.Row, " 8K") || strings.Contains(f.Row, " 16K"), f.Row)
	}
	require.Contains(t, r.String(), "TritonAttentionShare:0.35", "the Triton share is held, not searched")
	_, err = Efficiency("all", stub.EfficiencyHopper, dec, pre, Search{})
	require.ErrorContains(t, err, "want")
}

// TestRTX3090Fit runs a one-step fit of the RTX 3090 profile: every
// point of the receipt used, no worse than the start.
func TestRTX3090Fit(t *testing.T) {
	rec, err := stub.ReadRTX3090("../testdata/token-throughput-rtx3090.json")
	require.NoError(t, err)
	r := RTX3090(rec, Search{Restarts: 1, Iterations: 1})
	require.LessOrEqual(t, r.After, r.Before)
	require.Len(t, r.Used, 3*len(rec.Records))
	require.Contains(t, r.String(), "StepBase: ")
}

// TestH100Split: of typevet's eighteen receipts the H100 fit uses the nine
// stub.TypevetFitted names (docs/twin.md) and names the other nine held
// out; a one-set fit holds out only that set's.
func TestH100Split(t *testing.T) {
	rec, err := stub.ReadTypevetReceipts("../testdata/typevet_throughput.json")
	require.NoError(t, err)
	require.Len(t, rec, 18)
	runs := map[string]stub.TypevetRun{}
	for k := range rec {
		runs[k] = stub.TypevetRun{}
	}
	fitted := h100Fitted(runs)
	require.Equal(t, []string{"checks_full_c16", "checks_full_c32", "faces_full_c16", "faces_full_c32",
		"signatures_full_c16", "signatures_full_c32", "signatures_subset_c1", "signatures_subset_c16", "signatures_subset_c32"}, fitted)
	held := h100HeldOut(rec, fitted, "")
	require.Len(t, held, 9)
	require.Contains(t, held, "signatures_subset_c4")
	for _, k := range held {
		require.NotContains(t, fitted, k)
	}
	require.Equal(t, []string{"signatures_subset_c4"}, h100HeldOut(rec, fitted, "signatures"))
	_, err = stub.ReadTypevetReceipts("missing.json")
	require.Error(t, err)
}

// TestH100Score: a perfect fit scores 0; a judgments/s miss of 10%
// (past its 6% margin) costs more than a p50 miss of 10% (inside 15%).
func TestH100Score(t *testing.T) {
	figs := func(jps, p50 float64) []stub.Figure {
		var out []stub.Figure
		for i, g := range []float64{jps, p50, 1, 1, 1, 1, 1} {
			out = append(out, stub.Figure{Row: "faces_full_c16", Name: string(rune('a' + i)), Got: g, Want: 1})
		}
		return out
	}
	require.Zero(t, h100Score(figs(1, 1), 0.06))
	require.Greater(t, h100Score(figs(1.1, 1), 0.06), 4*h100Score(figs(1, 1.1), 0.06))
}
