package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// The pool tests run in synctest bubbles: time there is virtual and moves
// only when every goroutine of the bubble is blocked, so "all c judgments
// are in flight", a 5 ms judgment and a cancel after 70 ms are exact facts,
// whatever else the machine is doing.

// fakeJudge answers after a delay (or, with gate set, when the test sends on
// it), fails the items in fail, and counts judgments in flight.
type fakeJudge struct {
	delay    time.Duration
	gate     chan struct{}
	fail     map[string]error
	inFlight atomic.Int32
	peak     atomic.Int32
	mu       sync.Mutex
	order    []string
}

func (f *fakeJudge) Judge(ctx context.Context, spec judgments.Spec, _ judgments.Controls, it judgments.Item) (judgments.Judgment, error) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	f.mu.Lock()
	f.order = append(f.order, it.ID)
	f.mu.Unlock()
	wait := f.gate
	if wait == nil {
		ch := make(chan struct{})
		defer time.AfterFunc(f.delay, func() { close(ch) }).Stop()
		wait = ch
	}
	select {
	case <-wait:
	case <-ctx.Done():
		return judgments.Judgment{Item: it.ID, Requests: 1}, &judgments.JudgeError{Item: it.ID, Question: "q", Err: ctx.Err()}
	}
	if err := f.fail[it.ID]; err != nil {
		return judgments.Judgment{Item: it.ID, Requests: 1}, &judgments.JudgeError{Item: it.ID, Question: "q", Err: err}
	}
	a := judgments.Answer{Question: "q", Label: "true", PromptTokens: 10}
	return judgments.Judgment{Item: it.ID, Answers: []judgments.Answer{a}, PromptTokens: 10, Requests: 1}, nil
}

func fakeSet(n int) fixtures.Set {
	s := fixtures.Set{Name: "fake", Spec: judgments.Spec{Name: "fake", Questions: []judgments.Question{judgments.NewNoul("q", "Q?", "", "")}}}
	for i := range n {
		s.Cases = append(s.Cases, fixtures.Case{Item: judgments.Item{ID: fmt.Sprintf("i%02d", i), Images: []judgments.Image{{MIME: "image/png", Data: []byte{byte(i)}}}}})
	}
	return s
}

// c judgments in flight by construction: judges block until released, and
// each time every goroutine is blocked exactly c are inside the judge, until
// fewer than c items are left.
func TestPoolKeepsCInFlight(t *testing.T) {
	for _, c := range []int{1, 4, 16} {
		t.Run(fmt.Sprint("c=", c), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 40
				f := &fakeJudge{gate: make(chan struct{})}
				out := Pool{Concurrency: c}.Stream(t.Context(), f, fakeSet(n), nil)
				for left := n; left > 0; left-- {
					synctest.Wait()
					require.EqualValues(t, min(c, left), f.inFlight.Load(), "%d items left", left)
					f.gate <- struct{}{} // release one judgment
					<-out
				}
				_, open := <-out
				require.False(t, open, "closed after the last judgment")
				require.EqualValues(t, c, f.peak.Load(), "never more than c")
			})
		})
	}
}

// A closed loop of 5 ms judgments: results in slice order, c=1 runs in
// slice order, and the figures are exact: ceil(40/c) rounds of 5 ms.
func TestPoolRun(t *testing.T) {
	for _, c := range []int{1, 4, 16} {
		t.Run(fmt.Sprint("c=", c), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeJudge{delay: 5 * time.Millisecond}
				set := fakeSet(40)
				o := Pool{Concurrency: c, StopOnError: true}.Run(t.Context(), f, set, nil)
				require.Equal(t, -1, o.StopIndex)
				require.Len(t, o.Results, 40)
				for i, r := range o.Results {
					require.Equal(t, i, r.Index, "results in slice order")
					require.NoError(t, r.Err)
					require.Equal(t, 5*time.Millisecond, r.Latency())
				}
				if c == 1 {
					require.Equal(t, "i00", f.order[0])
					require.Equal(t, "i39", f.order[39], "c=1 runs in slice order")
				}
				rounds := (40 + c - 1) / c
				require.Equal(t, time.Duration(rounds)*5*time.Millisecond, o.Wall)
				items, tp, stopped := figures(set, o, c)
				require.Nil(t, stopped)
				require.Len(t, items, 40)
				require.InDelta(t, 0.005, tp.Latency.Mean, 1e-12)
				tp.Latency.Mean = 0.005 // a sum of floats
				require.Equal(t, receipts.Throughput{
					Concurrency: c, WallSeconds: o.Wall.Seconds(), Judgments: 40, Images: 40, Requests: 40, PromptTokens: 400,
					JudgmentsPerSecond: 40 / o.Wall.Seconds(), ImagesPerSecond: 40 / o.Wall.Seconds(),
					Latency: receipts.Latency{N: 40, Mean: 0.005, P50: 0.005, P95: 0.005, P99: 0.005},
				}, tp)
			})
		})
	}
}

// The first failure in slice order stops the run: nothing new starts,
// in-flight judgments finish and are discarded, the stopped block names the
// item and question.
func TestPoolStopsOnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		f := &fakeJudge{delay: 2 * time.Millisecond, fail: map[string]error{"i10": boom, "i12": boom}}
		set := fakeSet(100)
		o := Pool{Concurrency: 4, StopOnError: true}.Run(t.Context(), f, set, nil)
		require.Equal(t, 10, o.StopIndex)
		require.ErrorIs(t, o.StopErr, boom)
		require.LessOrEqual(t, len(o.Results), 16, "no new judgments after the failure: at most the round after it")

		items, tp, stopped := figures(set, o, 4)
		require.NotNil(t, stopped)
		require.Equal(t, 10, stopped.Index)
		require.Equal(t, "i10", stopped.Item)
		require.Equal(t, "q", stopped.Question)
		require.Equal(t, receipts.StopError, stopped.Reason)
		require.Contains(t, stopped.Message, "boom")
		require.Equal(t, 10, tp.Judgments, "items before the failing index are kept")
		require.Equal(t, tp.Discarded, stopped.Discarded)
		require.Positive(t, stopped.Discarded, "in-flight judgments after the stop are counted")
		require.Equal(t, len(o.Results), len(items), "nothing measured is dropped from the receipt")
		for _, it := range items {
			if it.ID == "i10" {
				require.NotEmpty(t, it.Error)
				require.Empty(t, it.Answers, "failed closed")
			}
		}
	})
}

func TestPoolContinueOnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		f := &fakeJudge{delay: time.Millisecond, fail: map[string]error{"i03": boom, "i07": boom}}
		set := fakeSet(20)
		o := Pool{Concurrency: 4}.Run(t.Context(), f, set, nil)
		require.Equal(t, -1, o.StopIndex)
		items, tp, stopped := figures(set, o, 4)
		require.Nil(t, stopped)
		require.Len(t, items, 20)
		require.Equal(t, 18, tp.Judgments)
		require.Equal(t, 2, tp.Failed)
		require.Equal(t, "item i03: question q: boom", items[3].Error)
	})
}

// A cancel at 70 ms into rounds of 20 ms: items 0–11 finished, 12–15 were
// in flight and are aborted, nothing after starts.
func TestPoolCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeJudge{delay: 20 * time.Millisecond}
		set := fakeSet(200)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(70*time.Millisecond, cancel)
		o := Pool{Concurrency: 4, StopOnError: true}.Run(ctx, f, set, nil)
		require.True(t, o.Canceled)
		require.Equal(t, 12, o.StopIndex)
		require.Len(t, o.Results, 16, "the aborted judgments are kept")
		require.Equal(t, 70*time.Millisecond, o.Wall, "cancel ends the run at once")
		_, tp, stopped := figures(set, o, 4)
		require.Equal(t, receipts.StopCanceled, stopped.Reason)
		require.Equal(t, 12, tp.Judgments, "every item before the stop finished")
		require.Equal(t, 3, tp.Discarded)
	})
}

// A caller that stops reading and cancels leaves no goroutine behind: the
// workers must not block forever handing over results nobody reads.
func TestStreamAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		exited := make(chan struct{})
		p := Pool{Concurrency: 4, exited: func() { close(exited) }}
		out := p.Stream(ctx, &fakeJudge{gate: closed()}, fakeSet(50), nil)
		<-out // read one, then walk away
		cancel()
		synctest.Wait() // every goroutine has returned or is blocked for good
		select {
		case <-exited:
		default:
			for range out { // unblock them, so the bubble can end
			}
			t.Fatal("stream goroutines still blocked after the caller stopped reading and cancelled")
		}
	})
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Little's law on the pool itself, with the sampler as its observer: it
// holds on a clean closed loop and fires on a delay the latency clock does
// not count (a slow hand-off of the result), at c > 1.
func TestPoolLittlesLaw(t *testing.T) {
	run := func(t *testing.T, held func(int)) receipts.LittlesLaw {
		var ll receipts.LittlesLaw
		synctest.Test(t, func(t *testing.T) {
			f := &fakeJudge{delay: 10 * time.Millisecond}
			set := fakeSet(40)
			s := audit.NewSampler(4)
			o := Pool{Concurrency: 4, Observer: s, held: held}.Run(t.Context(), f, set, nil)
			occ := s.Close()
			var sum time.Duration
			for _, r := range o.Results {
				sum += r.Latency()
			}
			ll = audit.LittlesLaw(occ, audit.Window{WallSeconds: o.Wall.Seconds(), Judgments: len(o.Results), MeanLatencySeconds: sum.Seconds() / 40})
		})
		return ll
	}
	ll := run(t, nil)
	require.True(t, ll.OK, ll.Problems)
	require.InDelta(t, 4, ll.MeanInFlight, 1e-9)
	require.InDelta(t, 0, ll.RelError, 1e-9)

	ll = run(t, func(int) { time.Sleep(5 * time.Millisecond) })
	require.False(t, ll.OK)
	require.InDelta(t, 1.0/3, ll.RelError, 1e-9, "each slot is held 15 ms for 10 ms of latency")
	require.Contains(t, fmt.Sprint(ll.Problems), "time the latency clock does not see")
}

// Progress is reported after every judgment, in order, with the failures
// so far and the time since the window opened on the pool's clock: rounds
// of 5 ms at c=4 over 12 items are exactly 5, 10 and 15 ms.
func TestPoolProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		f := &fakeJudge{delay: 5 * time.Millisecond, fail: map[string]error{"i05": boom}}
		type event struct {
			done, failed int
			elapsed      time.Duration
		}
		var got []event
		o := Pool{Concurrency: 4, Progress: func(done, failed int, elapsed time.Duration) {
			got = append(got, event{done, failed, elapsed})
		}}.Run(t.Context(), f, fakeSet(12), nil)
		require.Len(t, o.Results, 12)
		require.Len(t, got, 13, "one as the window opens, one per judgment")
		require.Equal(t, event{0, 0, 0}, got[0])
		for i, e := range got[1:] {
			require.Equal(t, i+1, e.done)
			require.Equal(t, time.Duration(i/4+1)*5*time.Millisecond, e.elapsed, "judgment %d", i+1)
			if e.done < 5 {
				require.Zero(t, e.failed)
			}
		}
		require.Equal(t, 1, got[12].failed, "i05 failed; the run went on")
	})
}

// A level far above the set's items (levels = [100000000] in a run file)
// starts no more workers, and buffers no more results, than the set has
// items: the closed loop never holds more in flight than that. Before, the
// pool made a channel of c results and c workers (24 GB at 1e8).
func TestPoolLevelAboveItemsIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     int
		rate  bool
		items int
	}{
		{"closed 1<<45", 1 << 45, false, 8},
		{"closed MaxInt", math.MaxInt, false, 3},
		{"open capped 1<<45", 1 << 45, true, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeJudge{delay: time.Millisecond}
				p := Pool{Concurrency: tc.c}
				if tc.rate {
					p.Arrivals = make([]time.Duration, tc.items)
				}
				require.Equal(t, tc.items, p.slots(tc.items), "no more slots than items")
				o := p.Run(t.Context(), f, fakeSet(tc.items), nil)
				require.Len(t, o.Results, tc.items)
				require.EqualValues(t, tc.items, f.peak.Load(), "every item in flight at once")
			})
		})
	}
}
