package bench

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/tally"
)

// figures turns an outcome into receipt items and throughput. Items keep
// every judgment that ran: kept ones, failed ones (Error set, no answers) and
// the ones that finished after a stop (Discarded), so nothing measured is
// lost; only kept ones count in the figures (receipts/tally).
func figures(set fixtures.Set, o Outcome, concurrency int) ([]receipts.Item, receipts.Throughput, *receipts.Stopped) {
	var items []receipts.Item
	t := tally.Tally{Concurrency: concurrency, WallSeconds: o.Wall.Seconds()}
	for _, r := range o.Results {
		c := set.Cases[r.Index]
		it := receipts.Item{
			ID:             c.ID,
			Group:          c.Group,
			Gold:           c.Gold,
			Answers:        r.Judgment.Answers,
			LatencySeconds: r.Latency().Seconds(),
			InputTokens:    r.Judgment.PromptTokens,
		}
		// Every 200 answer reached the server, whatever became of its judgment.
		j := tally.Judgment{LatencySeconds: it.LatencySeconds, Images: len(c.Images), Requests: len(r.Judgment.Answers)}
		for _, a := range r.Judgment.Answers {
			j.PromptTokens += a.PromptTokens
		}
		switch {
		case o.StopIndex >= 0 && r.Index > o.StopIndex:
			it.Discarded, j.Discarded = true, true
		case r.Err != nil:
			it.Error = r.Err.Error()
			it.Answers = nil // failed closed: no partial verdicts
			j.Failed = true
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
	switch {
	case o.Canceled:
		s.Reason = receipts.StopCanceled
	case isTimeout(o.StopErr):
		s.Reason = receipts.StopTimeout
	default:
		s.Reason = receipts.StopError
	}
	if o.StopErr != nil {
		s.Message = o.StopErr.Error()
		s.ErrorClass = errorClass(o.StopErr)
	} else {
		s.Message = "run stopped before this item started"
	}
	return s
}

// isTimeout tells a per-request timeout (a failure) from other errors.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// errorClass names the most specific known cause, for the stopped block.
func errorClass(err error) string {
	var se *judgments.StatusError
	var ce *judgments.CandidateError
	switch {
	case errors.As(err, &ce):
		for _, s := range []struct {
			err  error
			name string
		}{
			{judgments.ErrMissingCandidate, "ErrMissingCandidate"},
			{judgments.ErrDuplicateCandidate, "ErrDuplicateCandidate"},
			{judgments.ErrNonFinite, "ErrNonFinite"},
			{judgments.ErrUnexpectedToken, "ErrUnexpectedToken"},
			{judgments.ErrNoLogprobs, "ErrNoLogprobs"},
		} {
			if errors.Is(err, s.err) {
				return "CandidateError(" + s.name + ")"
			}
		}
		return "CandidateError"
	case errors.As(err, &se):
		return fmt.Sprintf("StatusError(%d)", se.Code)
	case isTimeout(err):
		return "Timeout"
	case errors.Is(err, context.Canceled):
		return "Canceled"
	}
	return fmt.Sprintf("%T", errors.Unwrap(err))
}
