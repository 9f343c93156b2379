package stub

import (
	"fmt"
	"io"
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
	log     io.Writer
	engine  int
	scale   float64
	missed  int // since the last log line
	lag     float64
	logged  bool
	lastLog time.Time
}

// observe records that a step due at model time due completed at model
// time now; it returns how late it was beyond the slack (0: on time).
func (d *deadlines) observe(due, now float64, wall time.Time) float64 {
	late := now - due - deadlineSlack.Seconds()*d.scale
	if late <= 0 {
		return 0
	}
	d.missed++
	d.lag += late
	if d.log != nil && (!d.logged || wall.Sub(d.lastLog) >= deadlineLogEvery) {
		fmt.Fprintf(d.log, "vllmstub: engine %d fell behind its model clock: %d step(s) late by %.1f ms (model) in all, at time scale %g; figures measured now are slower than the model\n",
			d.engine, d.missed, d.lag*1e3, d.scale)
		d.logged, d.lastLog, d.missed, d.lag = true, wall, 0, 0
	}
	return late
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
	if now.Sub(e.clock.wall(t)) <= deadlineSlack {
		return
	}
	e.mu.Lock()
	m := e.m
	e.lateWrites++
	n := e.lateWrites
	logIt := e.deadlines.log != nil && now.Sub(e.lateLogged) >= deadlineLogEvery
	if logIt {
		e.lateLogged, e.lateWrites = now, 0
	}
	e.mu.Unlock()
	m.mu.Lock()
	m.lateDeliveries++
	m.mu.Unlock()
	if logIt {
		fmt.Fprintf(e.deadlines.log, "vllmstub: engine %d wrote %d streamed chunk(s) more than %v late (wall) at time scale %g; latencies measured now are slower than the model\n",
			e.index, n, deadlineSlack, e.clock.scale)
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
