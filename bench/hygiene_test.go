package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/judgments"
)

// A concurrency ladder on one server: with a cache reset before each point
// (cold arm) every point's prefix hit rate is its own (the reuse within one
// judgment's questions); without resets (warm arm) every point after the
// first inherits the caches of the points before it.
func TestLadderColdVersusWarm(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 35)
	levels := []int{1, 4, 16, 32}
	hit := map[string][]float64{}
	for _, arm := range []string{"cold", "warm"} {
		sess := inProcess(t, set, testEnv(t))
		for _, c := range levels {
			rec, err := sess.Measure(t.Context(), Point{Concurrency: c, Arm: arm, Warmup: 1})
			require.NoError(t, err)
			require.NotNil(t, rec.Server.PrefixCacheHitRate, "%s c=%d: %s", arm, c, rec.Server.Status)
			require.Equal(t, arm, rec.Server.CacheReset.Arm)
			hit[arm] = append(hit[arm], *rec.Server.PrefixCacheHitRate)
			t.Logf("%s c=%-2d prefix hit %.3f  mm hit %.3f", arm, c, *rec.Server.PrefixCacheHitRate, *rec.Server.MMCacheHitRate)
		}
	}
	cold, warm := hit["cold"], hit["warm"]
	for i := range levels {
		require.InDelta(t, cold[0], cold[i], 0.05, "cold c=%d inherits nothing", levels[i])
	}
	for i := 1; i < len(levels); i++ {
		require.Greater(t, warm[i], cold[i]+0.2, "warm c=%d inherits the earlier points' caches", levels[i])
	}
}

// A second client hammering the server during the window is caught by the
// client-server reconciliation.
func TestReconciliationCatchesSharedServer(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 35)
	sess := inProcess(t, set, testEnv(t))
	other := judgments.NewClient(sess.Target.BaseURL, judgments.WithModel(sess.Client.Model()))

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var hammered int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if _, err := other.Judge(ctx, set.Spec, sess.Controls, set.Cases[len(set.Cases)-1].Item); err == nil {
				hammered++
			}
		}
	}()
	rec, err := sess.Measure(t.Context(), Point{Concurrency: 4})
	cancel()
	wg.Wait()
	require.NoError(t, err)
	require.Positive(t, hammered)
	rc := rec.Checks.Reconciliation
	require.False(t, rc.OK)
	require.Equal(t, "shared server or lost requests", rc.Verdict)
	require.Greater(t, rc.ServerRequests, float64(rc.ClientRequests))
	require.Contains(t, fmt.Sprint(rec.Warnings), "shared server or lost requests")
}

// Little's law holds on a clean run and fires when each judgment holds its
// pool slot for time its latency does not count.
func TestLittlesLaw(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 35)
	sess := inProcess(t, set, testEnv(t))
	rec, err := sess.Measure(t.Context(), Point{Concurrency: 4})
	require.NoError(t, err)
	ll := rec.Checks.LittlesLaw
	require.True(t, ll.OK, ll.Problems)
	require.Less(t, ll.RelError, 0.05)

	sess.held = func() { time.Sleep(5 * time.Millisecond) }
	rec, err = sess.Measure(t.Context(), Point{Concurrency: 4})
	require.NoError(t, err)
	ll = rec.Checks.LittlesLaw
	require.False(t, ll.OK)
	require.Greater(t, ll.RelError, 0.05)
	require.Contains(t, fmt.Sprint(rec.Warnings), "little's law")
}
