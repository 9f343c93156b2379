package scrape

import (
	"math"

	"github.com/vetbench/vetbench/receipts"
)

// bucket is one cumulative histogram bucket (upper edge, count ≤ edge).
type bucket struct {
	upper, cum float64
}

// rankEpsilon absorbs float error in q·count: 0.95·180 is
// 171.00000000000003 in float64, and must still land on rank 171.
const rankEpsilon = 1e-9

// upperBoundQuantile is typevet's estimate: the upper edge of the first bucket
// whose cumulative count reaches ceil(q·count). Nil when count is 0 or the rank
// lies in the +Inf bucket (there is no edge to report). Buckets must be sorted
// by upper edge.
func upperBoundQuantile(bs []bucket, count, q float64) *float64 {
	if count <= 0 {
		return nil
	}
	rank := max(math.Ceil(q*count-rankEpsilon), 1)
	for _, b := range bs {
		if b.cum >= rank {
			if math.IsInf(b.upper, 1) {
				return nil
			}
			return ptr(b.upper)
		}
	}
	return nil
}

// interpolatedQuantile is Prometheus's histogram_quantile: rank q·count,
// linear within the bucket that reaches it, the first bucket's lower edge
// taken as 0. Nil when count is 0 or the rank lies in +Inf (Prometheus would
// answer the last finite edge there; we would rather say nothing).
func interpolatedQuantile(bs []bucket, count, q float64) *float64 {
	if count <= 0 {
		return nil
	}
	rank := q * count
	tol := rankEpsilon * max(1, count)
	lower, prevCum := 0.0, 0.0
	for i, b := range bs {
		if b.cum >= rank-tol {
			if math.IsInf(b.upper, 1) {
				return nil
			}
			if i == 0 && b.upper <= 0 {
				return ptr(b.upper)
			}
			frac := (rank - prevCum) / (b.cum - prevCum)
			frac = min(max(frac, 0), 1)
			return ptr(lower + (b.upper-lower)*frac)
		}
		lower, prevCum = b.upper, b.cum
	}
	return nil
}

func quantiles(bs []bucket, count float64, est func([]bucket, float64, float64) *float64) *receipts.Quantiles {
	if count <= 0 {
		return nil
	}
	return &receipts.Quantiles{P50: est(bs, count, 0.50), P95: est(bs, count, 0.95), P99: est(bs, count, 0.99)}
}

func ptr(v float64) *float64 { return &v }
