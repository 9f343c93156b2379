package bench

import (
	"context"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/tally"
)

// The open-loop tests run in synctest bubbles too: arrivals every 100 ms
// and judgments of 50 or 250 ms are exact there, so the client queue and
// the service time are facts, not measurements.

func constant(t *testing.T, rate float64, n int) []time.Duration {
	t.Helper()
	s, err := Arrivals{Rate: rate, Burstiness: math.Inf(1)}.Schedule(n)
	require.NoError(t, err)
	return s
}

// Uncapped, judgments start the moment they arrive, whatever is in flight:
// no client queue, and the window runs from the opening to the last end.
func TestOpenLoopUncapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeJudge{delay: 50 * time.Millisecond}
		set := fakeSet(10)
		open := time.Now()
		o := Pool{Arrivals: constant(t, 10, 10)}.Run(t.Context(), f, set, nil)
		require.Equal(t, -1, o.StopIndex)
		require.Len(t, o.Results, 10)
		for i, r := range o.Results {
			require.Equal(t, open.Add(time.Duration(i+1)*100*time.Millisecond), r.Arrival, "judgment %d arrives on schedule", i)
			require.Zero(t, r.Queued())
			require.Zero(t, r.Lag(), "the client kept to its schedule")
			require.Equal(t, 50*time.Millisecond, r.Latency())
		}
		require.Equal(t, 1050*time.Millisecond, o.Wall)
		require.EqualValues(t, 1, f.peak.Load(), "50 ms judgments 100 ms apart never overlap")
	})
}

// Capped at one slot, 250 ms judgments arriving every 100 ms queue in the
// client, first come first served: judgment i starts at 100+250i ms,
// having waited 150i ms. The receipt figures separate the two.
func TestOpenLoopQueuesBeyondCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeJudge{delay: 250 * time.Millisecond}
		set := fakeSet(8)
		open := time.Now()
		o := Pool{Concurrency: 1, Arrivals: constant(t, 10, 8)}.Run(t.Context(), f, set, nil)
		require.Len(t, o.Results, 8)
		for i, r := range o.Results {
			require.Equal(t, open.Add(time.Duration(100+250*i)*time.Millisecond), r.Start, "judgment %d", i)
			require.Equal(t, time.Duration(150*i)*time.Millisecond, r.Queued(), "judgment %d", i)
			require.Equal(t, 250*time.Millisecond, r.Latency())
		}
		require.Equal(t, 2100*time.Millisecond, o.Wall)
		require.EqualValues(t, 1, f.peak.Load(), "never more than the cap")
		for i, id := range f.order {
			require.Equal(t, fmt.Sprintf("i%02d", i), id, "first come, first served")
		}

		_, tp, _ := figuresWith(set, o, tally.Tally{Concurrency: 1, OpenLoop: true, SLOSeconds: 0.6})
		require.InDelta(t, 0.25, tp.Latency.P50, 1e-9, "service time")
		require.NotNil(t, tp.ClientQueue)
		require.InDelta(t, 0.15*3.5, tp.ClientQueue.Mean, 1e-9)
		require.InDelta(t, 0.15*7, tp.ClientQueue.P99, 1e-9)
		require.InDelta(t, 0.25+0.15*7, tp.Response.P99, 1e-9)
		// Response times 250, 400, 550, 700 … ms: three within 600 ms.
		require.Equal(t, receipts.SLO{LatencySeconds: 0.6, Within: 3, Of: 8, Goodput: 3.0 / 8, GoodPerSecond: 3 / 2.1}, *tp.SLO)
	})
}

// Little's law holds twice over in an open loop, each exactly: over the
// slots (L in service, W the service time) and over the client (L queued
// or in service, W the response time). Checking the client's L against the
// service time instead — dropping the queue from W — fails: the two are
// not interchangeable.
func TestOpenLoopLittlesLaw(t *testing.T) {
	for _, cap := range []int{0, 2} {
		t.Run(fmt.Sprint("max=", cap), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeJudge{delay: 300 * time.Millisecond}
				set := fakeSet(40)
				sched, err := Arrivals{Rate: 8, Seed: 3}.Schedule(40) // Poisson
				require.NoError(t, err)
				service, system := audit.NewSampler(cap), audit.NewSampler(0)
				o := Pool{Concurrency: cap, Arrivals: sched, Observer: service, System: system}.Run(t.Context(), f, set, nil)
				occ, sys := service.Close(), system.Close()
				var lat, resp time.Duration
				for _, r := range o.Results {
					lat += r.Latency()
					resp += r.Response()
				}
				n := float64(len(o.Results))
				w := func(mean time.Duration, name string) audit.Window {
					return audit.Window{WallSeconds: o.Wall.Seconds(), Judgments: len(o.Results), MeanLatencySeconds: mean.Seconds() / n, OpenLoop: true, W: name}
				}
				ll := audit.LittlesLaw(occ, w(lat, "service"))
				require.True(t, ll.OK, ll.Problems)
				require.InDelta(t, 0, ll.RelError, 1e-9)
				llr := audit.LittlesLaw(sys, w(resp, "response"))
				require.True(t, llr.OK, llr.Problems)
				require.InDelta(t, 0, llr.RelError, 1e-9)
				require.Equal(t, "response", llr.W)
				if cap > 0 {
					require.Greater(t, resp, lat, "at rate 8/s × 0.3 s a cap of 2 queues")
					wrong := audit.LittlesLaw(sys, w(lat, "service"))
					require.False(t, wrong.OK)
					require.Contains(t, fmt.Sprint(wrong.Problems), "time the latency clock does not see")
				} else {
					require.Equal(t, resp, lat, "no cap, no queue")
				}
			})
		})
	}
}

// A cancel while the feeder waits for the next arrival ends the run at
// once: what arrived finished, the rest never started, nothing is left
// running (the bubble would not end otherwise).
func TestOpenLoopCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer time.AfterFunc(370*time.Millisecond, cancel).Stop()
		system := audit.NewSampler(0)
		o := Pool{Arrivals: constant(t, 10, 10), System: system}.Run(ctx, &fakeJudge{delay: 50 * time.Millisecond}, fakeSet(10), nil)
		require.Len(t, o.Results, 3)
		require.Equal(t, 3, o.StopIndex)
		require.True(t, o.Canceled)
		occ := system.Close()
		require.Zero(t, occ.InFlightAtClose, "every arrival left the system")
		require.Equal(t, 3, occ.Ends)
	})
}

// A client that offers judgments late against the schedule is told in the
// receipt: the load offered was not the load stated.
func TestLagWarning(t *testing.T) {
	require.Empty(t, lagWarning(nil, 10))
	require.Empty(t, lagWarning(&receipts.Latency{N: 5, P99: 0.005}, 10), "5 ms late at 100 ms apart is within 5%")
	w := lagWarning(&receipts.Latency{N: 5, Mean: 0.002, P99: 0.006}, 10)
	require.Contains(t, w, "offered judgments late")
	require.Contains(t, w, "p99 0.006s")
}
