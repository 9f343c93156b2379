package decode_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// scripted is a clock the test server sets: before each chunk it moves
// the time to the chunk's scheduled arrival, writes the chunk and waits
// until the client has read the clock once more (its timestamp of that
// chunk). With one stream at a time every timestamp the client takes is
// the script's, on any machine under any load.
type scripted struct {
	mu    sync.Mutex
	t     time.Time
	reads int
}

func (c *scripted) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.t
}

func (c *scripted) peek() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// set moves the clock and returns the reads so far.
func (c *scripted) set(t time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
	return c.reads
}

// waitRead waits until the clock was read after the mark.
func (c *scripted) waitRead(t *testing.T, mark int) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		n := c.reads
		c.mu.Unlock()
		if n > mark {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("the client never read the clock after a chunk")
			return
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// chunkPlan is one chunk with choices: when it arrives after the
// previous one (the first: after the send), which delta field carries
// its text, and how many tokens it carries.
type chunkPlan struct {
	after  time.Duration
	field  string // "content", "reasoning", "reasoning_content"; "" = the role chunk
	tokens int
}

// reqPlan is one request's stream; usageAfter is the usage-only chunk's
// delay after the last chunk with choices.
type reqPlan struct {
	prompt     int
	chunks     []chunkPlan
	usageAfter time.Duration
}

// planServer serves plans in order, one request each, as vLLM's chat
// serving streams them (continuous usage on every chunk, the usage-only
// chunk, [DONE]).
func planServer(t *testing.T, clock *scripted, plans []reqPlan) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	next := 0
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model","root":"org/m","max_model_len":4096}]}`)
	})
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"version":"0.26.0"}`) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		p := plans[next%len(plans)]
		next++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		at := clock.peek()
		send := func(data string) {
			mark := clock.set(at)
			fmt.Fprintf(w, "data: %s\n\n", data)
			fl.Flush()
			clock.waitRead(t, mark)
		}
		n := 0
		for i, c := range p.chunks {
			at = at.Add(c.after)
			n += c.tokens
			delta := `{"role":"assistant","content":""}`
			if c.field != "" {
				delta = fmt.Sprintf(`{%q:%q}`, c.field, strings.Repeat("x", c.tokens))
			}
			fin := "null"
			if i == len(p.chunks)-1 {
				fin = `"length"`
			}
			send(fmt.Sprintf(`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":%s,"finish_reason":%s}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
				delta, fin, p.prompt, n, p.prompt+n))
		}
		at = at.Add(p.usageAfter)
		send(fmt.Sprintf(`{"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, p.prompt, n, p.prompt+n))
		send("[DONE]")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// stallPlan is the experiment: TTFT, then 10 ms gaps with an
// 80 ms stall every 16th gap (plus a little per-request jitter so no two
// requests are alike), one token per chunk, the role chunk first.
func stallPlan(k, n int) reqPlan {
	p := reqPlan{prompt: 40 + k, usageAfter: time.Millisecond}
	p.chunks = append(p.chunks, chunkPlan{after: time.Duration(50+3*k) * time.Millisecond}, chunkPlan{field: "content", tokens: 1})
	for g := 1; g < n; g++ {
		d := 10*time.Millisecond + time.Duration(k)*50*time.Microsecond
		if g%16 == 0 {
			d = 80 * time.Millisecond
		}
		p.chunks = append(p.chunks, chunkPlan{after: d, field: "content", tokens: 1})
	}
	return p
}

// vllmReference computes, from the plans alone and sequential sends
// (each request sent when the previous stream ended, at the clock's
// reading then), what vLLM's benchmark client and calculate_metrics
// report. It is written from serve.py and endpoint_request_func.py, not
// from receipts/tokens: its own percentile, its own clock walk.
type vllmReference struct {
	ttft, tpot, itl, e2el []float64 // seconds
	output, input         int
}

func newReference(plans []reqPlan) vllmReference {
	var ref vllmReference
	for _, p := range plans {
		var at time.Duration
		var stamps []time.Duration
		n := 0
		for _, c := range p.chunks {
			at += c.after
			n += c.tokens
			stamps = append(stamps, at)
		}
		ttft := stamps[0].Seconds()
		ref.ttft = append(ref.ttft, ttft)
		for i := 1; i < len(stamps); i++ {
			ref.itl = append(ref.itl, (stamps[i] - stamps[i-1]).Seconds())
		}
		latency := stamps[len(stamps)-1].Seconds()
		ref.e2el = append(ref.e2el, latency)
		if n > 1 {
			ref.tpot = append(ref.tpot, (latency-ttft)/float64(n-1))
		}
		ref.output += n
		ref.input += p.prompt
	}
	return ref
}

// npPercentile is numpy's default percentile: the virtual index (n−1)·q
// between its two neighbours, linearly.
func npPercentile(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	idx := (float64(len(s)) - 1) * q / 100
	whole, frac := math.Modf(idx)
	i := int(whole)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i]*(1-frac) + s[i+1]*frac
}

func serveRunner(t *testing.T, srv *httptest.Server, clock *scripted) *decode.Runner {
	t.Helper()
	ep := bench.Endpoint{BaseURL: srv.URL, Target: receipts.Target{Kind: receipts.TargetLive}}
	r, err := decode.NewRunner(t.Context(), ep, decode.WithClock(clock.Now))
	require.NoError(t, err)
	return r
}

func near(t *testing.T, want, got float64, what string) {
	t.Helper()
	require.InDelta(t, want, got, 1e-6*math.Max(1, math.Abs(want)), what)
}

// TestServeFiguresMatchVLLMOnAStallingStream is the experiment
// through the real client: the receipt's vllm bench serve block equals
// what vLLM's rules give for the same streams, and the receipt's own
// time between tokens (one average per request) hides the stall tail.
func TestServeFiguresMatchVLLMOnAStallingStream(t *testing.T) {
	t.Parallel()
	const n, prompts = 128, 8
	var plans []reqPlan
	for k := range prompts {
		plans = append(plans, stallPlan(k, n))
	}
	clock := &scripted{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	srv := planServer(t, clock, plans)
	p := decode.Point{Workload: tokens.WorkloadText, Concurrency: 1, NumPrompts: prompts, OutputTokens: n, Repeats: 1,
		MetricPercentiles: []float64{50, 90, 99}, ServeGoodput: map[string]float64{"ttft": 60, "tpot": 14}}
	rec, err := serveRunner(t, srv, clock).Measure(t.Context(), p)
	require.NoError(t, err)
	v := rec.Summary.Serve
	require.NotNil(t, v)
	ref := newReference(plans)

	for _, c := range []struct {
		name string
		xs   []float64
		mean float64
		med  float64
		p99  float64
		p90  string
	}{
		{"ttft", ref.ttft, v.MeanTTFTMs, v.MedianTTFTMs, v.P99TTFTMs, "p90_ttft_ms"},
		{"tpot", ref.tpot, v.MeanTPOTMs, v.MedianTPOTMs, v.P99TPOTMs, "p90_tpot_ms"},
		{"itl", ref.itl, v.MeanITLMs, v.MedianITLMs, v.P99ITLMs, "p90_itl_ms"},
		{"e2el", ref.e2el, v.MeanE2ELMs, v.MedianE2ELMs, v.P99E2ELMs, "p90_e2el_ms"},
	} {
		sum := 0.0
		for _, x := range c.xs {
			sum += x
		}
		near(t, 1000*sum/float64(len(c.xs)), c.mean, "mean "+c.name)
		near(t, 1000*npPercentile(c.xs, 50), c.med, "median "+c.name)
		near(t, 1000*npPercentile(c.xs, 99), c.p99, "p99 "+c.name)
		near(t, 1000*npPercentile(c.xs, 90), v.Percentiles[c.p90], c.p90)
	}
	require.Len(t, ref.itl, prompts*n, "one gap per chunk after the first: the role chunk's gap to token 1 included")
	// The figures: vLLM's median ITL ≈ 10 ms, p99 at the stall.
	require.InDelta(t, 10.2, v.MedianITLMs, 0.3)
	require.InDelta(t, 80, v.P99ITLMs, 1)
	// Ours, one average gap per request, reads the tail at ~14 ms.
	require.Less(t, rec.Summary.TimeBetweenTokensMs.P99, 15.0)
	t.Logf("vllm bench serve: median ITL %.2f ms, p99 ITL %.2f ms, median TPOT %.2f ms; receipt's own time between tokens p99 %.2f ms, batch ms per token %.2f",
		v.MedianITLMs, v.P99ITLMs, v.MedianTPOTMs, rec.Summary.TimeBetweenTokensMs.P99, rec.Summary.MeanBatchMsPerToken)

	// Throughputs over the run's duration, as calculate_metrics.
	dur := rec.Runs[0].WallSeconds
	near(t, dur, v.Duration, "duration")
	near(t, float64(prompts)/dur, v.RequestThroughput, "request_throughput")
	near(t, float64(ref.output)/dur, v.OutputThroughput, "output_throughput")
	near(t, float64(ref.input+ref.output)/dur, v.TotalTokenThroughput, "total_token_throughput")
	require.Equal(t, 1, v.MaxConcurrentRequests, "one slot")
	// Goodput: TTFT ≤ 60 ms holds for k ≤ 3, TPOT ≤ 14 ms for all.
	good := 0
	for i := range ref.ttft {
		if ref.ttft[i]*1000 <= 60 && ref.tpot[i]*1000 <= 14 {
			good++
		}
	}
	require.Equal(t, 4, good)
	near(t, float64(good)/dur, *v.RequestGoodput, "request_goodput")
	require.Equal(t, tokens.ITLPerChunk, v.ITLPer)
}

// TestMultiTokenAndReasoningChunks: speculative decoding or
// --stream-interval packs several tokens per chunk, and a reasoning
// model streams in delta.reasoning (reasoning_content before). Tokens are
// counted from usage, ITL is one gap per chunk (as vLLM records it).
func TestMultiTokenAndReasoningChunks(t *testing.T) {
	t.Parallel()
	plan := func(field string) reqPlan {
		p := reqPlan{prompt: 30, usageAfter: time.Millisecond}
		p.chunks = append(p.chunks, chunkPlan{after: 40 * time.Millisecond})
		for i := range 8 { // 8 chunks of 4 tokens: 32 tokens
			f := field
			if i >= 6 {
				f = "content" // the answer after the thinking
			}
			p.chunks = append(p.chunks, chunkPlan{after: 20 * time.Millisecond, field: f, tokens: 4})
		}
		return p
	}
	for _, field := range []string{"content", "reasoning", "reasoning_content"} {
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			plans := []reqPlan{plan(field), plan(field)}
			clock := &scripted{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
			srv := planServer(t, clock, plans)
			rec, err := serveRunner(t, srv, clock).Measure(t.Context(), decode.Point{Workload: tokens.WorkloadText, Concurrency: 1, OutputTokens: 32, Repeats: 2})
			require.NoError(t, err, "32 tokens in 8 chunks verify: counted from usage")
			require.Equal(t, 64, rec.Summary.TotalVerifiedOutputTokens)
			v := rec.Summary.Serve
			require.Equal(t, 64, v.TotalOutputTokens)
			ref := newReference(plans)
			require.Len(t, ref.itl, 16, "8 gaps per request: one per chunk, not per token")
			near(t, 1000*npPercentile(ref.itl, 50), v.MedianITLMs, "median itl")
			near(t, 1000*npPercentile(ref.tpot, 50), v.MedianTPOTMs, "median tpot: (latency − ttft) ÷ 31")
			near(t, 20, v.MedianITLMs, "a chunk every 20 ms")
			near(t, 20*8/31.0, v.MedianTPOTMs, "TPOT per token is a quarter of the chunk gap")
			require.Equal(t, tokens.ITLPerChunk, v.ITLPer)
		})
	}
}

// A positive control of the reference: it is not the receipt's code, and
// a receipt edited to another ITL is refused by validation.
func TestServeBlockRefusesAnEditedFigure(t *testing.T) {
	t.Parallel()
	clock := &scripted{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	srv := planServer(t, clock, []reqPlan{stallPlan(0, 32)})
	rec, err := serveRunner(t, srv, clock).Measure(t.Context(), decode.Point{Workload: tokens.WorkloadText, Concurrency: 1, OutputTokens: 32, Repeats: 1})
	require.NoError(t, err)
	data, err := tokens.Marshal(rec)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	m["summary"].(map[string]any)["vllm_bench_serve"].(map[string]any)["p99_itl_ms"] = 12.0
	edited, _ := json.Marshal(m)
	_, err = tokens.Decode(edited, "edited.json")
	require.ErrorContains(t, err, "summary.vllm_bench_serve.p99_itl_ms")
}
