package stub

import (
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// The engine keeps its steps on the model clock: each step is due at its
// model end. Work done early waits for the deadline (clock.sleepUntil);
// work done late is absorbed, because the next step starts at the last
// one's model end, not when the goroutine got the CPU back, so a late
// wake-up shortens the next wait instead of stretching the model. What
// cannot be absorbed is a step whose completion ran later than its
// deadline by more than deadlineSlack of wall time: its tokens reach the
// clients late. Those are counted (vetbench_twin_deadline_missed_steps_total
// and _lag_seconds_total on /metrics) and logged, at most once per
// deadlineLogEvery, so a figure measured on a machine too busy for its
// time scale says so.

// deadlineSlack is how late (wall time) a step may complete before it
// counts as missed: about a scheduler tick, the lateness a timer has on
// an idle machine.
const deadlineSlack = 2 * time.Millisecond

// deadlineLogEvery spaces the log lines of a twin that keeps falling
// behind.
const deadlineLogEvery = 10 * time.Second

// deadlines counts the steps that missed their deadline and writes the
// log lines.
type deadlines struct {
	log    io.Writer
	engine int
	scale  float64
	// Since the last log line (or the engine's start): the steps, those
	// late, their lag, and the model time the line's span began.
	steps, missed int
	lag, from     float64
	logged        bool
	lastLog       time.Time
}

// observe records that a step due at model time due completed at model
// time now; it returns how late it was beyond the slack (0: on time).
// The log line says how many of the steps since the last one were late
// and their lag as a share of the model time since: one step 1 ms late
// in a minute is a wake-up's grain, not a twin behind its model.
func (d *deadlines) observe(due, now float64, wall time.Time) float64 {
	d.steps++
	late := now - due - deadlineSlack.Seconds()*d.scale
	if late <= 0 {
		return 0
	}
	d.missed++
	d.lag += late
	if d.log != nil && (!d.logged || wall.Sub(d.lastLog) >= deadlineLogEvery) {
		since := "it started"
		if d.logged {
			since = "the last line"
		}
		fmt.Fprintf(d.log, "vllmstub: engine %d fell behind its model clock: %d of %d step(s) late, by %.1f ms (model) in all over the %.1f s since %s (%s), at time scale %g; their tokens reached clients late\n",
			d.engine, d.missed, d.steps, d.lag*1e3, now-d.from, since, share(d.lag, now-d.from), d.scale)
		d.logged, d.lastLog = true, wall
		d.steps, d.missed, d.lag, d.from = 0, 0, 0, now
	}
	return late
}

// share is part ÷ whole as a percentage: two significant digits below
// 10%, whole percents above (a lag summed over steps can pass 100%).
func share(part, whole float64) string {
	if whole <= 0 {
		return "all"
	}
	p := 100 * part / whole
	switch {
	case p < 0.01:
		return "under 0.01%"
	case p >= 10:
		return strconv.FormatFloat(p, 'f', 0, 64) + "%"
	}
	return strconv.FormatFloat(p, 'g', 2, 64) + "%"
}

// checkDeadline records a step that was due at model time end, now that
// it has completed.
func (e *engine) checkDeadline(end float64) {
	late := e.deadlines.observe(end, e.clock.now(), time.Now())
	if late <= 0 {
		return
	}
	e.mu.Lock()
	m := e.m
	e.mu.Unlock()
	m.mu.Lock()
	m.missedSteps++
	m.lagSeconds += late
	m.mu.Unlock()
}

// missedSteps is the engine's missed deadlines, as /metrics counts them.
func (e *engine) missedSteps() float64 {
	e.mu.Lock()
	m := e.m
	e.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.missedSteps
}

// delivered records a stream's write of tokens due at the client at model
// time t that completed now: one that completed more than deadlineSlack
// of wall time past it counts as a late delivery on /metrics
// (vetbench_twin_deadline_late_deliveries_total) and in the log, at most
// once per deadlineLogEvery. A step on time does not make its tokens on
// time: on a busy machine the handlers that write them wait for the CPU.
func (e *engine) delivered(t float64) {
	now := time.Now()
	e.writes.Add(1)
	if now.Sub(e.clock.wall(t)) <= deadlineSlack {
		return
	}
	e.mu.Lock()
	m := e.m
	e.lateWrites++
	n := e.lateWrites
	logIt := e.deadlines.log != nil && now.Sub(e.lateLogged) >= deadlineLogEvery
	var of int64
	if logIt {
		e.lateLogged, e.lateWrites, of = now, 0, e.writes.Swap(0)
	}
	e.mu.Unlock()
	m.mu.Lock()
	m.lateDeliveries++
	m.mu.Unlock()
	if logIt {
		fmt.Fprintf(e.deadlines.log, "vllmstub: engine %d wrote %d of %d streamed chunk(s) more than %v late (wall) at time scale %g; those reached clients late\n",
			e.index, n, of, deadlineSlack, e.clock.scale)
	}
}

// firstDelivered records that a response's first tokens, due at the
// client at model time due for a request the client sent at model time
// sent, were written now. /metrics sums how much later than due (model
// seconds, none when early: vetbench_twin_first_delivery_delay_seconds_total)
// and due − sent, the TTFT a client of the model sees
// (vetbench_twin_first_delivery_model_seconds_total), over
// vetbench_twin_first_deliveries_total. Every response counts, not only
// those past the slack: delay over model is how far a client's TTFT runs
// behind the model, which a reader of the figures needs however small.
func (e *engine) firstDelivered(due, sent float64) {
	late := max(time.Since(e.clock.wall(due)), 0)
	e.mu.Lock()
	m := e.m
	e.mu.Unlock()
	m.mu.Lock()
	m.firstDeliveries++
	m.firstDelay += e.clock.model(late)
	m.firstModel += due - sent
	m.mu.Unlock()
}

// syncWriter serialises the writes of the twin's log lines: each engine's
// goroutine and the stream handlers write them.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
