package bench_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/slo"
	"github.com/vetbench/vetbench/stub"
)

// An open-loop point on the twin writes a receipt that says so: the load
// block (rate, process, cap, seed), each item's client queue, the queue and
// response percentiles beside the service time, and Little's law over both
// the slots and the client. Nothing here asserts a wall-clock figure: the
// rate is high enough to be quick, and what the twin's timing makes of it
// is a measurement (README, "Open-loop load and SLOs").
func TestMeasureOpenLoop(t *testing.T) {
	s := getSuite(t)
	cfg := testConfig()
	cfg.OpenLoop.Seed = 9
	cfg.SLO.Latency = time.Minute // every judgment within it, whatever the machine
	sess := inProcess(t, firstCases(s.set(t, "faces"), 12), cfg, stub.Config{})
	p := bench.Point{Rate: 200, Concurrency: 4}
	rec, err := sess.Measure(t.Context(), p)
	require.NoError(t, err)
	require.Equal(t, &receipts.Load{Mode: receipts.LoadOpen, Rate: 200, Process: "poisson", Burstiness: 1, MaxConcurrency: 4, Seed: 9}, rec.Pins.Load)
	tp := rec.Throughput
	require.Equal(t, 12, tp.Judgments)
	require.NotNil(t, tp.ClientQueue)
	require.NotNil(t, tp.Response)
	require.Equal(t, 12, tp.ClientQueue.N)
	for _, it := range rec.Items {
		require.GreaterOrEqual(t, it.QueueSeconds, 0.0, it.ID)
	}
	require.GreaterOrEqual(t, tp.Response.Mean, tp.Latency.Mean, "response = queue + service")
	require.Equal(t, &receipts.SLO{LatencySeconds: 60, Within: 12, Of: 12, Goodput: 1, GoodPerSecond: tp.SLO.GoodPerSecond}, tp.SLO)
	require.Equal(t, "service", rec.Checks.LittlesLaw.W)
	require.NotNil(t, rec.Checks.LittlesLawResponse)
	require.Equal(t, "response", rec.Checks.LittlesLawResponse.W)
	require.Equal(t, 2*12, rec.Checks.LittlesLawResponse.Samples, "every arrival and departure sampled")

	ms := map[string]float64{}
	for _, m := range metrics.FromReceipt(rec) {
		ms[m.Unit] = m.Value
	}
	require.Contains(t, ms, metrics.ClientQueueSec)
	require.Equal(t, 1.0, ms[metrics.Goodput])
	require.Equal(t, "set=faces/rate=200/max=4", p.Name("faces", false))

	path := bench.ReceiptPath(t.TempDir(), "faces", p)
	require.Equal(t, "faces_rate200_max4.json", filepath.Base(path))
	require.NoError(t, receipts.WriteFile(path, rec))
	back, err := receipts.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, rec.Pins.Load, back.Pins.Load)
	require.Equal(t, rec.Throughput.SLO, back.Throughput.SLO)

	// Without a cap every arrival starts at once, and the receipt (c 0)
	// is still a valid one.
	un := bench.Point{Rate: 400}
	rec, err = sess.Measure(t.Context(), un)
	require.NoError(t, err)
	require.Equal(t, 0, rec.Pins.Load.MaxConcurrency)
	require.Equal(t, 0, rec.Throughput.Concurrency)
	path = bench.ReceiptPath(t.TempDir(), "faces", un)
	require.Equal(t, "faces_rate400.json", filepath.Base(path))
	require.NoError(t, receipts.WriteFile(path, rec))
}

// slowSome is a judge that takes slow of the fake clock's time on the
// items in slow, fast on the others.
type slowSome struct {
	inner      bench.Judge
	clock      *fakeClock
	slow       map[string]bool
	fast, long time.Duration
}

func (j slowSome) Judge(ctx context.Context, spec judgments.Spec, c judgments.Controls, it judgments.Item) (judgments.Judgment, error) {
	r, err := j.inner.Judge(ctx, spec, c, it)
	d := j.fast
	if j.slow[it.ID] {
		d = j.long
	}
	j.clock.advance(d)
	return r, err
}

// The positive control of the SLO: on a fake clock, 3 of 12 judgments take
// 500 ms and the rest 10 ms; against a 100 ms target goodput is exactly
// 9/12. A stated goodput of 95% is missed — the point fails with
// slo.ErrMissed and its receipt says so — while 75% is met and passes.
func TestMeasureSLOGoodput(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 12)
	slow := map[string]bool{set.Cases[2].ID: true, set.Cases[5].ID: true, set.Cases[9].ID: true}
	for _, tc := range []struct {
		target float64
		met    bool
	}{{0.95, false}, {0.75, true}} {
		t.Run(fmt.Sprint("target=", tc.target), func(t *testing.T) {
			cfg := testConfig()
			cfg.SLO.Latency, cfg.SLO.Goodput = 100*time.Millisecond, tc.target
			sess := inProcess(t, set, cfg, stub.Config{})
			clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
			sess.SetHooks(bench.Hooks{Clock: clock.now, Wrap: func(j bench.Judge) bench.Judge {
				return slowSome{inner: j, clock: clock, slow: slow, fast: 10 * time.Millisecond, long: 500 * time.Millisecond}
			}})
			rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 1})
			require.NotNil(t, rec)
			got := rec.Throughput.SLO
			require.NotNil(t, got)
			require.Equal(t, 9, got.Within)
			require.Equal(t, 12, got.Of)
			require.InDelta(t, 0.75, got.Goodput, 1e-12)
			require.InDelta(t, 9/(9*0.010+3*0.5), got.GoodPerSecond, 1e-9)
			require.Equal(t, tc.met, *got.Met)
			if tc.met {
				require.NoError(t, err)
				require.NoError(t, slo.Check(rec))
				return
			}
			require.ErrorIs(t, err, slo.ErrMissed)
			require.False(t, errors.Is(err, bench.ErrFailures), "an SLO miss is not a failed judgment")
			require.ErrorIs(t, slo.Check(rec), slo.ErrMissed)
			require.Contains(t, fmt.Sprint(rec.Warnings), "9 of 12 judgments (75.0%) within 0.1s, below the stated goodput 95.0%")
		})
	}
}
