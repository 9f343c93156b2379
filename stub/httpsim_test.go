package stub

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkHTTPvsSim holds the twin served over real loopback HTTP (the
// client in this process, as a benchmark run's) against its own
// simulation (SimulateTokens, the same engine core on a virtual clock) on the
// token-throughput method: c unique short text prompts at once, 128
// ignore-EOS tokens each, a warm-up batch, then 3 timed batches. Network
// off in both (the simulation has none). It reports HTTP/simulation ratios
// of aggregate tok/s (tokps-ratio) and mean TTFT (ttft-ratio), and the
// engine steps that missed their model-clock deadline (missed-steps): a
// measurement of how well modelled time survives a busy machine, so it is
// opt-in (make calibrate), never part of make test.
func BenchmarkHTTPvsSim(b *testing.B) {
	tr := TokensRun{PromptTokens: 32, Output: 128, Repeats: 3}
	for _, pc := range []struct {
		name string
		p    Profile
		c    int
	}{
		{"rtx3090", ProfileRTX3090(), 1}, {"rtx3090", ProfileRTX3090(), 32},
		{"e2b", ProfileE2BH200NVL(), 32}, {"e2b", ProfileE2BH200NVL(), 128},
	} {
		p := pc.p
		p.Network, p.NetworkJitter = 0, 0
		sim := SimulateTokens(p, tr, "text", pc.c)
		for _, scale := range []float64{1, 10} {
			b.Run(fmt.Sprintf("%s/c=%d/scale=%g", pc.name, pc.c, scale), func(b *testing.B) {
				var got TokensPoint
				var missed, cpu float64
				for b.Loop() {
					got, missed, cpu = httpTokens(b, p, scale, tr, pc.c)
				}
				b.Logf("sim %.1f tok/s TTFT %.1f ms; HTTP %.1f tok/s TTFT %.1f ms (model time)",
					sim.Aggregate, sim.TTFT*1e3, got.Aggregate, got.TTFT*1e3)
				b.ReportMetric(got.Aggregate/sim.Aggregate, "tokps-ratio")
				b.ReportMetric(got.TTFT/sim.TTFT, "ttft-ratio")
				b.ReportMetric(missed, "missed-steps")
				// The process's CPU per streamed token (server and client
				// together) against the wall time the model gives a token:
				// above 1 the run cannot keep the model's pace on one core
				// whatever the scheduler does.
				b.ReportMetric(cpu*1e6, "cpu-µs/token")
				b.ReportMetric(cpu*sim.Aggregate*scale, "cpu-per-model-wall")
			})
		}
	}
}

// httpTokens runs the token-throughput method against a twin of p served
// on loopback at the time scale, and returns its figures in model time and
// the twin's missed deadlines and the process's CPU seconds per token of
// the timed batches.
func httpTokens(b *testing.B, p Profile, scale float64, tr TokensRun, c int) (TokensPoint, float64, float64) {
	rs, err := Start(Config{Profile: p, TimeScale: scale})
	require.NoError(b, err)
	defer rs.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c + 1}}
	seq := 0
	batch := func() (wall, ttft float64, tokens int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		t0 := time.Now()
		for range c {
			seq++
			body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"unique %d %s"}],"max_tokens":%d,"ignore_eos":true,"stream":true}`,
				rs.Model(), seq, strings.Repeat("w ", tr.PromptTokens-8), tr.Output)
			wg.Go(func() {
				first, n := streamOnce(b, hc, rs.URL(), body)
				mu.Lock()
				ttft += first.Sub(t0).Seconds()
				tokens += n
				wall = max(wall, time.Since(t0).Seconds())
				mu.Unlock()
			})
		}
		wg.Wait()
		return wall * scale, ttft * scale / float64(c), tokens
	}
	batch() // warm-up
	pt := TokensPoint{Workload: "text", C: c}
	cpu0 := cpuSeconds()
	var total int
	var totalWall, ttft float64
	for range tr.Repeats {
		time.Sleep(time.Duration(float64(time.Second) / scale))
		w, f, n := batch()
		total += n
		totalWall += w
		ttft += f
	}
	pt.Aggregate = float64(total) / totalWall
	pt.TTFT = ttft / float64(tr.Repeats)
	return pt, rs.eng.missedSteps(), (cpuSeconds() - cpu0) / float64(max(total, 1))
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// streamOnce sends one streamed chat request and returns when its first
// content chunk arrived and how many content chunks came.
func streamOnce(b *testing.B, hc *http.Client, url, body string) (first time.Time, chunks int) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(b, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(req)
	require.NoError(b, err)
	defer res.Body.Close()
	require.Equal(b, http.StatusOK, res.StatusCode)
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: {")) || !bytes.Contains(line, []byte(`"content":"`)) || bytes.Contains(line, []byte(`"content":""`)) {
			continue
		}
		if chunks == 0 {
			first = time.Now()
		}
		chunks++
	}
	return first, chunks
}
