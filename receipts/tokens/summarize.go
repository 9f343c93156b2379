package tokens

import (
	"math"
	"slices"

	"github.com/vetbench/vetbench/receipts/slo"
)

// ClassShort is the error class of a request that produced fewer tokens
// than asked (stream.ErrorClass names it the same).
const ClassShort = "short"

// ClassStreamError is a request whose stream brought an error object
// after its 200 header (stream.ServerError).
const ClassStreamError = "stream_error"

// NewRun computes a run's figures from its requests: generated tokens
// (the server's count, every request), verified tokens (requests without
// error that produced exactly p.OutputTokens), failed and short counts,
// output tok/s over wall seconds. A request without an error whose count
// differs from the ask is counted short all the same: the receipt never
// passes a count it did not check.
func NewRun(p Point, wallSeconds float64, requests []Request) Run {
	r := Run{WallSeconds: wallSeconds, Requests: requests}
	for _, q := range requests {
		r.GeneratedTokens += q.OutputTokens
		switch {
		case q.ErrorClass == ClassShort || (q.Error == "" && q.OutputTokens < p.OutputTokens):
			r.Short++
		case q.Error != "" || q.OutputTokens != p.OutputTokens:
			r.Failed++
		default:
			r.VerifiedTokens += q.OutputTokens
		}
	}
	if wallSeconds > 0 {
		r.OutputTokS = float64(r.GeneratedTokens) / wallSeconds
	}
	return r
}

// Summarize computes the point's figures from its runs. It is the one
// place they are computed; Validate recomputes them to catch an edited
// receipt.
func Summarize(p Point, runs []Run) Summary {
	var s Summary
	gen, wall := 0, 0.0
	var first, tbt, e2e, rate []float64
	samples := false
	var good Goodput
	for _, r := range runs {
		gen += r.GeneratedTokens
		wall += r.WallSeconds
		s.TotalVerifiedOutputTokens += r.VerifiedTokens
		s.Failed += r.Failed
		s.Short += r.Short
		if r.GPUMemoryMiBAfter != nil && (s.PeakGPUMemoryMiB == nil || *r.GPUMemoryMiBAfter > *s.PeakGPUMemoryMiB) {
			s.PeakGPUMemoryMiB = ptr(*r.GPUMemoryMiBAfter)
		}
		if len(r.Requests) == 0 {
			s.Requests += p.Requests()
			continue
		}
		samples = true
		s.Requests += len(r.Requests)
		for _, q := range r.Requests {
			good.Of++
			if q.Error != "" {
				continue
			}
			if p.SLO != nil && q.OutputTokens == p.OutputTokens && p.SLO.meets(q) {
				good.Within++
			}
			if q.FirstTextSeconds != nil {
				first = append(first, *q.FirstTextSeconds*1000)
			}
			if q.TimeBetweenTokensSeconds != nil {
				tbt = append(tbt, *q.TimeBetweenTokensSeconds*1000)
			}
			e2e = append(e2e, q.E2ESeconds*1000)
			if q.E2ESeconds > 0 {
				rate = append(rate, float64(q.OutputTokens)/q.E2ESeconds)
			}
		}
	}
	if wall > 0 {
		s.AggregateOutputTokS = float64(gen) / wall
	}
	if p.Concurrency > 0 {
		s.PerRequestOutputTokS = s.AggregateOutputTokS / float64(p.Concurrency)
	}
	if len(runs) > 0 {
		s.MeanCompletionSeconds = wall / float64(len(runs))
	}
	if p.OutputTokens > 0 && p.NumPrompts == 0 {
		s.MeanBatchMsPerToken = s.MeanCompletionSeconds / float64(p.OutputTokens) * 1000
	}
	if samples {
		s.FirstTextMs, s.TimeBetweenTokensMs, s.E2EMs, s.RequestOutputTokS = dist(first), dist(tbt), dist(e2e), dist(rate)
		s.Goodput = p.SLO.goodput(good, wall)
		s.Serve = ServeFigures(p, runs)
	}
	return s
}

// goodput finishes the share-of-requests goodput; nil without an SLO.
func (s *SLO) goodput(good Goodput, wall float64) *Goodput {
	if s == nil {
		return nil
	}
	if good.Of > 0 {
		good.Share = float64(good.Within) / float64(good.Of)
	}
	if wall > 0 {
		good.PerSecond = float64(good.Within) / wall
	}
	if s.Target > 0 {
		met := slo.Met(good.Share, s.Target, good.Of)
		good.Met = &met
	}
	return &good
}

// meets says whether a request that produced its tokens met every target:
// TTFT to the first text, and TPOT as (e2e − first text) ÷ (n − 1) (a
// single-token request has none and meets it). A target needs its
// measurement: a request without a first text never meets one.
func (s SLO) meets(q Request) bool {
	if s.TTFTMs > 0 && (q.FirstTextSeconds == nil || *q.FirstTextSeconds*1000 > s.TTFTMs) {
		return false
	}
	if s.TPOTMs > 0 && q.OutputTokens > 1 {
		if q.FirstTextSeconds == nil || (q.E2ESeconds-*q.FirstTextSeconds)/float64(q.OutputTokens-1)*1000 > s.TPOTMs {
			return false
		}
	}
	return true
}

// dist summarises samples; nil when there are none.
func dist(xs []float64) *Dist {
	if len(xs) == 0 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return &Dist{
		N: len(s), Mean: sum / float64(len(s)),
		P50: Percentile(s, 50), P90: Percentile(s, 90), P99: Percentile(s, 99),
		Max: s[len(s)-1],
	}
}

// Percentile is numpy's default (linear) percentile of sorted samples.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(pos-float64(lo))
}

func ptr[T any](v T) *T { return &v }
