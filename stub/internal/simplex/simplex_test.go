package simplex

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNelderMead finds the minimum of a shifted bowl; the control: no
// steps leave it where it started.
func TestNelderMead(t *testing.T) {
	f := func(v []float64) float64 { return (v[0]-1)*(v[0]-1) + 3*(v[1]+2)*(v[1]+2) }
	x := NelderMead(f, []float64{0, 0}, 2, 200)
	require.InDelta(t, 1, x[0], 1e-3)
	require.InDelta(t, -2, x[1], 1e-3)
	require.LessOrEqual(t, f(NelderMead(f, []float64{0, 0}, 1, 0)), f([]float64{0, 0}), "no steps: the best of the first simplex")
	require.Greater(t, f(NelderMead(f, []float64{0, 0}, 1, 0)), 1.0, "…which is not the minimum")
}
