package bench_test

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/stub"
)

// windowConns counts the connections a server accepts, and those it had
// accepted when the measured window's first judgment started.
type windowConns struct {
	accepted atomic.Int64
	once     sync.Once
	atWindow int64
}

// firstCall records the connections at the window's first judgment.
type firstCall struct {
	next bench.Judge
	w    *windowConns
}

func (f firstCall) Judge(ctx context.Context, spec judgments.Spec, ctl judgments.Controls, it judgments.Item) (judgments.Judgment, error) {
	f.w.once.Do(func() { f.w.atWindow = f.w.accepted.Load() })
	return f.next.Judge(ctx, spec, ctl, it)
}

// The warmup opens as many connections as the window holds in flight (c
// judgments at once), so no connection is set up inside the window: a
// first pass measures what a tenth does. Without a warmup (the positive
// control) the window opens its connections itself.
func TestWarmWindowOpensConnections(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 48)
	const c = 16
	for _, tc := range []struct {
		warmup    int
		newInside bool
	}{{1, false}, {0, true}} {
		tw, err := stub.New(stub.Config{Profile: stub.ProfileFast(), TimeScale: 100})
		require.NoError(t, err)
		var w windowConns
		srv := httptest.NewUnstartedServer(tw)
		srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				w.accepted.Add(1)
			}
		}
		srv.Start()
		ep := bench.Endpoint{BaseURL: srv.URL, Target: receipts.Target{Kind: receipts.TargetInProcess}}
		sess, err := bench.NewSession(t.Context(), ep, set, bench.Options{Mode: judgments.ModeTokenIDs, TopLogprobs: judgments.DefaultTopLogprobs, InFlight: c})
		require.NoError(t, err)
		sess.SetHooks(bench.Hooks{Wrap: func(j bench.Judge) bench.Judge { return firstCall{j, &w} }})
		_, err = sess.Measure(t.Context(), bench.Point{Concurrency: c, Arm: receipts.ArmWarm, Warmup: tc.warmup})
		require.NoError(t, err)
		total := w.accepted.Load()
		srv.Close()
		if tc.newInside {
			require.Greater(t, total, w.atWindow, "no warmup: the window opened connections")
			continue
		}
		require.GreaterOrEqual(t, w.atWindow, int64(c), "the warmup opened a connection per judgment in flight")
		require.Equal(t, w.atWindow, total, "no connection set up inside the window")
	}
}

// preparedAt records how many images the client held encoded when the
// window's first judgment started.
type preparedAt struct {
	next bench.Judge
	cl   *judgments.Client
	once *sync.Once
	n    *int
}

func (p preparedAt) Judge(ctx context.Context, spec judgments.Spec, ctl judgments.Controls, it judgments.Item) (judgments.Judgment, error) {
	p.once.Do(func() { *p.n = p.cl.Prepared() })
	return p.next.Judge(ctx, spec, ctl, it)
}

// The window opens with every item's request parts encoded (the client's
// one-time base64 of the images is not timed as the server's), whatever
// the warmup: the first pass costs the client what the tenth does.
func TestWindowOpensPrepared(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 12)
	sess := inProcess(t, set, testConfig(), stub.Config{})
	require.Less(t, sess.Client.Prepared(), len(set.Cases), "positive control: the session has not encoded the set")
	var once sync.Once
	n := -1
	sess.SetHooks(bench.Hooks{Wrap: func(j bench.Judge) bench.Judge { return preparedAt{j, sess.Client, &once, &n} }})
	_, err := sess.Measure(t.Context(), bench.Point{Concurrency: 4, Arm: receipts.ArmWarm, Warmup: 0})
	require.NoError(t, err)
	require.Equal(t, len(set.Cases), n, "one image per check, each encoded before the window")
}

// A level far above the set's items warms as many judgments at once as
// the window can hold in flight, the set's items, not c: before, a run
// file's levels = [100000000] sent 1e8 warm-up judgments at once (24 GB,
// killed). The point measures, and the receipt keeps the level asked for.
func TestWarmLevelAboveItemsIsBounded(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 4)
	for _, c := range []int{1 << 45, math.MaxInt} {
		sess := inProcess(t, set, testConfig(), stub.Config{})
		rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: c, Arm: receipts.ArmWarm, Warmup: 1})
		require.NoError(t, err, "c=%d", c)
		require.Equal(t, len(set.Cases), rec.Throughput.Judgments)
		require.Equal(t, c, rec.Throughput.Concurrency)
	}
}
