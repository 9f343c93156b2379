package bench_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/stub"
)

// A concurrency ladder on one server: with a cache reset before each point
// (cold arm) every point's prefix hit rate is its own (the reuse within one
// judgment's questions); without resets (warm arm) every point after the
// first inherits the caches of the points before it.
func TestLadderColdVersusWarm(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 35)
	levels := []int{1, 4, 16, 32}
	hit := map[receipts.Arm][]float64{}
	for _, arm := range []receipts.Arm{receipts.ArmCold, receipts.ArmWarm} {
		sess := inProcess(t, set, testConfig(), stub.Config{})
		for _, c := range levels {
			rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: c, Arm: arm, Warmup: 1})
			require.NoError(t, err)
			require.NotNil(t, rec.Server.PrefixCacheHitRate, "%s c=%d: %s", arm, c, rec.Server.Status)
			require.Equal(t, arm, rec.Server.CacheReset.Arm)
			hit[arm] = append(hit[arm], *rec.Server.PrefixCacheHitRate)
			t.Logf("%s c=%-2d prefix hit %.3f  mm hit %.3f", arm, c, *rec.Server.PrefixCacheHitRate, *rec.Server.MMCacheHitRate)
		}
	}
	cold, warm := hit[receipts.ArmCold], hit[receipts.ArmWarm]
	for i := range levels {
		require.InDelta(t, cold[0], cold[i], 0.05, "cold c=%d inherits nothing", levels[i])
	}
	for i := 1; i < len(levels); i++ {
		require.Greater(t, warm[i], cold[i]+0.2, "warm c=%d inherits the earlier points' caches", levels[i])
	}
}

// A second client using the server during the window is caught by the
// client-server reconciliation. Its judgment runs inside the window by
// construction (while the first judgment holds its pool slot), not by
// racing the run.
func TestReconciliationCatchesSharedServer(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 35)
	sess := inProcess(t, set, testConfig(), stub.Config{})
	other := judgments.NewClient(sess.Endpoint.BaseURL, judgments.WithModel(sess.Client.Model()))
	var once sync.Once
	var otherErr error
	sess.SetHooks(bench.Hooks{Held: func(int) {
		once.Do(func() {
			_, otherErr = other.Judge(context.Background(), set.Spec, sess.Controls, set.Cases[len(set.Cases)-1].Item)
		})
	}})
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 4})
	require.NoError(t, err)
	require.NoError(t, otherErr)
	rc := rec.Checks.Reconciliation
	require.False(t, rc.OK)
	require.Equal(t, "shared server or lost requests", rc.Verdict)
	questions := len(set.Spec.Questions)
	require.Equal(t, float64(rc.ClientRequests+questions), rc.ServerRequests, "exactly the other client's requests")
	require.Contains(t, fmt.Sprint(rec.Warnings), "shared server or lost requests")

	// The same run without the other client reconciles.
	sess.SetHooks(bench.Hooks{})
	rec, err = sess.Measure(t.Context(), bench.Point{Concurrency: 4})
	require.NoError(t, err)
	require.True(t, rec.Checks.Reconciliation.OK, rec.Checks.Reconciliation.Detail)
}

// fakeClock is a clock that moves only when told: time in the window is
// what the test says it is, whatever the machine's load.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// ticking is a judge that takes d of the fake clock's time per judgment
// (and asks the real twin, so the window is a real one in every other way).
type ticking struct {
	inner bench.Judge
	clock *fakeClock
	d     time.Duration
}

func (j ticking) Judge(ctx context.Context, spec judgments.Spec, c judgments.Controls, it judgments.Item) (judgments.Judgment, error) {
	r, err := j.inner.Judge(ctx, spec, c, it)
	j.clock.advance(j.d)
	return r, err
}

// Little's law holds on a clean run and fires when each judgment holds its
// pool slot for time its latency does not count. One judgment in flight and
// a fake clock make both exact: L = 1 and λW = 1 when clean; with 5 ms held
// after each 10 ms judgment, λW = 10/15 and the gap is a third.
func TestLittlesLaw(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 14)
	sess := inProcess(t, set, testConfig(), stub.Config{})
	clock := &fakeClock{t: time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)}
	wrap := func(j bench.Judge) bench.Judge { return ticking{j, clock, 10 * time.Millisecond} }

	sess.SetHooks(bench.Hooks{Clock: clock.now, Wrap: wrap})
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 1})
	require.NoError(t, err)
	ll := rec.Checks.LittlesLaw
	require.True(t, ll.OK, ll.Problems)
	require.InDelta(t, 1, ll.MeanInFlight, 1e-9)
	require.InDelta(t, 0, ll.RelError, 1e-9)
	require.InDelta(t, 14*0.010, rec.Throughput.WallSeconds, 1e-9)
	require.NoError(t, sweep.LittlesLaw(rec), "the rule vetbench run and go test -bench share passes it")

	sess.SetHooks(bench.Hooks{Clock: clock.now, Wrap: wrap, Held: func(int) { clock.advance(5 * time.Millisecond) }})
	rec, err = sess.Measure(t.Context(), bench.Point{Concurrency: 1})
	require.NoError(t, err)
	ll = rec.Checks.LittlesLaw
	require.False(t, ll.OK)
	require.InDelta(t, 1.0/3, ll.RelError, 1e-9)
	require.Contains(t, fmt.Sprint(rec.Warnings), "little's law")
	require.Contains(t, fmt.Sprint(ll.Problems), "time the latency clock does not see")
	// 5 ms a judgment is under audit.MinUnaccounted: a warning only. At
	// 100 ms judgments held 50 ms the point fails by the one rule
	// (sweep.Run.Measure applies it for vetbench run and BenchmarkJudgments
	// alike), not only with a warning.
	require.NoError(t, sweep.LittlesLaw(rec))
	slow := func(j bench.Judge) bench.Judge { return ticking{j, clock, 100 * time.Millisecond} }
	sess.SetHooks(bench.Hooks{Clock: clock.now, Wrap: slow, Held: func(int) { clock.advance(50 * time.Millisecond) }})
	rec, err = sess.Measure(t.Context(), bench.Point{Concurrency: 1})
	require.NoError(t, err)
	require.InDelta(t, 1.0/3, rec.Checks.LittlesLaw.RelError, 1e-9)
	require.ErrorIs(t, sweep.LittlesLaw(rec), audit.ErrLittlesLaw)
	require.ErrorContains(t, sweep.LittlesLaw(rec), "50ms per item unaccounted")
	require.True(t, sweep.Failed(rec, sweep.LittlesLaw(rec)), "a failed point, not the run's error")
}
