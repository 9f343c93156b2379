package stub

import (
	"context"
	"math"
	"math/rand"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// TestReserveInOrder: reservations that come in another order than their
// requests arrived in are served in arrival order, as a simulation's
// queue serves them; the jobs an earlier arrival goes before are moved
// and said to be; a fixed job (its request in the engine core) is not
// moved, and the ones after it queue behind it. Control: the same
// reservations at the end of the queue, in the order they came, finish
// later.
func TestReserveInOrder(t *testing.T) {
	f := &frontendModel{t: &timing{frontendBase: 2}, m: &metrics{}, mm: newLRU(1)}
	times := func(js ...*feJob) (out [][2]float64) {
		for _, j := range js {
			out = append(out, [2]float64{j.start, j.end})
		}
		return out
	}
	a, moved := f.reserveInOrder(3, 0, nil, 0, 0)
	require.Empty(t, moved)
	b, moved := f.reserveInOrder(2, 0, nil, 0, 0)
	require.Equal(t, []*feJob{a}, moved, "the later arrival moves")
	c, moved := f.reserveInOrder(1, 0, nil, 0, 0)
	require.Equal(t, []*feJob{b, a}, moved)
	require.Equal(t, [][2]float64{{1, 3}, {3, 5}, {5, 7}}, times(c, b, a), "arrival order")
	c.fixed = true // reached the engine core
	d, moved := f.reserveInOrder(0.5, 0, nil, 0, 0)
	require.Equal(t, []*feJob{b, a}, moved)
	require.Equal(t, [][2]float64{{1, 3}, {3, 5}, {5, 7}, {7, 9}}, times(c, d, b, a), "behind the fixed job, before the rest")
	g := &frontendModel{t: &timing{frontendBase: 2}, m: &metrics{}, mm: newLRU(1)}
	var handler [][2]float64
	for _, at := range []float64{3, 2, 1} {
		start, done := g.reserve(at, nil, false, 0, 0)
		handler = append(handler, [2]float64{start, done})
	}
	require.Equal(t, [][2]float64{{3, 5}, {5, 7}, {7, 9}}, handler, "control: in the handlers' order the early arrivals wait")
}

// lateHandler serves s as a busy machine would: each request dated by the
// kernel's stamp of when it arrived (X-Sent, unix ns), its handler
// starting X-Late after it; with stamp false, no stamp (the handler's
// start dates it).
type lateHandler struct {
	s     *Server
	stamp bool
}

func (h lateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sent, _ := strconv.ParseInt(r.Header.Get("X-Sent"), 10, 64)
	late, _ := strconv.ParseInt(r.Header.Get("X-Late"), 10, 64)
	time.Sleep(time.Duration(late))
	if h.stamp {
		st := &stamped{}
		st.last.Store(sent)
		r = r.WithContext(context.WithValue(r.Context(), arrivalKey{}, st))
	}
	h.s.ServeHTTP(w, r)
}

// lateHandlersTTFT runs the token-throughput method's batch twice (a
// warm-up, then the one measured) against a ×10 twin on fake time, c
// requests sent 40 µs apart, each handled up to late after it arrived
// (seeded), and returns the TTFT the twin's schedule gave the measured
// batch (its /metrics first deliveries) and the simulation's of the same
// sends.
func lateHandlersTTFT(t *testing.T, c int, late time.Duration, stamp bool) (twin, sim float64) {
	p := ProfileE2BH200NVL()
	p.Network, p.NetworkJitter = 0, 0
	tr := TokensRun{PromptTokens: 32, Output: 16, Repeats: 1}
	const scale = 10
	var sends []float64
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{Profile: p, TimeScale: scale})
		require.NoError(t, err)
		defer s.Close()
		hc := &http.Client{Transport: twintest.Transport(lateHandler{s, stamp})}
		rng := rand.New(rand.NewSource(int64(c)))
		seq := 0
		batch := func() {
			sends = sends[:0]
			var mu sync.Mutex
			var wg sync.WaitGroup
			t0 := time.Now()
			for i := range c {
				seq++
				body, wait := httpBody(s.Model(), seq, tr), time.Duration(rng.Int63n(int64(late)+1))
				wg.Go(func() {
					time.Sleep(time.Duration(i) * 40 * time.Microsecond)
					sent := time.Now()
					mu.Lock()
					sends = append(sends, sent.Sub(t0).Seconds()*scale)
					mu.Unlock()
					req, err := http.NewRequest(http.MethodPost, "http://twin/v1/chat/completions", strings.NewReader(body))
					require.NoError(t, err)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("X-Sent", strconv.FormatInt(sent.UnixNano(), 10))
					req.Header.Set("X-Late", strconv.FormatInt(int64(wait), 10))
					res, err := hc.Do(req)
					require.NoError(t, err)
					require.NoError(t, res.Body.Close())
				})
			}
			wg.Wait()
		}
		firsts := func() (model, n float64) {
			s.eng.m.mu.Lock()
			defer s.eng.m.mu.Unlock()
			return s.eng.m.firstModel, s.eng.m.firstDeliveries
		}
		batch()
		time.Sleep(100 * time.Millisecond)
		m0, n0 := firsts()
		batch()
		m1, n1 := firsts()
		twin = (m1 - m0) / (n1 - n0)
		s.eng.mu.Lock()
		for _, j := range s.eng.fe.jobs {
			require.True(t, j.fixed, "every answered request's job stops moving, and goes at the next trim")
		}
		s.eng.mu.Unlock()
	})
	st := tr
	st.PromptTokens = httpPromptTokens(t, p, tr)
	return twin, simulateTokens(p, st, "text", c, [][]float64{sends, sends}).TTFT
}

// TestLateHandlersKeepTheModel is the busy machine on fake time: requests
// arrive 40 µs apart and each handler starts up to 3 ms (wall) after its
// request arrived, in another order (at time scale 10, 30 ms of model
// time; a real 2-core run's handlers came to the frontend up to about a
// millisecond out of order). The twin's schedule gives the TTFT its
// simulation of the same arrivals gives: the frontend queues by arrival,
// and the ingest counts what the engine held at the arrival, not at the
// late handler's hour (before, c=16 read +5.2% and c=128 +12.4%).
// Control: without the arrival stamps the late start is the twin's own
// and its TTFT moves off the simulation's. Handlers later than the model
// can absorb make it late, never early.
func TestLateHandlersKeepTheModel(t *testing.T) {
	for _, c := range []int{16, 128} {
		twin, sim := lateHandlersTTFT(t, c, 3*time.Millisecond, true)
		t.Logf("c=%d: the twin's TTFT %.2f ms, the simulation's %.2f", c, twin*1e3, sim*1e3)
		require.InEpsilon(t, sim, twin, 0.005, "c=%d", c)
	}
	twin, sim := lateHandlersTTFT(t, 16, 3*time.Millisecond, false)
	require.Greater(t, math.Abs(twin/sim-1), 0.01, "control: unstamped, the late handlers show (%.2f against %.2f ms)", twin*1e3, sim*1e3)
	// Handlers later than a request's frontend and ingest (10 ms of wall
	// is 100 ms of model time at ×10) cannot be absorbed: the schedule
	// runs late, never early (a job trimmed from the queue still held the
	// worker for an earlier arrival whose handler came later still).
	for _, c := range []int{16, 128} {
		twin, sim := lateHandlersTTFT(t, c, 10*time.Millisecond, true)
		require.GreaterOrEqual(t, twin, sim*0.999, "c=%d, handlers up to 10 ms late", c)
	}
}

// TestAbortedRequestsLeaveTheQueue: a stream whose client goes away while
// its request is still in the frontend or its ingest leaves no job that
// keeps moving: the queue forgets it once it has ended. Control: the
// request was in the queue when the client left.
func TestAbortedRequestsLeaveTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := ProfileE2BH200NVL()
		p.Network, p.NetworkJitter = 0, 0
		s, err := New(Config{Profile: p, TimeScale: 10})
		require.NoError(t, err)
		defer s.Close()
		hc := &http.Client{Transport: twintest.Transport(s)}
		ctx, cancel := context.WithCancel(t.Context())
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://twin/v1/chat/completions", strings.NewReader(httpBody(s.Model(), 1, TokensRun{PromptTokens: 32, Output: 16})))
		require.NoError(t, err)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if res, err := hc.Do(req); err == nil {
				_ = res.Body.Close()
			}
		}()
		time.Sleep(time.Millisecond) // 10 ms of model time: in the frontend's ingest
		s.eng.mu.Lock()
		queued := len(s.eng.fe.jobs)
		s.eng.mu.Unlock()
		require.Equal(t, 1, queued, "control: the request is in the queue")
		cancel()
		<-done
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		s.eng.mu.Lock()
		defer s.eng.mu.Unlock()
		for _, j := range s.eng.fe.jobs {
			require.True(t, j.fixed || j.dead, "an aborted request's job moves no more")
		}
	})
}
