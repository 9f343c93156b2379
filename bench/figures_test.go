package bench

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// A judgment that failed keeps its error and its class in the receipt,
// also when it finished after the stop and is discarded; it never keeps a
// partial answer. The stopped block names the class, not a Go type.
func TestFiguresKeepErrors(t *testing.T) {
	set := fakeSet(5)
	t0 := time.Unix(0, 0)
	ok := func(i int) Result {
		a := judgments.Answer{Question: "q", Label: "true", Value: 1, Labels: []string{"true", "false"}, Probabilities: map[string]float64{"true": 1, "false": 0}}
		return Result{Index: i, Judgment: judgments.Judgment{Answers: []judgments.Answer{a}, Requests: 1}, Start: t0, End: t0.Add(time.Second)}
	}
	failed := func(i int, err error) Result {
		r := ok(i) // a partial answer from an earlier question
		r.Err = &judgments.JudgeError{Item: set.Cases[i].ID, Question: "q", Err: err}
		return r
	}
	reset := fmt.Errorf("/v1/chat/completions: %w", syscall.ECONNRESET)
	o := Outcome{
		Results: []Result{ok(0), failed(1, &judgments.StatusError{Code: 500}), ok(2), failed(3, reset), ok(4)},
		Wall:    time.Second, StopIndex: 1,
	}
	o.StopErr = o.Results[1].Err
	items, tp, stopped := figures(set, o, 2)

	require.Equal(t, "http_500", items[1].ErrorClass)
	require.Empty(t, items[1].Answers)
	require.False(t, items[1].Discarded)
	require.True(t, items[3].Discarded)
	require.Equal(t, "connection_reset", items[3].ErrorClass, "a discarded failure keeps its error")
	require.Contains(t, items[3].Error, "connection reset by peer")
	require.Empty(t, items[3].Answers, "and no partial answer")
	require.True(t, items[2].Discarded)
	require.Empty(t, items[2].Error)
	require.NotEmpty(t, items[2].Answers, "a discarded success keeps its answers (counted nowhere)")

	require.Equal(t, 1, tp.Judgments)
	require.Equal(t, 1, tp.Failed)
	require.Equal(t, 3, tp.Discarded)
	require.Equal(t, map[string]int{"http_500": 1}, tp.FailedByClass)
	require.Equal(t, &receipts.Stopped{Index: 1, Item: set.Cases[1].ID, Question: "q", Reason: receipts.StopError,
		ErrorClass: "http_500", Message: o.StopErr.Error(), Discarded: 3}, stopped)

	rec := &receipts.Receipt{Items: items, Throughput: tp, Stopped: stopped}
	for _, it := range rec.Items {
		if it.Error != "" {
			require.NotEmpty(t, it.ErrorClass)
			require.NotContains(t, it.ErrorClass, "*", "a stable name, not a Go type")
		}
	}
}
