package bench

import (
	"errors"

	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/judgments/errclass"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/tally"
)

// figures turns an outcome into receipt items and throughput. Items keep
// every judgment that ran: kept ones, failed ones (Error and ErrorClass set,
// no answers) and the ones that finished after a stop (Discarded, with their
// error when they failed), so nothing measured is lost; only kept ones count
// in the figures (receipts/tally).
func figures(set fixtures.Set, o Outcome, concurrency int) ([]receipts.Item, receipts.Throughput, *receipts.Stopped) {
	return figuresWith(set, o, tally.Tally{Concurrency: concurrency})
}

// figuresWith is figures with a tally set up for the point (open loop, SLO);
// its WallSeconds is the outcome's.
func figuresWith(set fixtures.Set, o Outcome, t tally.Tally) ([]receipts.Item, receipts.Throughput, *receipts.Stopped) {
	var items []receipts.Item
	t.WallSeconds = o.Wall.Seconds()
	for _, r := range o.Results {
		c := set.Cases[r.Index]
		it := receipts.Item{
			ID:                c.ID,
			Group:             c.Group,
			Gold:              c.Gold,
			Answers:           r.Judgment.Answers,
			LatencySeconds:    r.Latency().Seconds(),
			QueueSeconds:      r.Queued().Seconds(),
			ArrivalLagSeconds: r.Lag().Seconds(),
			InputTokens:       r.Judgment.PromptTokens,
		}
		// Every 200 answer reached the server, whatever became of its judgment.
		j := tally.Judgment{LatencySeconds: it.LatencySeconds, QueueSeconds: it.QueueSeconds, LagSeconds: it.ArrivalLagSeconds, Images: len(c.Images), Requests: len(r.Judgment.Answers)}
		for _, a := range r.Judgment.Answers {
			j.PromptTokens += a.PromptTokens
		}
		// A failed item keeps its error, also when it is discarded.
		if r.Err != nil {
			it.Error, it.ErrorClass = r.Err.Error(), errclass.Of(r.Err)
			it.Answers = nil // failed closed: no partial verdicts
			j.Failed, j.ErrorClass = true, it.ErrorClass
		}
		if o.StopIndex >= 0 && r.Index > o.StopIndex {
			it.Discarded, j.Discarded = true, true
		}
		t.Add(j)
		items = append(items, it)
	}
	tp := t.Close()
	return items, tp, stoppedBlock(set, o, tp.Discarded)
}

func stoppedBlock(set fixtures.Set, o Outcome, discarded int) *receipts.Stopped {
	if o.StopIndex < 0 {
		return nil
	}
	s := &receipts.Stopped{Index: o.StopIndex, Item: set.Cases[o.StopIndex].ID, Discarded: discarded}
	var je *judgments.JudgeError
	if errors.As(o.StopErr, &je) {
		s.Question = je.Question
	}
	s.Reason = stopReason(o.Canceled, o.StopErr)
	if o.StopErr != nil {
		s.Message = o.StopErr.Error()
		s.ErrorClass = errclass.Of(o.StopErr)
	} else {
		s.Message = "run stopped before this item started"
	}
	return s
}

// stopReason is why a run stopped: the run's cancel, a per-request
// timeout (a failure of the server, not a cancel), or another error.
func stopReason(canceled bool, err error) receipts.StopReason {
	switch {
	case canceled:
		return receipts.StopCanceled
	case errclass.Of(err) == errclass.Timeout:
		return receipts.StopTimeout
	}
	return receipts.StopError
}
