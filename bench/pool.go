// Package bench measures judgments against an Endpoint: a closed-loop pool
// keeps c judgments in flight (or, open loop, judgments arrive at a stated
// rate and wait in the client for one of at most c slots), the measured
// window is bracketed by /metrics scrapes, the figures come from
// receipts/tally, and everything lands in a receipt. Choosing and starting
// what is measured (a live vLLM, the twin) is bench/sweep/target's job, so this
// package links neither the twin nor Docker. Its tests are the benchmark
// suite (BenchmarkJudgments) and the stability tests (TestStability).
package bench

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
)

// Judge answers one item; *judgments.Client is one.
type Judge interface {
	Judge(ctx context.Context, spec judgments.Spec, controls judgments.Controls, it judgments.Item) (judgments.Judgment, error)
}

// Result is one finished judgment.
type Result struct {
	Index    int
	Judgment judgments.Judgment
	Err      error
	// Scheduled is an open loop's arrival time by its schedule (zero in a
	// closed loop). Arrival is when the judgment arrived: in an open loop
	// when the client offered it, Scheduled unless the client fell behind;
	// in a closed loop Start, as a judgment starts the moment it is handed
	// out. Start is when its first request began, End when its last ended.
	Scheduled time.Time
	Arrival   time.Time
	Start     time.Time
	End       time.Time
}

// Lag is how late the client offered an open loop's judgment against its
// schedule (timer wake-up, a busy machine): load the server was promised
// and did not get on time. 0 in a closed loop.
func (r Result) Lag() time.Duration {
	if r.Scheduled.IsZero() {
		return 0
	}
	return r.Arrival.Sub(r.Scheduled)
}

// Latency is the judgment's service time: all its questions' requests, from
// the start of the first to the end of the last.
func (r Result) Latency() time.Duration { return r.End.Sub(r.Start) }

// Queued is the time the judgment waited in the client for a pool slot,
// from its arrival to the start of its first request (0 in a closed loop).
func (r Result) Queued() time.Duration { return r.Start.Sub(r.Arrival) }

// Response is the time from arrival to the end of the last request: the
// client queue and the service time.
func (r Result) Response() time.Duration { return r.End.Sub(r.Arrival) }

// Observer is told when the measured window opens (Open), when a worker takes a pool slot (Start), frees it after
// handing its result over (End), and when the last item has been handed out
// (Drain); *audit.Sampler is one (Little's law). Its methods must be cheap
// and safe for concurrent use.
type Observer interface {
	Open()
	Start()
	End()
	Drain()
}

// Pool is a closed loop: Concurrency judgments in flight, a new one starts
// as one finishes, items in slice order, questions of one judgment in order.
//
// With Arrivals it is an open loop instead: judgment i arrives Arrivals[i]
// after the window opens, whatever the server does, and waits in the
// client queue (first come, first served) until one of Concurrency slots is
// free; Concurrency 0 means no cap, every arrival starts at once. This is
// `vllm bench serve --request-rate --max-concurrency`'s model (its client
// semaphore).
type Pool struct {
	Concurrency int
	// Arrivals are the open loop's arrival times, offsets from the window's
	// opening, one per case in slice order (Arrivals.Schedule); nil is the
	// closed loop.
	Arrivals []time.Duration
	// System, when set, is told Start when a judgment arrives and End when
	// its slot is freed (with Observer's End): it counts judgments in the
	// system, the client queue included, for Little's law over the response
	// time. Only an open loop tells it anything.
	System Observer
	// StopOnError ends the run at the first failed judgment in slice order,
	// as typevet does: no new judgments start, in-flight ones finish.
	StopOnError bool
	Observer    Observer
	// Progress, when set, is called by Run after each finished judgment
	// with the counts so far and the time since the window opened (and
	// once with zeros as it opens). It runs in Run's result loop, one call
	// at a time: it must be cheap, or it delays the pool.
	Progress func(done, failed int, elapsed time.Duration)

	// Test seams, set only through export_test.go. clock replaces
	// time.Now. held runs after judgment i's latency clock stops and
	// before its slot is freed: time spent there is time the latency
	// figures do not see, which Little's law must catch. exited runs once
	// every goroutine of a Stream has returned.
	clock  func() time.Time
	held   func(i int)
	exited func()
}

func (p Pool) now() time.Time {
	if p.clock != nil {
		return p.clock()
	}
	return time.Now()
}

// Stream runs the set and sends each result as it finishes; the channel is
// closed when the last in-flight judgment is done. Cancelling ctx stops new
// judgments and aborts in-flight requests; a caller that stops reading must
// cancel ctx, and the workers then return without sending what is left.
func (p Pool) Stream(ctx context.Context, j Judge, set fixtures.Set, controls judgments.Controls) <-chan Result {
	return p.stream(ctx, ctx.Done(), j, set, controls, p.now())
}

// job is one judgment handed to a worker: its index and when it arrived
// (zero in a closed loop).
type job struct {
	index              int
	scheduled, arrival time.Time
}

// slots is how many workers the pool runs: Concurrency, at least 1 in a
// closed loop; in an open loop without a cap, one per case. Never more
// than the cases: no more can be in flight, and a level of 1e8 would
// otherwise start 1e8 workers and buffer 1e8 results.
func (p Pool) slots(cases int) int {
	if p.Arrivals != nil && p.Concurrency <= 0 {
		return max(cases, 1)
	}
	return max(min(p.Concurrency, cases), 1)
}

// arrival is case i's arrival time in an open loop; a schedule shorter than
// the set (a caller's bug) lets the rest arrive with its last.
func (p Pool) arrival(origin time.Time, i int) time.Time {
	if len(p.Arrivals) == 0 {
		return origin
	}
	return origin.Add(p.Arrivals[min(i, len(p.Arrivals)-1)])
}

// sleepUntil waits for at on the pool's clock; false when the run stopped
// or ctx ended first.
func (p Pool) sleepUntil(ctx context.Context, stop <-chan struct{}, at time.Time) bool {
	d := at.Sub(p.now())
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
	case <-ctx.Done():
	}
	return false
}

func (p Pool) systemStart() {
	if p.System != nil {
		p.System.Start()
	}
}

func (p Pool) systemEnd() {
	if p.System != nil {
		p.System.End()
	}
}

// stream is Stream with the channel that releases a blocked send: ctx.Done()
// for a caller that may stop reading, nil for Run, which reads to the end
// and must get every result, the aborted ones too.
//
// origin is the window's opening, from which an open loop's arrivals count.
func (p Pool) stream(ctx context.Context, abandon <-chan struct{}, j Judge, set fixtures.Set, controls judgments.Controls, origin time.Time) <-chan Result {
	c := p.slots(len(set.Cases))
	l := &lanes{ctx: ctx, abandon: abandon, open: p.Arrivals != nil, origin: origin,
		next: make(chan job), stop: make(chan struct{}), out: make(chan Result, c)}
	// The closed loop hands an item out only when a worker is free. An
	// open loop's arrivals never wait for one: they join the client queue
	// (this buffer, first in first out) on schedule, and workers take them
	// from it as slots free up.
	if l.open {
		l.next = make(chan job, len(set.Cases))
	}
	var once sync.Once
	l.halt = func() { once.Do(func() { close(l.stop) }) }

	var wg sync.WaitGroup
	wg.Go(func() { p.feed(l, set) })
	for range c {
		wg.Go(func() { p.work(l, j, set, controls) })
	}
	go func() {
		wg.Wait()
		close(l.out)
		if p.exited != nil {
			p.exited()
		}
	}()
	return l.out
}

// lanes are one stream's channels: the feeder hands jobs to the workers
// on next until stop (closed once, by halt), the workers send results on
// out until abandon.
type lanes struct {
	ctx     context.Context
	abandon <-chan struct{}
	open    bool // an open loop: arrivals on schedule, a client queue
	origin  time.Time
	next    chan job
	stop    chan struct{}
	halt    func()
	out     chan Result
}

// feed hands out indices in slice order until stopped; in an open loop
// each at its arrival time.
func (p Pool) feed(l *lanes, set fixtures.Set) {
	defer close(l.next)
	if p.Observer != nil {
		defer p.Observer.Drain()
	}
	for i := range set.Cases {
		var jb job
		if l.open {
			// The arrival happens on schedule whether or not a slot is
			// free: from here on the judgment waits in the client queue.
			// It arrives when the feeder wakes (at its schedule or
			// after), the moment the system sampler counts it in, so
			// that L = λW holds over the response time; how late that
			// was is its Lag.
			jb.scheduled = p.arrival(l.origin, i)
			if !p.sleepUntil(l.ctx, l.stop, jb.scheduled) {
				return
			}
			if jb.arrival = p.now(); jb.arrival.Before(jb.scheduled) {
				jb.arrival = jb.scheduled // a clock that did not move (a test's)
			}
			p.systemStart()
		}
		jb.index = i
		select {
		case l.next <- jb:
		case <-l.stop:
			if l.open {
				p.systemEnd() // it arrived, and leaves unserved
			}
			return
		case <-l.ctx.Done():
			if l.open {
				p.systemEnd()
			}
			return
		}
	}
}

// work is one slot: it judges what the feeder hands it, one at a time.
func (p Pool) work(l *lanes, j Judge, set fixtures.Set, controls judgments.Controls) {
	for jb := range l.next {
		// A stop may race with the feeder's last hand-off; never start a
		// judgment after the run has stopped.
		stopped := false
		select {
		case <-l.stop:
			stopped = true
		default:
		}
		if stopped || l.ctx.Err() != nil {
			if l.open {
				p.systemEnd()
			}
			continue
		}
		if !p.judge(l, j, set, controls, jb) {
			return // nobody reads any more
		}
	}
}

// judge runs one judgment and sends its result; false when nobody reads
// any more.
func (p Pool) judge(l *lanes, j Judge, set fixtures.Set, controls judgments.Controls, jb job) bool {
	i := jb.index
	if p.Observer != nil {
		p.Observer.Start()
	}
	r := Result{Index: i, Start: p.now()}
	r.Arrival = r.Start
	if l.open {
		r.Scheduled, r.Arrival = jb.scheduled, jb.arrival
	}
	r.Judgment, r.Err = j.Judge(l.ctx, set.Spec, controls, set.Cases[i].Item)
	r.End = p.now()
	if p.held != nil {
		p.held(i)
	}
	if r.Err != nil && p.StopOnError {
		l.halt()
	}
	select {
	case l.out <- r:
	case <-l.abandon:
		return false
	}
	if p.Observer != nil {
		p.Observer.End()
	}
	if l.open {
		p.systemEnd()
	}
	return true
}

// Outcome is a whole run: results in slice order and why it stopped.
type Outcome struct {
	Results []Result // index order; only the judgments that ran
	Wall    time.Duration
	// StopIndex is the first slice position that did not finish well when
	// the run stopped early, else -1.
	StopIndex int
	StopErr   error
	Canceled  bool
}

// Run runs the pool to the end and gathers the results. Wall time runs from
// just before the first judgment starts (open loop: from the window's
// opening, which the arrivals count from) to after the last one ends.
func (p Pool) Run(ctx context.Context, j Judge, set fixtures.Set, controls judgments.Controls) Outcome {
	start := p.now()
	if p.Observer != nil {
		p.Observer.Open()
	}
	byIndex := make([]*Result, len(set.Cases))
	done, failed := 0, 0
	if p.Progress != nil {
		p.Progress(0, 0, 0)
	}
	if p.System != nil && p.Arrivals != nil {
		p.System.Open()
	}
	for r := range p.stream(ctx, nil, j, set, controls, start) {
		byIndex[r.Index] = &r
		if done++; r.Err != nil {
			failed++
		}
		if p.Progress != nil {
			p.Progress(done, failed, p.now().Sub(start))
		}
	}
	o := Outcome{Wall: p.now().Sub(start), StopIndex: -1}
	for i, r := range byIndex {
		if r == nil {
			// Never started: only a stop or a cancel leaves gaps.
			if o.StopIndex < 0 {
				o.StopIndex = i
				o.StopErr = ctx.Err()
				o.Canceled = ctx.Err() != nil
			}
			continue
		}
		o.Results = append(o.Results, *r)
		if r.Err != nil && o.StopIndex < 0 && (p.StopOnError || isCanceled(ctx, r.Err)) {
			o.StopIndex = i
			o.StopErr = r.Err
			o.Canceled = isCanceled(ctx, r.Err)
		}
	}
	return o
}

// isCanceled tells a judgment aborted by the run's cancellation from one that
// failed on its own (a per-request timeout is a failure, not a cancel).
func isCanceled(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, context.Canceled)
}
