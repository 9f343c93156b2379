package bench

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gapStats are the mean and coefficient of variation of a schedule's
// inter-arrival gaps, in seconds.
func gapStats(s []time.Duration) (mean, cv float64) {
	prev := time.Duration(0)
	gaps := make([]float64, len(s))
	for i, at := range s {
		gaps[i] = (at - prev).Seconds()
		prev = at
	}
	for _, g := range gaps {
		mean += g
	}
	mean /= float64(len(gaps))
	v := 0.0
	for _, g := range gaps {
		v += (g - mean) * (g - mean)
	}
	return mean, math.Sqrt(v/float64(len(gaps))) / mean
}

// The schedule is vLLM's: gamma gaps of mean 1/rate whose spread is set by
// the burstiness alone (the coefficient of variation of Gamma(k) is
// 1/√k: 1 for Poisson, 2 at burstiness 0.25, 0 when constant), rescaled so
// the last arrival is exactly n/rate. Fixed seeds make these figures exact
// facts about the generator, not samples that may flake.
func TestArrivalsSchedule(t *testing.T) {
	const n = 20000
	for _, tc := range []struct {
		burstiness float64
		cv         float64
	}{
		{0, 1}, // unset: Poisson
		{1, 1},
		{0.25, 2},
		{4, 0.5},
		{math.Inf(1), 0},
	} {
		t.Run(fmt.Sprint("burstiness=", tc.burstiness), func(t *testing.T) {
			a := Arrivals{Rate: 8, Burstiness: tc.burstiness, Seed: 7}
			s, err := a.Schedule(n)
			require.NoError(t, err)
			require.Len(t, s, n)
			require.InDelta(t, float64(n)/8, s[n-1].Seconds(), 1e-6, "the last arrival lands on n/rate")
			for i := 1; i < n; i++ {
				require.GreaterOrEqual(t, s[i], s[i-1], "arrivals in order")
			}
			mean, cv := gapStats(s)
			require.InDelta(t, 1.0/8, mean, 1e-6)
			require.InDelta(t, tc.cv, cv, 0.05*max(tc.cv, 0.2), "spread of the gaps")
		})
	}
}

// Same seed, same arrivals; another seed, others: a schedule is
// reproducible from its receipt.
func TestArrivalsSeeded(t *testing.T) {
	a := Arrivals{Rate: 3, Seed: 42}
	s1, err := a.Schedule(50)
	require.NoError(t, err)
	s2, _ := a.Schedule(50)
	require.Equal(t, s1, s2)
	a.Seed = 43
	s3, _ := a.Schedule(50)
	require.NotEqual(t, s1, s3)
	// A constant process needs no seed: every 1/rate.
	c, _ := Arrivals{Rate: 4, Burstiness: math.Inf(1)}.Schedule(4)
	require.Equal(t, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second}, c)
}

func TestArrivalsInvalid(t *testing.T) {
	for _, a := range []Arrivals{{Rate: 0}, {Rate: -1}, {Rate: math.Inf(1)}, {Rate: math.NaN()}, {Rate: 1, Burstiness: -1}, {Rate: 1, Burstiness: math.NaN()}} {
		_, err := a.Schedule(3)
		require.ErrorIs(t, err, ErrArrivals, "%+v", a)
	}
	s, err := Arrivals{Rate: 1}.Schedule(0)
	require.NoError(t, err)
	require.Empty(t, s)
}
