package tokens

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Definitions name the rules a block of figures follows; a comparison
// compares only figures of one definition.
const (
	// DefinitionsServe: `vllm bench serve`'s calculate_metrics
	// (vllm/benchmarks/serve.py) over its request records
	// (vllm/benchmarks/lib/endpoint_request_func.py).
	DefinitionsServe = "vllm bench serve calculate_metrics"
	// DefinitionsReceipt: the published token-throughput receipts'
	// (output tokens ÷ end-to-end batch time; batch time ÷ n).
	DefinitionsReceipt = "published token-throughput receipt"
)

// ITLPerChunk says what one ITL sample is: the gap before one streamed
// chunk, which carries several tokens with --stream-interval or
// speculative decoding (as vLLM's benchmark records it).
const ITLPerChunk = "chunk"

// Serve is a point's figures as `vllm bench serve` computes, prints and
// saves them (--save-result field names). Over every repeat: the requests
// of all repeats are pooled, Duration is the repeats' summed wall time.
type Serve struct {
	Definitions string `json:"definitions"`
	// ITLPer is ITLPerChunk.
	ITLPer string `json:"itl_per"`
	// OutputTokensFrom says where output lengths come from: "usage"
	// (completion_tokens of the usage chunk), as vLLM reads them.
	OutputTokensFrom string  `json:"output_tokens_from"`
	Duration         float64 `json:"duration"`
	// Completed counts requests that got a chunk with choices and no
	// transport or HTTP error (a short stream, and one that then brought
	// an error object, are completed for vLLM); Failed the others.
	Completed         int `json:"completed"`
	Failed            int `json:"failed"`
	TotalInputTokens  int `json:"total_input_tokens"`
	TotalOutputTokens int `json:"total_output_tokens"`
	// RequestThroughput is Completed ÷ Duration; OutputThroughput Σ output
	// ÷ Duration; TotalTokenThroughput (Σ input + Σ output) ÷ Duration.
	RequestThroughput    float64 `json:"request_throughput"`
	OutputThroughput     float64 `json:"output_throughput"`
	TotalTokenThroughput float64 `json:"total_token_throughput"`
	// RequestGoodput is good completed requests ÷ Duration, a request
	// good when each SLO of GoodputSLOMs holds (value ≤ limit; TPOT 0 for
	// one token); nil without SLOs, as vLLM saves null.
	RequestGoodput *float64           `json:"request_goodput"`
	GoodputSLOMs   map[string]float64 `json:"goodput_slo_ms,omitempty"`
	// MaxOutputTokensPerS is the most chunks (vLLM counts a chunk as one
	// token here) in any 1-second bucket from the first send;
	// MaxConcurrentRequests the peak of overlapping [start, start +
	// latency) intervals. Over repeats, the largest of any repeat.
	MaxOutputTokensPerS   float64 `json:"max_output_tokens_per_s"`
	MaxConcurrentRequests int     `json:"max_concurrent_requests"`

	// mean, median, std (population) and p99 of TTFT, TPOT ((latency −
	// ttft) ÷ (n − 1), requests of n > 1), ITL (every chunk gap of every
	// request) and E2EL (latency), in ms; numpy's linear percentiles; 0
	// for an empty list, as vLLM's `xs or 0`.
	MeanTTFTMs   float64 `json:"mean_ttft_ms"`
	MedianTTFTMs float64 `json:"median_ttft_ms"`
	StdTTFTMs    float64 `json:"std_ttft_ms"`
	P99TTFTMs    float64 `json:"p99_ttft_ms"`
	MeanTPOTMs   float64 `json:"mean_tpot_ms"`
	MedianTPOTMs float64 `json:"median_tpot_ms"`
	StdTPOTMs    float64 `json:"std_tpot_ms"`
	P99TPOTMs    float64 `json:"p99_tpot_ms"`
	MeanITLMs    float64 `json:"mean_itl_ms"`
	MedianITLMs  float64 `json:"median_itl_ms"`
	StdITLMs     float64 `json:"std_itl_ms"`
	P99ITLMs     float64 `json:"p99_itl_ms"`
	MeanE2ELMs   float64 `json:"mean_e2el_ms"`
	MedianE2ELMs float64 `json:"median_e2el_ms"`
	StdE2ELMs    float64 `json:"std_e2el_ms"`
	P99E2ELMs    float64 `json:"p99_e2el_ms"`
	// Percentiles holds the asked percentiles other than 99 under vLLM's
	// keys ("p90_itl_ms", "p99.9_ttft_ms").
	Percentiles map[string]float64 `json:"percentiles,omitempty"`

	// absent are the statistics a --save-result file did not hold (vLLM
	// saves those of --percentile-metrics only): Stat reports them
	// missing, so they are never compared as 0.
	absent map[string]bool
}

// ServeMetrics are the four per-request figures vLLM summarises.
var ServeMetrics = []string{"ttft", "tpot", "itl", "e2el"}

// servedOK is vLLM's success: a chunk with choices arrived and nothing
// failed the transport. A count that differs from the ask (short, long,
// no usage) is still a completed request for vLLM, and so is one whose
// stream then brought an error object (`data: {"error": ...}`, then
// [DONE], as vLLM's server ends a stream that failed): vLLM's client
// skips a chunk with neither choices nor usage
// (async_request_openai_chat_completions, endpoint_request_func.py), so
// its latency ends at the last chunk with choices and its tokens are those
// counted before the error.
func servedOK(q Request) bool {
	if q.TTFTSeconds == nil {
		return false
	}
	switch q.ErrorClass {
	case "", ClassShort, "long", "no_usage", ClassStreamError:
		return true
	}
	return false
}

// ServeFigures computes the point's Serve block; nil without request
// samples.
func ServeFigures(p Point, runs []Run) *Serve {
	s := &Serve{Definitions: DefinitionsServe, ITLPer: ITLPerChunk, OutputTokensFrom: "usage"}
	samples := map[string][]float64{}
	var allTPOT, e2els, ttfts []float64
	seen := false
	for _, r := range runs {
		if len(r.Requests) == 0 {
			continue
		}
		seen = true
		s.Duration += r.WallSeconds
		for _, q := range r.Requests {
			if !servedOK(q) {
				s.Failed++
				continue
			}
			s.Completed++
			// vLLM's output_len: usage's completion_tokens; 0 is its
			// tokenizer's count of no text (the 1 it takes without a
			// tokenizer goes with saving no TTFT, TPOT or ITL).
			n := q.OutputTokens
			s.TotalOutputTokens += n
			s.TotalInputTokens += q.PromptTokens
			tpot := 0.0
			if n > 1 {
				tpot = (q.LatencySeconds - *q.TTFTSeconds) / float64(n-1)
				samples["tpot"] = append(samples["tpot"], tpot)
			}
			allTPOT = append(allTPOT, tpot)
			samples["itl"] = append(samples["itl"], q.ITLSeconds...)
			ttfts = append(ttfts, *q.TTFTSeconds)
			e2els = append(e2els, q.LatencySeconds)
		}
		tok, conc := peaks(r.Requests)
		s.MaxOutputTokensPerS = max(s.MaxOutputTokensPerS, tok)
		s.MaxConcurrentRequests = max(s.MaxConcurrentRequests, conc)
	}
	if !seen {
		return nil
	}
	samples["ttft"], samples["e2el"] = ttfts, e2els
	if s.Duration > 0 {
		s.RequestThroughput = float64(s.Completed) / s.Duration
		s.OutputThroughput = float64(s.TotalOutputTokens) / s.Duration
		s.TotalTokenThroughput = float64(s.TotalInputTokens+s.TotalOutputTokens) / s.Duration
	}
	if slo := p.goodputSLO(); len(slo) > 0 {
		s.GoodputSLOMs = slo
		good := countGood(slo, ttfts, allTPOT, e2els)
		g := 0.0
		if s.Duration > 0 {
			g = float64(good) / s.Duration
		}
		s.RequestGoodput = &g
	}
	s.setStats(samples, p.Percentiles())
	return s
}

// goodputSLO is the point's --goodput: ServeGoodput, else the targets of
// its SLO (TTFT, TPOT) read as vLLM's.
func (p Point) goodputSLO() map[string]float64 {
	if len(p.ServeGoodput) > 0 {
		return p.ServeGoodput
	}
	if p.SLO == nil || (p.SLO.TTFTMs <= 0 && p.SLO.TPOTMs <= 0) {
		return nil
	}
	m := map[string]float64{}
	if p.SLO.TTFTMs > 0 {
		m["ttft"] = p.SLO.TTFTMs
	}
	if p.SLO.TPOTMs > 0 {
		m["tpot"] = p.SLO.TPOTMs
	}
	return m
}

// countGood is vLLM's good_completed: every given SLO ≥ the request's value.
func countGood(slo map[string]float64, ttfts, tpots, e2els []float64) int {
	good := 0
	for i := range ttfts {
		ok := true
		for k, v := range map[string]float64{"ttft": ttfts[i], "tpot": tpots[i], "e2el": e2els[i]} {
			if lim, has := slo[k]; has && lim/1000 < v {
				ok = false
			}
		}
		if ok {
			good++
		}
	}
	return good
}

// peaks are one repeat's max_output_tokens_per_s (chunks per 1-second
// bucket from the earliest send; a chunk counts one token, as vLLM's
// token_times do) and max_concurrent_requests (sweep line over [start,
// start + latency), a departure before an arrival at the same instant).
func peaks(reqs []Request) (float64, int) {
	var ok []Request
	for _, q := range reqs {
		if servedOK(q) {
			ok = append(ok, q)
		}
	}
	if len(ok) == 0 {
		return 0, 0
	}
	minStart, maxEnd := math.Inf(1), math.Inf(-1)
	for _, q := range ok {
		minStart = min(minStart, q.StartSeconds)
		maxEnd = max(maxEnd, q.StartSeconds+q.LatencySeconds)
	}
	buckets := make([]float64, int(math.Ceil(maxEnd-minStart))+1)
	type event struct {
		t float64
		d int
	}
	var events []event
	for _, q := range ok {
		t := q.StartSeconds + *q.TTFTSeconds
		times := []float64{t}
		for _, g := range q.ITLSeconds {
			t += g
			times = append(times, t)
		}
		for _, tt := range times {
			if b := int(tt - minStart); b >= 0 && b < len(buckets) {
				buckets[b]++
			}
		}
		events = append(events, event{q.StartSeconds, 1}, event{q.StartSeconds + q.LatencySeconds, -1})
	}
	slices.SortFunc(events, func(a, b event) int {
		if a.t != b.t {
			if a.t < b.t {
				return -1
			}
			return 1
		}
		return a.d - b.d
	})
	cur, peak := 0, 0
	for _, e := range events {
		cur += e.d
		peak = max(peak, cur)
	}
	return slices.Max(buckets), peak
}

// setStats fills mean/median/std/p99 and the other asked percentiles.
func (s *Serve) setStats(samples map[string][]float64, percentiles []float64) {
	fields := map[string][4]*float64{
		"ttft": {&s.MeanTTFTMs, &s.MedianTTFTMs, &s.StdTTFTMs, &s.P99TTFTMs},
		"tpot": {&s.MeanTPOTMs, &s.MedianTPOTMs, &s.StdTPOTMs, &s.P99TPOTMs},
		"itl":  {&s.MeanITLMs, &s.MedianITLMs, &s.StdITLMs, &s.P99ITLMs},
		"e2el": {&s.MeanE2ELMs, &s.MedianE2ELMs, &s.StdE2ELMs, &s.P99E2ELMs},
	}
	for _, m := range ServeMetrics {
		xs := msSorted(samples[m])
		f := fields[m]
		*f[0], *f[1], *f[2], *f[3] = mean(xs), pct(xs, 50), std(xs), pct(xs, 99)
		for _, p := range percentiles {
			if p == 99 {
				continue
			}
			if s.Percentiles == nil {
				s.Percentiles = map[string]float64{}
			}
			s.Percentiles[PercentileKey(p, m)] = pct(xs, p)
		}
	}
}

// PercentileKey is vLLM's result key for percentile p of metric m:
// "p99_itl_ms", "p99.9_ttft_ms".
func PercentileKey(p float64, m string) string {
	w := strconv.FormatFloat(p, 'g', -1, 64) // Python's str(float) from 0 to 100
	return fmt.Sprintf("p%s_%s_ms", w, m)
}

// Stat is the figure named by a --save-result key (mean_itl_ms,
// p90_ttft_ms, ...); false when the block has no such figure.
func (s *Serve) Stat(key string) (float64, bool) {
	if s.absent[key] {
		return 0, false
	}
	for _, m := range ServeMetrics {
		for i, pre := range []string{"mean_", "median_", "std_", "p99_"} {
			if key == pre+m+"_ms" {
				return s.stat4(m)[i], true
			}
		}
	}
	v, ok := s.Percentiles[key]
	return v, ok
}

func (s *Serve) stat4(m string) [4]float64 {
	switch m {
	case "ttft":
		return [4]float64{s.MeanTTFTMs, s.MedianTTFTMs, s.StdTTFTMs, s.P99TTFTMs}
	case "tpot":
		return [4]float64{s.MeanTPOTMs, s.MedianTPOTMs, s.StdTPOTMs, s.P99TPOTMs}
	case "itl":
		return [4]float64{s.MeanITLMs, s.MedianITLMs, s.StdITLMs, s.P99ITLMs}
	}
	return [4]float64{s.MeanE2ELMs, s.MedianE2ELMs, s.StdE2ELMs, s.P99E2ELMs}
}

// msSorted is seconds as sorted milliseconds.
func msSorted(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x * 1000
	}
	slices.Sort(out)
	return out
}

// pct is np.percentile (linear), 0 for none.
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return Percentile(xs, p)
}

// mean is np.mean, 0 for none (vLLM's `xs or 0`).
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// std is np.std (population, ddof 0), 0 for none.
func std(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m, ss := mean(xs), 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)))
}
