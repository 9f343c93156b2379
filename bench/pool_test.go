package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
)

// fakeJudge answers after a delay, fails the items in fail, and records the
// most judgments it saw in flight at once.
type fakeJudge struct {
	delay    time.Duration
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
	select {
	case <-time.After(f.delay):
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

func TestPoolKeepsCInFlight(t *testing.T) {
	for _, c := range []int{1, 4, 16} {
		t.Run(fmt.Sprint("c=", c), func(t *testing.T) {
			f := &fakeJudge{delay: 5 * time.Millisecond}
			set := fakeSet(40)
			o := Pool{Concurrency: c, StopOnError: true}.Run(t.Context(), f, set, nil)
			require.Equal(t, -1, o.StopIndex)
			require.Len(t, o.Results, 40)
			require.EqualValues(t, c, f.peak.Load(), "the pool fills to c and never beyond")
			for i, r := range o.Results {
				require.Equal(t, i, r.Index, "results in slice order")
				require.NoError(t, r.Err)
			}
			if c == 1 {
				require.Equal(t, "i00", f.order[0])
				require.Equal(t, "i39", f.order[39], "c=1 runs in slice order")
			}
			items, tp, stopped := tally(set, o, c)
			require.Nil(t, stopped)
			require.Len(t, items, 40)
			require.Equal(t, 40, tp.Judgments)
			require.Equal(t, 40, tp.Images)
			require.Equal(t, 40, tp.Requests)
			require.Equal(t, 400, tp.PromptTokens)
			require.InDelta(t, float64(tp.Judgments)/tp.WallSeconds, tp.JudgmentsPerSecond, 1e-9)
			// Closed loop: throughput ≈ c / latency.
			require.InEpsilon(t, float64(c)/tp.Latency.Mean, tp.JudgmentsPerSecond, 0.5)
		})
	}
}

// The first failure in slice order stops the run: nothing new starts,
// in-flight judgments finish and are discarded, the stopped block names the
// item and question.
func TestPoolStopsOnError(t *testing.T) {
	boom := errors.New("boom")
	f := &fakeJudge{delay: 2 * time.Millisecond, fail: map[string]error{"i10": boom, "i12": boom}}
	set := fakeSet(100)
	o := Pool{Concurrency: 4, StopOnError: true}.Run(t.Context(), f, set, nil)
	require.Equal(t, 10, o.StopIndex)
	require.ErrorIs(t, o.StopErr, boom)
	require.Less(t, len(o.Results), 30, "no new judgments after the failure")

	items, tp, stopped := tally(set, o, 4)
	require.NotNil(t, stopped)
	require.Equal(t, 10, stopped.Index)
	require.Equal(t, "i10", stopped.Item)
	require.Equal(t, "q", stopped.Question)
	require.Equal(t, "error", stopped.Reason)
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
}

func TestPoolContinueOnError(t *testing.T) {
	boom := errors.New("boom")
	f := &fakeJudge{delay: time.Millisecond, fail: map[string]error{"i03": boom, "i07": boom}}
	set := fakeSet(20)
	o := Pool{Concurrency: 4}.Run(t.Context(), f, set, nil)
	require.Equal(t, -1, o.StopIndex)
	items, tp, stopped := tally(set, o, 4)
	require.Nil(t, stopped)
	require.Len(t, items, 20)
	require.Equal(t, 18, tp.Judgments)
	require.Equal(t, 2, tp.Failed)
	require.Equal(t, "item i03: question q: boom", items[3].Error)
}

func TestPoolCancel(t *testing.T) {
	f := &fakeJudge{delay: 20 * time.Millisecond}
	set := fakeSet(200)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(70*time.Millisecond, cancel)
	o := Pool{Concurrency: 4, StopOnError: true}.Run(ctx, f, set, nil)
	require.True(t, o.Canceled)
	require.Positive(t, o.StopIndex)
	require.Less(t, o.StopIndex, 200)
	_, tp, stopped := tally(set, o, 4)
	require.Equal(t, "canceled", stopped.Reason)
	require.Equal(t, o.StopIndex, tp.Judgments, "every item before the stop finished")
	require.Less(t, o.Wall, time.Second, "cancel ends the run promptly")
}

func TestPercentile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	require.Equal(t, 5.0, Percentile(v, 0.50))
	require.Equal(t, 10.0, Percentile(v, 0.95))
	require.Equal(t, 10.0, Percentile(v, 0.99))
	require.Equal(t, 1.0, Percentile(v, 0))
	require.Equal(t, 0.0, Percentile(nil, 0.5))
	l := LatencyOf([]float64{3, 1, 2})
	require.Equal(t, 3, l.N)
	require.Equal(t, 2.0, l.P50)
	require.Equal(t, 2.0, l.Mean)
}
