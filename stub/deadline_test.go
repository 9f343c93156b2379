package stub

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// TestDeadlinesObserve: a step that completes within the slack is on
// time; later it counts, by how late beyond the slack, in model seconds
// (the slack is wall time, so it scales); the log says so once, then not
// again within deadlineLogEvery, then again.
func TestDeadlinesObserve(t *testing.T) {
	var log bytes.Buffer
	d := deadlines{log: &log, scale: 10}
	wall := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	require.Zero(t, d.observe(1.0, 1.0+0.019, wall), "2 ms wall at scale 10 is 20 ms model: on time")
	require.Empty(t, log.String())
	require.InDelta(t, 0.030, d.observe(1.0, 1.050, wall), 1e-9, "50 ms model late is 30 ms beyond the slack")
	require.Contains(t, log.String(), "engine 0 fell behind its model clock: 1 of 2 step(s) late, by 30.0 ms (model) in all over the 1.1 s since it started (2.9%)")
	log.Reset()
	require.Zero(t, d.observe(1.5, 1.5, wall.Add(time.Second)))
	require.Positive(t, d.observe(2.0, 2.1, wall.Add(time.Second)))
	require.Empty(t, log.String(), "one line per deadlineLogEvery")
	require.Positive(t, d.observe(3.0, 3.1, wall.Add(deadlineLogEvery)))
	require.Contains(t, log.String(), "2 of 3 step(s) late, by 160.0 ms (model) in all over the 2.0 s since the last line (7.8%)", "the steps since the last line")
}

// TestEngineDeadlinesFakeTime runs a decode on fake time: on an idle
// machine no step misses its deadline and /metrics says 0; when the
// engine gets the CPU back 30 ms late after every 10 ms step
// (busyMachine), the steps are counted as missed on /metrics with their
// lag, the log says so, and the model itself does not stretch: each step
// starts at the last one's model end, so the request's modelled latency
// (e2e on /metrics) is the idle machine's. A client's wall clock sees the
// lag, which is why it is reported.
func TestEngineDeadlinesFakeTime(t *testing.T) {
	type result struct {
		missed, lag, e2e     float64
		firsts, first, model float64 // first deliveries, their summed delay and modelled TTFT
		page, log            string
	}
	run := func(t *testing.T, stall time.Duration) (r result) {
		synctest.Test(t, func(t *testing.T) {
			p := ProfileFast()
			p.StepBase = 10 * time.Millisecond
			var buf bytes.Buffer
			s, err := New(Config{Profile: p, Log: &buf})
			require.NoError(t, err)
			defer s.Close()
			if stall > 0 {
				s.eng.busyMachine = func() { time.Sleep(stall) }
			}
			hc := &http.Client{Transport: twintest.Transport(s)}
			sc := askEight(t, hc, false)
			c, sum := sc.Hist("vllm:e2e_request_latency_seconds")
			page, _ := twintest.Get(t.Context(), t, hc, "http://twin/metrics")
			r = result{missed: sc.Value("vetbench_twin_deadline_missed_steps_total"), lag: sc.Value("vetbench_twin_deadline_lag_seconds_total"),
				e2e: sum / c, page: string(page), log: buf.String(),
				firsts: sc.Value("vetbench_twin_first_deliveries_total"), first: sc.Value("vetbench_twin_first_delivery_delay_seconds_total"),
				model: sc.Value("vetbench_twin_first_delivery_model_seconds_total")}
		})
		return r
	}
	onTime := run(t, 0)
	require.Contains(t, onTime.page, "vetbench_twin_deadline_missed_steps_total")
	require.Zero(t, onTime.missed)
	require.Zero(t, onTime.lag)
	require.Empty(t, onTime.log)
	require.Equal(t, 1.0, onTime.firsts, "the body is the response's first delivery")
	require.Zero(t, onTime.first)
	late := run(t, 30*time.Millisecond)
	require.Equal(t, 8.0, late.missed, "every step of the 8 tokens came back late")
	// 30 ms of stall against 10 ms steps cannot be absorbed: the engine
	// falls 20 ms further behind every step (step k completes 30+20(k-1)
	// ms late), less 2 ms of slack each.
	want := 0.0
	for k := range 8 {
		want += 0.030 + 0.020*float64(k) - deadlineSlack.Seconds()
	}
	require.InDelta(t, want, late.lag, 0.001, "steps are a little over 10 ms (scheduling)")
	require.Contains(t, late.log, "engine 0 fell behind its model clock")
	require.InDelta(t, onTime.e2e, late.e2e, 1e-9, "the model absorbs the late wake-ups")
	require.Equal(t, 1.0, late.firsts)
	require.InDelta(t, 0.030+0.020*7, late.first, 0.002, "the body leaves when the last step completed, 170 ms late")
	require.Positive(t, onTime.model)
	require.InDelta(t, onTime.model, late.model, 1e-9, "the modelled TTFT does not stretch")
	for _, line := range strings.Split(late.page, "\n") {
		if strings.Contains(line, "deadline") {
			require.True(t, strings.HasPrefix(line, "# HELP vetbench_twin_") || strings.HasPrefix(line, "# TYPE vetbench_twin_") ||
				strings.HasPrefix(line, "vetbench_twin_"), "the twin's own series keep out of vLLM's namespace: %s", line)
		}
	}
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
		require.Equal(t, 1, strings.Count(log.String(), "streamed chunk(s) more than 2ms late"), "one line per deadlineLogEvery")
		require.Contains(t, log.String(), "wrote 1 of 2 streamed chunk(s)", "the on-time write is counted among them")
		time.Sleep(deadlineLogEvery)
		e.delivered(due)
		require.Equal(t, 2, strings.Count(log.String(), "late (wall)"))
		require.Contains(t, log.String(), "wrote 2 of 2 streamed chunk(s)", "since the last line")
	})
}

// TestFirstDeliveryDelay: every response's first write counts, early ones
// as no delay, late ones by how late in model seconds (the wall delay
// times the time scale), slack or not. Fake time.
func TestFirstDeliveryDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEngine(ProfileFast(), "m", 10, 1, nil)
		now := e.clock.model(time.Since(e.clock.origin))
		e.firstDelivered(now+1, now+0.5) // due in a model second: early
		require.Equal(t, 1.0, e.m.firstDeliveries)
		require.Zero(t, e.m.firstDelay)
		time.Sleep(time.Millisecond)
		e.firstDelivered(now, now-0.1) // 1 ms of wall late at ×10
		time.Sleep(4 * time.Millisecond)
		e.firstDelivered(now, now-0.2) // 5 ms late
		require.Equal(t, 3.0, e.m.firstDeliveries)
		require.InDelta(t, 0.010+0.050, e.m.firstDelay, 1e-9, "model seconds: (1 ms + 5 ms) × 10")
		require.InDelta(t, 0.5+0.1+0.2, e.m.firstModel, 1e-9, "the modelled TTFTs, due − sent")
	})
}

// BenchmarkWakeLateness reports how late a 300 µs sleep wakes on an
// otherwise idle process (late-µs, the mean; spread-µs, the mean absolute
// deviation from it), on a bare timer and on the clock, which learns the
// mean lateness and wakes that much early. Go's timers wait in epoll_wait,
// whose timeout is whole milliseconds, so on an idle process a
// sub-millisecond sleep takes about one: the clock corrects the mean, not
// the spread, and at time scale 10 the spread is ten times as much model
// time.
func BenchmarkWakeLateness(b *testing.B) {
	for _, name := range []string{"timer", "clock"} {
		b.Run(name, func(b *testing.B) {
			c := &clock{origin: time.Now(), scale: 1}
			var lates []time.Duration
			for b.Loop() {
				target := time.Now().Add(300 * time.Microsecond)
				if name == "timer" {
					time.Sleep(time.Until(target))
				} else {
					require.NoError(b, c.sleepUntil(b.Context(), c.model(target.Sub(c.origin))))
				}
				lates = append(lates, time.Since(target))
			}
			var sum, dev time.Duration
			for _, l := range lates {
				sum += l
			}
			mean := sum / time.Duration(len(lates))
			for _, l := range lates {
				dev += max(l-mean, mean-l)
			}
			b.ReportMetric(float64(mean.Microseconds()), "late-µs")
			b.ReportMetric(float64((dev / time.Duration(len(lates))).Microseconds()), "spread-µs")
		})
	}
}

// askEight asks the twin behind hc for 8 tokens (streamed or not), reads
// the whole answer and returns /metrics after it.
func askEight(t *testing.T, hc *http.Client, stream bool) twintest.Scrape {
	t.Helper()
	body := fmt.Sprintf(`{"messages":[{"role":"user","content":"hello"}],"max_tokens":8,"ignore_eos":true,"stream":%t}`, stream)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://twin/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	res, err := hc.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)
	return twintest.ScrapeMetrics(t.Context(), t, hc, "http://twin")
}

// TestFirstDeliveryStreamed: a stream counts its first token chunk once,
// by how late it was written: 30 ms of stall against 10 ms steps makes the
// first step, and so its chunk, 30 ms late. Without the stall, on time.
// Control: counting every chunk would give 8 deliveries and far more delay.
func TestFirstDeliveryStreamed(t *testing.T) {
	run := func(t *testing.T, stall time.Duration) (firsts, delay float64) {
		synctest.Test(t, func(t *testing.T) {
			p := ProfileFast()
			p.StepBase = 10 * time.Millisecond
			s, err := New(Config{Profile: p})
			require.NoError(t, err)
			defer s.Close()
			if stall > 0 {
				s.eng.busyMachine = func() { time.Sleep(stall) }
			}
			sc := askEight(t, &http.Client{Transport: twintest.Transport(s)}, true)
			firsts, delay = sc.Value("vetbench_twin_first_deliveries_total"), sc.Value("vetbench_twin_first_delivery_delay_seconds_total")
		})
		return firsts, delay
	}
	firsts, delay := run(t, 0)
	require.Equal(t, 1.0, firsts)
	require.Zero(t, delay)
	firsts, delay = run(t, 30*time.Millisecond)
	require.Equal(t, 1.0, firsts, "one stream, one first delivery")
	require.InDelta(t, 0.030, delay, 0.002)
}

func TestShare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		part, whole float64
		want        string
	}{{0.03, 1.05, "2.9%"}, {0.001, 60, "under 0.01%"}, {0.8, 0.08, "1000%"}, {0.123, 1, "12%"}, {0.0005, 1, "0.05%"}, {1, 0, "all"}} {
		require.Equal(t, tc.want, share(tc.part, tc.whole), "%v of %v", tc.part, tc.whole)
	}
}
