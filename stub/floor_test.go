package stub

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkLoopbackFloor is what BenchmarkHTTPvsSim's token stream costs
// with no twin in it: c streams over loopback HTTP from a bare net/http
// handler, each writing one chat.completion.chunk of the twin's size per
// engine step, all c due at the same instant as a batch's tokens are, the
// step as long in wall time as the profile's simulated step at c and the
// time scale; a client in this process reads them as BenchmarkHTTPvsSim's
// does. It reports how late the client read each chunk (floor-late-µs;
// floor-first-late-µs for each stream's first) against its due instant,
// that lateness over the step's wall time (late-per-step), the process's
// CPU per chunk, the cores the stream keeps busy (cores), and the TTFT
// ratio the first chunks' lateness alone gives against the simulation's
// TTFT (ttft-floor-ratio, as BenchmarkHTTPvsSim's ttft-ratio). What it
// reports late, the twin cannot deliver on time on this machine whatever
// its engine does: the floor under BenchmarkHTTPvsSim's TTFT ratio at
// time scale 10. A measurement (make calibrate), never part of make test.
func BenchmarkLoopbackFloor(b *testing.B) {
	tr := TokensRun{PromptTokens: 32, Output: 128, Repeats: 1}
	for _, pc := range httpPoints() {
		sim := SimulateTokens(pc.p, tr, "text", pc.c)
		for _, scale := range []float64{1, 10} {
			step := time.Duration(float64(pc.c) / sim.Aggregate / scale * float64(time.Second))
			b.Run(fmt.Sprintf("%s/c=%d/scale=%g", pc.name, pc.c, scale), func(b *testing.B) {
				var late, first, cpu float64
				n := 0
				for b.Loop() {
					f := loopbackFloor(b, pc.c, tr.Output, step)
					late, first, cpu = late+f.late, first+f.first, cpu+f.cpu
					n++
				}
				k := float64(n)
				b.ReportMetric(step.Seconds()*1e6, "step-µs")
				b.ReportMetric(late/k*1e6, "floor-late-µs")
				b.ReportMetric(first/k*1e6, "floor-first-late-µs")
				b.ReportMetric(late/k/step.Seconds(), "late-per-step")
				b.ReportMetric(cpu/k*1e6, "cpu-µs/chunk")
				b.ReportMetric(cpu/k/step.Seconds()*float64(pc.c), "cores")
				// The TTFT ratio the late first chunks alone give a
				// twin whose every step is on time.
				b.ReportMetric(1+first/k*scale/sim.TTFT, "ttft-floor-ratio")
			})
		}
	}
}

// floorRun is one loopbackFloor: mean lateness of every chunk and of each
// stream's first (s), and CPU seconds per chunk.
type floorRun struct{ late, first, cpu float64 }

// floorChunk is a chat.completion.chunk as long as the twin's for one
// token of the E2B profile.
var floorChunk = []byte(`data: {"id":"chatcmpl-0123456789abcdef0123456789abcdef","object":"chat.completion.chunk","created":1764633600,"model":"RedHatAI/gemma-4-E2B-it","choices":[{"index":0,"delta":{"content":" w"},"logprobs":null,"finish_reason":null}]}` + "\n\n")

// loopbackFloor streams n chunks to each of c clients, chunk i due at
// t0 + (i+1)·step, after a warm-up batch. As in the twin, one goroutine
// keeps the steps on its clock (the lateness-corrected sleep) and wakes
// every stream's handler at once; a handler that finds several steps due
// writes them with one flush.
func loopbackFloor(b *testing.B, c, n int, step time.Duration) floorRun {
	var mu sync.Mutex
	var steps []chan struct{} // steps[i] closes when chunk i is due
	clk := &clock{origin: time.Now(), scale: 1}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		due := steps
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		f.Flush()
		for i := 0; i < n; {
			<-due[i]
			for i < n && closed(due[i]) {
				_, _ = w.Write(floorChunk)
				i++
			}
			f.Flush()
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c + 1}}
	url := "http://" + ln.Addr().String() + "/"
	batch := func() (late, first float64) {
		due := make([]chan struct{}, n)
		for i := range due {
			due[i] = make(chan struct{})
		}
		mu.Lock()
		steps = due
		mu.Unlock()
		t0 := time.Now().Add(20 * step) // every request on the server before the first step
		go func() {
			for i := range due {
				_ = clk.sleepUntil(context.Background(), t0.Add(time.Duration(i+1)*step).Sub(clk.origin).Seconds())
				close(due[i])
			}
		}()
		var wg sync.WaitGroup
		for range c {
			wg.Go(func() {
				l, f := floorStream(b, hc, url, t0, step)
				mu.Lock()
				late, first = late+l/float64(c), first+f/float64(c)
				mu.Unlock()
			})
		}
		wg.Wait()
		return late, first
	}
	batch() // warm-up: connections open, the clock's lateness learnt
	cpu0 := cpuSeconds()
	late, first := batch()
	return floorRun{late: late, first: first, cpu: (cpuSeconds() - cpu0) / float64(c*n)}
}

// closed says whether ch is closed, without waiting.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// floorStream reads one stream, returning its chunks' mean lateness and
// its first chunk's, in seconds.
func floorStream(b *testing.B, hc *http.Client, url string, t0 time.Time, step time.Duration) (late, first float64) {
	res, err := hc.Get(url)
	require.NoError(b, err)
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	i := 0
	for sc.Scan() {
		if !bytes.HasPrefix(sc.Bytes(), []byte("data: {")) {
			continue
		}
		i++
		l := time.Since(t0.Add(time.Duration(i) * step)).Seconds()
		if i == 1 {
			first = l
		}
		late += l
	}
	require.NoError(b, sc.Err())
	require.Positive(b, i, "no chunks")
	return late / float64(i), first
}
