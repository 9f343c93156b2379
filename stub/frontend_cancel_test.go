package stub

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A frontend job whose client left before it started gives its time back;
// one already started, or one with live jobs after it, does not.
func TestFrontendCancelGivesBackUnstartedJobs(t *testing.T) {
	f := &frontendModel{t: &timing{frontendBase: 1}, m: &metrics{}, mm: newLRU(1)}
	a, _ := f.reserve(0, nil, false, 0, 0) // [0, 1)
	b, _ := f.reserve(0, nil, false, 0, 0) // [1, 2)
	c, _ := f.reserve(0, nil, false, 0, 0) // [2, 3)
	require.Equal(t, []float64{0, 1, 2}, []float64{a, b, c})

	f.cancel(b, 0.5) // between live jobs: keeps its slot
	require.Equal(t, 3.0, f.free)
	f.cancel(c, 0.5) // the tail, and b before it is dead too: back to a's end
	require.Equal(t, 1.0, f.free)
	d, _ := f.reserve(0.5, nil, false, 0, 0)
	require.Equal(t, 1.0, d, "the next job starts when the live one ends")

	f.cancel(d, 1.5) // started at 1: kept
	require.Equal(t, 2.0, f.free)

	// The control: without the cancel, the next job waits behind the
	// dead one.
	g := &frontendModel{t: &timing{frontendBase: 1}, m: &metrics{}, mm: newLRU(1)}
	g.reserve(0, nil, false, 0, 0)
	x, _ := g.reserve(0, nil, false, 0, 0)
	y, _ := g.reserve(0.5, nil, false, 0, 0)
	require.Equal(t, 2.0, y)
	g.cancel(x, 0.5)
	z, _ := g.reserve(0.5, nil, false, 0, 0)
	require.Equal(t, 3.0, z, "x sits between live jobs: its slot stays")
}
