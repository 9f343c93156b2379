package stub

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkHTTPvsSim holds the twin served over real loopback HTTP (the
// client in this process, as a benchmark run's) against its own
// simulation (the same engine core on a virtual clock) on the
// token-throughput method: c unique short text prompts at once, 128
// ignore-EOS tokens each, a warm-up batch, then 3 timed batches. The
// simulation runs the same workload: prompts of the HTTP prompts' length
// (through the chat template, as the twin tokenizes them), each sent when
// the HTTP client sent its twin (a client's c goroutines do not start in
// the same instant), TTFT counted from each request's own send as vllm
// bench serve counts it. Network off in both (the simulation has none).
// It reports HTTP/simulation ratios of aggregate tok/s (tokps-ratio) and
// mean TTFT (ttft-ratio), the engine steps that missed their model-clock
// deadline (missed-steps) and the streamed writes that ran late
// (late-deliveries), the twin's own first-token delay over the TTFT it
// models (first-delay-share, what a receipt's warning reads), and that
// modelled TTFT over the simulation's (model-ttft-ratio: how far the
// twin's schedule itself drifted, before delivery):
// a measurement of how well modelled
// time survives a busy machine, so it is opt-in (make calibrate), never
// part of make test. With -benchtime Nx each figure is the mean of N runs,
// each against the simulation of its own sends.
func BenchmarkHTTPvsSim(b *testing.B) {
	tr := TokensRun{PromptTokens: 32, Output: 128, Repeats: 3}
	for _, pc := range httpPoints() {
		p := pc.p
		st := tr
		st.PromptTokens = httpPromptTokens(b, p, tr)
		for _, scale := range []float64{1, 10} {
			b.Run(fmt.Sprintf("%s/c=%d/scale=%g", pc.name, pc.c, scale), func(b *testing.B) {
				var tokps, ttft, wire, send, missed, late, cpu, cpuWall, firstShare, modelTTFT float64
				n := 0
				for b.Loop() {
					got := httpTokens(b, Config{Profile: p, TimeScale: scale}, tr, pc.c)
					sim := simulateTokens(p, st, "text", pc.c, got.sends)
					onWire := simulateTokens(p, st, "text", pc.c, got.wrote)
					b.Logf("sim %.1f tok/s TTFT %.1f ms; HTTP %.1f tok/s TTFT %.1f ms (model time), %.1f ms from the wire (sim %.1f); sends spread %.1f ms",
						sim.Aggregate, sim.TTFT*1e3, got.Aggregate, got.TTFT*1e3, got.wireTTFT*1e3, onWire.TTFT*1e3, got.spread*1e3)
					tokps += got.Aggregate / sim.Aggregate
					ttft += got.TTFT / sim.TTFT
					wire += got.wireTTFT / onWire.TTFT
					send += got.sendLag
					missed += got.missed
					firstShare += got.firstShare
					modelTTFT += got.modelTTFT / sim.TTFT
					late += got.late
					cpu += got.cpu
					// The process's CPU per streamed token (server and
					// client together) against the wall time the model
					// gives a token: above 1 the run cannot keep the
					// model's pace on one core whatever the scheduler does.
					cpuWall += got.cpu * sim.Aggregate * scale
					n++
				}
				f := float64(n)
				b.ReportMetric(tokps/f, "tokps-ratio")
				b.ReportMetric(ttft/f, "ttft-ratio")
				b.ReportMetric(wire/f, "ttft-wire-ratio")
				b.ReportMetric(send/f*1e6, "client-send-µs")
				b.ReportMetric(missed/f, "missed-steps")
				b.ReportMetric(late/f, "late-deliveries")
				b.ReportMetric(firstShare/f, "first-delay-share")
				b.ReportMetric(modelTTFT/f, "model-ttft-ratio")
				b.ReportMetric(cpu/f*1e6, "cpu-µs/token")
				b.ReportMetric(cpuWall/f, "cpu-per-model-wall")
			})
		}
	}
}

// httpPoint is a profile and concurrency the HTTP benchmarks measure.
type httpPoint struct {
	name string
	p    Profile
	c    int
}

// httpPoints are the HTTP benchmarks' points, network off (the
// simulation has none).
func httpPoints() []httpPoint {
	pts := []httpPoint{
		{"rtx3090", ProfileRTX3090(), 1}, {"rtx3090", ProfileRTX3090(), 32},
		{"e2b", ProfileE2BH200NVL(), 1}, {"e2b", ProfileE2BH200NVL(), 4}, {"e2b", ProfileE2BH200NVL(), 16},
		{"e2b", ProfileE2BH200NVL(), 32}, {"e2b", ProfileE2BH200NVL(), 64}, {"e2b", ProfileE2BH200NVL(), 128},
		// speculative decoding: several tokens a chunk, a verify step's
		// yield counted on both sides
		{"deepseek", ProfileDeepSeekV4Flash(), 1}, {"deepseek", ProfileDeepSeekV4Flash(), 32},
	}
	// the held-back check's profile (make predict prints its simulation)
	if q, err := qwen3H100(false, 0, 0); err == nil {
		pts = append(pts, httpPoint{"qwen3", q, 1}, httpPoint{"qwen3", q, 128})
	}
	for i := range pts {
		pts[i].p.Network, pts[i].p.NetworkJitter = 0, 0
	}
	return pts
}

// httpRun is what httpTokens measured: the figures in model time, each
// timed batch's sends and the times the client had written each request
// (model seconds after the batch started), the mean TTFT from the
// request's write (wireTTFT, model s) and the mean wall time from a send
// to its write (sendLag: the client's own), the mean time from a batch's
// start to its last send, the twin's missed deadlines and late
// deliveries and the process's CPU seconds per token of the timed
// batches.
type httpRun struct {
	TokensPoint
	sends, wrote      [][]float64
	wireTTFT, sendLag float64
	spread            float64
	missed, late, cpu float64
	// firstShare is the timed batches' first token chunks' summed delay
	// over their summed modelled TTFT, as the twin counted them
	// (vetbench_twin_first_delivery_*): what a receipt's warning reads.
	firstShare float64
	// modelTTFT is the timed batches' mean TTFT as the twin's own
	// schedule had it (first token due − arrival, model seconds): against
	// the simulation's, how far the twin's model drifted from it, before
	// any delivery.
	modelTTFT float64
}

// httpTokens runs the token-throughput method against the twin of cfg
// served on loopback.
func httpTokens(b *testing.B, cfg Config, tr TokensRun, c int) httpRun {
	scale := cfg.TimeScale
	rs, err := Start(cfg)
	require.NoError(b, err)
	defer rs.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c + 1}}
	seq := 0
	type batchRun struct {
		wall, ttft, wire, lag float64
		tokens                int
		sends, wrote          []float64
	}
	batch := func() (br batchRun) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		t0 := time.Now()
		for range c {
			seq++
			body := httpBody(rs.Model(), seq, tr)
			wg.Go(func() {
				sent := time.Now()
				wrote, first, n := streamOnce(b, hc, rs.URL(), body)
				mu.Lock()
				br.sends = append(br.sends, sent.Sub(t0).Seconds()*scale)
				br.wrote = append(br.wrote, wrote.Sub(t0).Seconds()*scale)
				br.ttft += first.Sub(sent).Seconds() * scale / float64(c)
				br.wire += first.Sub(wrote).Seconds() * scale / float64(c)
				br.lag += wrote.Sub(sent).Seconds() / float64(c)
				br.tokens += n
				br.wall = max(br.wall, time.Since(t0).Seconds()*scale)
				mu.Unlock()
			})
		}
		wg.Wait()
		return br
	}
	batch() // warm-up
	run := httpRun{TokensPoint: TokensPoint{Workload: "text", C: c}}
	firsts := func() (delay, model, n float64) {
		rs.eng.m.mu.Lock()
		defer rs.eng.m.mu.Unlock()
		return rs.eng.m.firstDelay, rs.eng.m.firstModel, rs.eng.m.firstDeliveries
	}
	d0, m0, n0 := firsts()
	cpu0 := cpuSeconds()
	var total int
	var totalWall, ttft float64
	k := float64(tr.Repeats)
	for range tr.Repeats {
		time.Sleep(time.Duration(float64(time.Second) / scale))
		br := batch()
		total += br.tokens
		totalWall += br.wall
		ttft += br.ttft
		run.wireTTFT += br.wire / k
		run.sendLag += br.lag / k
		run.sends = append(run.sends, br.sends)
		run.wrote = append(run.wrote, br.wrote)
		run.spread += slices.Max(br.sends) / k
	}
	run.Aggregate = float64(total) / totalWall
	run.TTFT = ttft / k
	run.missed = rs.eng.missedSteps()
	rs.eng.m.mu.Lock()
	run.late = rs.eng.m.lateDeliveries
	rs.eng.m.mu.Unlock()
	run.cpu = (cpuSeconds() - cpu0) / float64(max(total, 1))
	d1, m1, n1 := firsts()
	run.firstShare = (d1 - d0) / max(m1-m0, 1e-12)
	run.modelTTFT = (m1 - m0) / max(n1-n0, 1)
	return run
}

// httpBody is the seq-th streamed request of the benchmark's workload:
// a unique text prompt of fixed length (the number has a fixed width).
func httpBody(model string, seq int, tr TokensRun) string {
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"unique %06d %s"}],"max_tokens":%d,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`,
		model, seq, strings.Repeat("w ", tr.PromptTokens-8), tr.Output)
}

// httpPromptTokens is the length of the benchmark's HTTP prompts as the
// twin tokenizes them (chat template included): the simulation runs
// prompts of that length.
func httpPromptTokens(b testing.TB, p Profile, tr TokensRun) int {
	s, err := New(Config{Profile: p})
	require.NoError(b, err)
	defer s.Close()
	c := &chatCall{}
	require.Nil(b, s.parseChat([]byte(httpBody(s.Model(), 1, tr)), c))
	return len(c.p.Tokens)
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// streamOnce sends one streamed chat request and returns when the client
// had written it, when its first text chunk arrived and how many tokens
// the stream's usage counts.
func streamOnce(b testing.TB, hc *http.Client, url, body string) (wrote, first time.Time, tokens int) {
	// The hook runs on the transport's write goroutine, once the request
	// is in its buffer (one write from the socket).
	var w atomic.Int64
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { w.Store(time.Now().UnixNano()) }}
	ctx := httptrace.WithClientTrace(context.Background(), trace)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(b, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(req)
	require.NoError(b, err)
	defer res.Body.Close()
	require.Equal(b, http.StatusOK, res.StatusCode)
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: {")) {
			continue
		}
		if bytes.Contains(line, []byte(`"usage":{`)) {
			// the final chunk (include_usage): every token the stream
			// carried, several a chunk under speculative decoding
			var u struct {
				Usage struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			require.NoError(b, json.Unmarshal(line[len("data: "):], &u))
			tokens = u.Usage.CompletionTokens
			continue
		}
		if first.IsZero() && textDelta(line) {
			first = time.Now()
		}
	}
	return time.Unix(0, w.Load()), first, tokens
}

// textDelta says a chunk carries output text: content, or reasoning
// (a reasoning parser's profile streams its thinking there first).
func textDelta(line []byte) bool {
	for _, k := range []string{`"content":"`, `"reasoning":"`, `"reasoning_content":"`} {
		if i := bytes.Index(line, []byte(k)); i >= 0 && !bytes.HasPrefix(line[i+len(k):], []byte(`"`)) {
			return true
		}
	}
	return false
}
