package stub

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// TestWakerOrder: the system timer is armed for the earliest waiter (and
// re-armed when an earlier one comes), a fire wakes exactly the waiters
// that are due and arms for the next, and a deadline already past needs
// no timer. Fake time; the system timer is a recorder.
func TestWakerOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var armed []time.Duration
		w := &waker{arm: func(d time.Duration) { armed = append(armed, d) }}
		t0 := time.Now()
		c3 := w.after(t0.Add(3 * time.Millisecond))
		c1 := w.after(t0.Add(1 * time.Millisecond))
		c2 := w.after(t0.Add(2 * time.Millisecond))
		require.Equal(t, []time.Duration{3 * time.Millisecond, time.Millisecond}, armed, "armed for 3 ms, then for the earlier 1 ms; 2 ms is not the earliest")
		time.Sleep(time.Millisecond)
		w.fire()
		require.True(t, closed(c1))
		require.False(t, closed(c2))
		require.False(t, closed(c3))
		require.Equal(t, time.Millisecond, armed[len(armed)-1], "re-armed for the 2 ms waiter")
		time.Sleep(2 * time.Millisecond)
		w.fire()
		require.True(t, closed(c2))
		require.True(t, closed(c3))
		n := len(armed)
		require.True(t, closed(w.after(t0)), "a past deadline is due at once")
		require.Len(t, armed, n, "and arms nothing")
	})
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestLeadLearnsDeliveryCost: when every write takes 300 µs after it
// starts, the lead converges to 300 µs, so writes complete at their model
// time; a cost beyond maxLead stops at maxLead; a free write needs none.
// Fake time, where the write's cost is a sleep.
func TestLeadLearnsDeliveryCost(t *testing.T) {
	lead := func(t *testing.T, cost time.Duration) (time.Duration, time.Duration) {
		var got, lastLate time.Duration
		synctest.Test(t, func(t *testing.T) {
			c := &clock{origin: time.Now(), scale: 10}
			for k := 1; k <= 200; k++ {
				due := float64(k) * 0.010
				require.NoError(t, c.deliverAt(context.Background(), due))
				time.Sleep(cost)
				lastLate = c.delivered(due)
			}
			got = c.currentLead()
		})
		return got, lastLate
	}
	got, late := lead(t, 300*time.Microsecond)
	require.InDelta(t, 300e-6, got.Seconds(), 2e-6)
	require.InDelta(t, 0, late.Seconds(), 2e-6, "writes complete on time")
	got, _ = lead(t, 5*time.Millisecond)
	require.Equal(t, maxLead, got)
	got, _ = lead(t, 0)
	require.Zero(t, got)
}

// TestEngineReleasesStepsEarly: with a lead, the engine completes a step
// that much before its model end (its streams are signalled then), yet
// the tokens keep the step's model end, and a request that reaches the
// engine between the early completion and the model end still joins the
// next step at that end, as in the simulation. (Starting the next step at
// the early completion instead would leave it for the step after.) Fake
// time, scale 1.
func TestEngineReleasesStepsEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := ProfileFast()
		p.StepBase = 10 * time.Millisecond
		e := newEngine(p, p.Model, 1, 1, nil)
		e.clock.lead = 2 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go e.run(ctx)
		pr, h := synthPrompt("first", 32, 0, 0, p.BlockSize)
		a := &request{prompt: pr, hashes: h, maxTokens: 4, done: make(chan struct{}), progress: make(chan struct{}, 1)}
		require.NoError(t, e.submit(a, 0))
		<-a.progress
		end := e.clock.model(time.Since(e.clock.origin))
		e.mu.Lock()
		first := a.times[0]
		e.mu.Unlock()
		require.InDelta(t, first-0.002, end, 1e-9, "signalled 2 ms before the token's model time")
		// Now, 2 ms before the first step's end, a second request arrives.
		pr, h = synthPrompt("second", 32, 0, 0, p.BlockSize)
		b := &request{prompt: pr, hashes: h, maxTokens: 1, done: make(chan struct{})}
		require.NoError(t, e.submit(b, end+0.001))
		<-b.done
		require.InDelta(t, first, b.scheduled, 1e-9, "joins the step that starts at the first one's model end")
	})
}

// TestAllowanceBeyondNetworkSendsEarly: a transport allowance larger than
// the modelled network (here none) is taken half from the request's
// arrival and half from its answer's sending, so a client whose transport
// costs nothing (fake time, in memory) sees a streamed first token the
// whole allowance before the model's TTFT, and with no allowance at it.
// /metrics, in model time, is the same either way.
func TestAllowanceBeyondNetworkSendsEarly(t *testing.T) {
	ttft := func(t *testing.T, allowance time.Duration) (client, model float64) {
		synctest.Test(t, func(t *testing.T) {
			p := ProfileFast()
			p.StepBase = 10 * time.Millisecond
			s, err := New(Config{Profile: p, TransportAllowance: allowance})
			require.NoError(t, err)
			defer s.Close()
			time.Sleep(time.Second) // a request cannot reach the twin before it started
			hc := &http.Client{Transport: twintest.StreamTransport(s)}
			body := `{"messages":[{"role":"user","content":"hello"}],"max_tokens":4,"ignore_eos":true,"stream":true}`
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://twin/v1/chat/completions", strings.NewReader(body))
			require.NoError(t, err)
			sent := time.Now()
			res, err := hc.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if bytes.Contains(sc.Bytes(), []byte(`"content":"`)) && !bytes.Contains(sc.Bytes(), []byte(`"content":""`)) {
					client = time.Since(sent).Seconds()
					break
				}
			}
			for sc.Scan() {
			}
			c, sum := twintest.ScrapeMetrics(t.Context(), t, &http.Client{Transport: twintest.Transport(s)}, "http://twin").Hist("vllm:time_to_first_token_seconds")
			model = sum / c
		})
		return client, model
	}
	client, model := ttft(t, 0)
	require.InDelta(t, model, client, 1e-9)
	early, model2 := ttft(t, 4*time.Millisecond)
	require.InDelta(t, model, model2, 1e-9, "the model is unchanged")
	require.InDelta(t, model-0.004, early, 1e-9, "the client sees it the allowance early")
}

// TestLateDeliveryCounted: a streamed write that completes within the
// slack of its model time is on time; later it counts on /metrics and the
// log says so once per deadlineLogEvery. Fake time.
func TestLateDeliveryCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log bytes.Buffer
		e := newEngine(ProfileFast(), "m", 10, 1, &log)
		due := e.clock.model(time.Since(e.clock.origin))
		time.Sleep(deadlineSlack)
		e.delivered(due)
		require.Zero(t, e.m.lateDeliveries)
		require.Empty(t, log.String())
		time.Sleep(time.Millisecond)
		e.delivered(due)
		e.delivered(due)
		require.Equal(t, 2.0, e.m.lateDeliveries)
		require.Equal(t, 1, strings.Count(log.String(), "streamed token chunk(s) more than 2ms late"), "one line per deadlineLogEvery")
		time.Sleep(deadlineLogEvery)
		e.delivered(due)
		require.Equal(t, 2, strings.Count(log.String(), "late (wall)"))
	})
}

// TestBlockPoolHoldsNoPointers guards what keeps a million-block pool out
// of the garbage collector's work: a block holds no pointer (a field that
// is one fails this), and pages are made only as blocks are first used.
func TestBlockPoolHoldsNoPointers(t *testing.T) {
	typ := reflect.TypeFor[block]()
	for i := range typ.NumField() {
		switch typ.Field(i).Type.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.String, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
			t.Errorf("block.%s is a %s: the pool would be scanned by every GC", typ.Field(i).Name, typ.Field(i).Type.Kind())
		}
	}
	p := newBlockPool(1_205_053, true) // E2B on an H200 NVL
	made := func() (n int) {
		for _, pg := range p.pages {
			if pg != nil {
				n++
			}
		}
		return n
	}
	require.Zero(t, made())
	for range blockPage + 1 {
		require.NotNil(t, p.allocate())
	}
	require.Equal(t, 2, made())
	require.Equal(t, 1_205_053-blockPage-1, p.numFree)
}
