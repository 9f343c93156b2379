package tally

import (
	"maps"

	"github.com/vetbench/vetbench/receipts"
)

// Merge pools several passes of one point (go test -count) into one receipt
// for reporting: counts and wall time add up, rates are sums over sums (not
// means of rates), latency percentiles come from every kept judgment, server
// counters and histogram counts add up and hit ratios are recomputed from
// the sums. Items, answers and everything else are the last pass's. The
// inputs are not changed; Merge of nothing is nil.
func Merge(recs []*receipts.Receipt) *receipts.Receipt {
	if len(recs) == 0 {
		return nil
	}
	out := *recs[len(recs)-1]
	t := Tally{Concurrency: out.Throughput.Concurrency, OpenLoop: out.Throughput.ClientQueue != nil}
	if slo := out.Throughput.SLO; slo != nil {
		t.SLOSeconds, t.GoodputTarget = slo.LatencySeconds, slo.Target
	}
	var srv *receipts.Server
	for _, r := range recs {
		t.AddPass(r.Throughput, r.Items)
		srv = mergeServer(srv, r.Server)
	}
	out.Throughput = t.Close()
	if srv != nil {
		// Sums of passes that each passed the check cannot exceed; should
		// they, the ratio is unknown, not clipped.
		_ = HitRates(srv)
	}
	out.Server = srv
	if len(recs) > 1 {
		// Each pass's endpoints add up to that pass; the last pass's would
		// not add up to the pooled totals, and which judgments an
		// endpoint took differs from pass to pass.
		out.Endpoints = nil
	}
	return &out
}

// mergeServer adds b's counters and histogram counts to a; a figure either
// side lacks, or one whose status differs, leaves the sum unknown.
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
	return a
}
