package tokens

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A request is good when it produced its tokens and met every target given,
// as vllm bench serve --goodput counts: TTFT 100, 200, 300 ms and TPOT
// (e2e − ttft)/3 of 100, 100, 233 ms against targets of 250 ms and 150 ms
// leave two good of four (the cut request never is). Each target alone
// counts differently, and no SLO gives no goodput block.
func TestSummarizeGoodput(t *testing.T) {
	reqs := sample().Runs
	for _, tc := range []struct {
		slo    SLO
		within int
		met    bool
	}{
		{SLO{TTFTMs: 250, TPOTMs: 150, Target: 0.5}, 2, true},
		{SLO{TTFTMs: 250, Target: 0.75}, 2, false},
		{SLO{TPOTMs: 150}, 2, false},
		{SLO{TPOTMs: 250, TTFTMs: 1000, Target: 0.75}, 3, true},
	} {
		p := samplePoint
		p.SLO = &tc.slo
		g := Summarize(p, reqs).Goodput
		require.NotNil(t, g)
		require.Equal(t, tc.within, g.Within, "%+v", tc.slo)
		require.Equal(t, 4, g.Of)
		require.InDelta(t, float64(tc.within)/4, g.Share, 1e-12)
		require.InDelta(t, float64(tc.within)/3, g.PerSecond, 1e-12, "over 3 s of runs")
		if tc.slo.Target == 0 {
			require.Nil(t, g.Met)
		} else {
			require.Equal(t, tc.met, *g.Met, "%+v", tc.slo)
		}
	}
	require.Nil(t, Summarize(samplePoint, reqs).Goodput)
}

// An edited goodput is caught: Validate recomputes it from the requests.
func TestValidateGoodput(t *testing.T) {
	r := sample()
	r.Point.SLO = &SLO{TTFTMs: 250}
	r.Summary = Summarize(r.Point, r.Runs)
	require.NoError(t, r.Validate())
	r.Summary.Goodput.Within++
	require.ErrorContains(t, r.Validate(), "summary.goodput")
}
