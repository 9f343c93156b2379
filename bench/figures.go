package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"sort"

	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// Percentile is the nearest-rank percentile of sorted values: index
// ceil(q·n)−1, floored at 0 (typevet's rule). It is 0 for no values.
func Percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// LatencyOf summarises latencies in seconds.
func LatencyOf(secs []float64) receipts.Latency {
	s := append([]float64(nil), secs...)
	sort.Float64s(s)
	l := receipts.Latency{N: len(s)}
	if len(s) == 0 {
		return l
	}
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	l.Mean = sum / float64(len(s))
	l.P50, l.P95, l.P99 = Percentile(s, 0.50), Percentile(s, 0.95), Percentile(s, 0.99)
	return l
}

// tally turns an outcome into receipt items and throughput. Items keep every
// judgment that ran: kept ones, failed ones (Error set, no answers) and the
// ones that finished after a stop (Discarded), so nothing measured is lost;
// only kept ones count in the figures.
func tally(set fixtures.Set, o Outcome, concurrency int) ([]receipts.Item, receipts.Throughput, *receipts.Stopped) {
	var items []receipts.Item
	var lat []float64
	t := receipts.Throughput{Concurrency: concurrency, WallSeconds: o.Wall.Seconds()}
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
		t.Requests += len(r.Judgment.Answers)
		for _, a := range r.Judgment.Answers {
			t.PromptTokens += a.PromptTokens
		}
		switch {
		case o.StopIndex >= 0 && r.Index > o.StopIndex:
			it.Discarded = true
			t.Discarded++
		case r.Err != nil:
			it.Error = r.Err.Error()
			it.Answers = nil // failed closed: no partial verdicts
			t.Failed++
		default:
			t.Judgments++
			t.Images += len(c.Images)
			lat = append(lat, it.LatencySeconds)
		}
		items = append(items, it)
	}
	t.Latency = LatencyOf(lat)
	if w := t.WallSeconds; w > 0 {
		t.JudgmentsPerSecond = float64(t.Judgments) / w
		t.ImagesPerSecond = float64(t.Images) / w
	}
	return items, t, stoppedBlock(set, o, t.Discarded)
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
		s.Reason = "canceled"
	case isTimeout(o.StopErr):
		s.Reason = "timeout"
	default:
		s.Reason = "error"
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

// Merge pools several passes of one point into one receipt for reporting:
// judgments and wall time add up, latency percentiles come from every kept
// judgment, server counters and histogram counts add up and hit rates are
// recomputed from the sums. Items and answers are the last pass's.
func Merge(recs []*receipts.Receipt) *receipts.Receipt {
	if len(recs) == 0 {
		return nil
	}
	out := *recs[len(recs)-1]
	var lat []float64
	t := receipts.Throughput{Concurrency: out.Throughput.Concurrency}
	var srv *receipts.Server
	for _, r := range recs {
		rt := r.Throughput
		t.WallSeconds += rt.WallSeconds
		t.Judgments += rt.Judgments
		t.Images += rt.Images
		t.Requests += rt.Requests
		t.Failed += rt.Failed
		t.Discarded += rt.Discarded
		t.PromptTokens += rt.PromptTokens
		for _, it := range r.Items {
			if it.Error == "" && !it.Discarded {
				lat = append(lat, it.LatencySeconds)
			}
		}
		srv = mergeServer(srv, r.Server)
	}
	t.Latency = LatencyOf(lat)
	if t.WallSeconds > 0 {
		t.JudgmentsPerSecond = float64(t.Judgments) / t.WallSeconds
		t.ImagesPerSecond = float64(t.Images) / t.WallSeconds
	}
	out.Throughput = t
	out.Server = srv
	return &out
}

// mergeServer adds b's counters and histogram counts to a; a figure either
// side lacks, or a pass whose scrape was not ok, leaves the sum unknown.
func mergeServer(a, b *receipts.Server) *receipts.Server {
	if b == nil {
		return a
	}
	if a == nil {
		c := *b
		c.Counters = maps.Clone(b.Counters)
		c.Histograms = maps.Clone(b.Histograms)
		return &c
	}
	if b.Status != a.Status {
		a.Status = b.Status
	}
	for k, v := range a.Counters {
		if bv, ok := b.Counters[k]; ok {
			a.Counters[k] = v + bv
		} else {
			delete(a.Counters, k)
		}
	}
	for k, h := range a.Histograms {
		bh, ok := b.Histograms[k]
		if !ok || bh.Status != h.Status {
			delete(a.Histograms, k)
			continue
		}
		h.Count += bh.Count
		h.Sum += bh.Sum
		h.UpperBound, h.Interpolated = nil, nil // percentiles of a sum are not sums
		a.Histograms[k] = h
	}
	a.PrefixCacheHitRate = ratio(a.Counters, scrape.PrefixCacheHits, scrape.PrefixCacheQueries)
	a.MMCacheHitRate = ratio(a.Counters, scrape.MMCacheHits, scrape.MMCacheQueries)
	return a
}

func ratio(c map[string]float64, num, den string) *float64 {
	n, ok1 := c[num]
	d, ok2 := c[den]
	if !ok1 || !ok2 || d <= 0 {
		return nil
	}
	r := n / d
	return &r
}
