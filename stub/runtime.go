package stub

import (
	"context"
	"errors"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// EngineDeadMessage is vLLM's EngineDeadError text.
const EngineDeadMessage = "EngineCore encountered an issue. See stack trace (above) for the root cause."

// errEngineDead is returned to requests in flight when the engine dies.
var errEngineDead = errors.New(EngineDeadMessage)

// clock maps wall time to model time: model seconds run timeScale times
// faster than wall seconds.
type clock struct {
	origin time.Time
	scale  float64

	mu   sync.Mutex
	late time.Duration // running mean of how late timers fire
}

func (c *clock) now() float64 { return c.model(time.Since(c.origin)) }

// model is the model seconds that wall duration d stands for.
func (c *clock) model(d time.Duration) float64 { return d.Seconds() * c.scale }

// wall is the wall time at which model time t falls.
func (c *clock) wall(t float64) time.Time {
	return c.origin.Add(time.Duration(t / c.scale * float64(time.Second)))
}

// sleepUntil blocks until model time t (or ctx ends). Timers fire late by
// up to a scheduler tick (about 1 ms on some kernels), which a time-scaled
// twin would multiply into model time; so the clock keeps a running mean
// of the lateness and asks to wake that much early, which puts wake-ups on
// target on average.
func (c *clock) sleepUntil(ctx context.Context, t float64) error {
	target := c.wall(t)
	c.mu.Lock()
	est := c.late
	c.mu.Unlock()
	wake := target.Add(-est)
	d := time.Until(wake)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	lateness := time.Since(wake)
	c.mu.Lock()
	c.late += (lateness - c.late) / 16
	c.mu.Unlock()
	return nil
}

// engine runs a core against the clock: one goroutine steps the core while
// it has work, sleeping each step's model duration; HTTP handlers submit
// requests and wait on them. It also holds the frontend's FIFO and the
// multimodal processor cache, and can die and be revived.
type engine struct {
	clock *clock
	t     *timing
	prof  Profile
	model string
	index int // data-parallel rank: the engine label of its series

	mu      sync.Mutex
	c       *core
	m       *metrics
	fe      *frontendModel
	inbox   []inboxEntry
	gone    []heldSpan // requests finished lately (held)
	aborts  []*request
	dead    bool
	gen     int // bumped on every revive; a step of an older core is dropped
	steps   int
	batched int // requests whose prefill ran in a batch of more than one
	wake    chan struct{}
	// deadlines counts the steps that completed late (deadline.go); only
	// the engine's goroutine touches it.
	deadlines deadlines
	// lateWrites counts the late deliveries since lateLogged, the last
	// log line about them, writes every delivery since (engine.delivered;
	// atomic, so that a write on time takes no lock).
	lateWrites int
	lateLogged time.Time
	writes     atomic.Int64
	// busyMachine, set by tests, runs after every step's wait: a stand-in
	// for a machine that gives the engine's goroutine the CPU back late.
	busyMachine func()
}

type inboxEntry struct {
	r     *request
	ready float64 // model time the frontend handed it over
}

func newEngine(p Profile, model string, scale, slowdown float64, log io.Writer) *engine {
	e := &engine{
		deadlines: deadlines{log: log, scale: scale},
		clock:     &clock{origin: time.Now(), scale: scale},
		t:         newTiming(p, slowdown),
		prof:      p,
		model:     model,
		wake:      make(chan struct{}, 1),
	}
	e.reset()
	return e
}

// reset starts a fresh engine core: empty caches and new metrics, as a
// restarted server has.
func (e *engine) reset() {
	e.m = newMetrics(e.prof, e.model, time.Now())
	e.m.engine = engineLabel(e.index)
	e.m.timeScale = e.clock.scale
	e.c = newCore(e.prof, e.m)
	e.gone = nil
	e.fe = &frontendModel{t: e.t, m: e.m, mm: newLRU(e.prof.MMCacheItems)}
	e.gen++
}

func (e *engine) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// frontend reserves the API server's frontend (see frontendModel) for a
// request that reaches it at model time at. It returns when processing
// starts (vLLM's arrival_time: the handler stamps it when it runs, not
// when the request was received) and when the request is handed to the
// engine. The caller sleeps; computing from at rather than from now keeps
// the twin's own CPU time out of the model.
//
// ready includes the ingest latency of a chat request of promptTokens
// (0 for /tokenize).
func (e *engine) frontend(at float64, digests []string, tokenize bool, promptTokens int) (start, ready float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	load := e.held(at)
	start, done := e.fe.reserve(at, digests, tokenize, load, promptTokens)
	if !tokenize {
		done += e.t.ingest(promptTokens, load)
	}
	return start, done
}

// frontendInOrder is frontend for a chat request of a served twin: its
// place in the queue is by arrival (reserveInOrder), and the requests it
// goes before have their ready times moved with their jobs. It returns
// the job and, read under the lock, its start and ready times.
func (e *engine) frontendInOrder(at float64, digests []string, promptTokens int) (j *feJob, start, ready float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	load := e.held(at)
	j, moved := e.fe.reserveInOrder(at, e.clock.now(), digests, load, promptTokens)
	j.extra = e.t.ingest(promptTokens, load)
	if len(moved) > 0 {
		for k := range e.inbox {
			if fe := e.inbox[k].r.fe; fe != nil && slices.Contains(moved, fe) {
				e.inbox[k].ready, e.inbox[k].r.arrival = fe.ready(), fe.start
			}
		}
	}
	return j, j.start, j.ready()
}

// readyOf is when request r reaches the engine, as its frontend job has
// it now (its place can move until then); without one, ready.
func (e *engine) readyOf(r *request, ready float64) float64 {
	if r.fe == nil {
		return ready
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return r.fe.ready()
}

// held is how many requests the engine holds at model time at: those
// that reached it by then (their frontend and ingest done) and had not
// finished. A request submitted ahead of its model arrival (its frontend
// and ingest still running at at) is not held yet: counting it would let
// the order in which handlers got the CPU into the model, where the
// simulation, and vLLM, have it still in the frontend. Nor is one that
// reached the engine after at, though the core holds it by the time a
// late handler asks; one that finished since is (gone). Called with e.mu
// held.
func (e *engine) held(at float64) int {
	n := 0
	for _, rs := range [][]*request{e.c.waiting, e.c.running} {
		for _, r := range rs {
			if r.reached <= at {
				n++
			}
		}
	}
	for _, in := range e.inbox {
		if in.r.fe == nil && in.ready <= at {
			n++
		}
	}
	// A served request's frontend job, until the core takes it (its
	// handler may not have submitted it yet).
	for _, j := range e.fe.jobs {
		if !j.fixed && !j.dead && j.ready() <= at {
			n++
		}
	}
	for _, g := range e.gone {
		if g.reached <= at && at < g.finished {
			n++
		}
	}
	return n
}

// heldSpan is a finished request's time in the engine, for held.
type heldSpan struct{ reached, finished float64 }

// goneHorizon is how long (wall time) finished requests are kept for
// held: far longer than a handler on a busy machine is late (a few ms),
// short enough that a twin answering thousands of requests a second
// keeps a short list.
const goneHorizon = 100 * time.Millisecond

// finished keeps the requests a step finished for held, and forgets those
// that finished more than goneHorizon ago. Called with e.mu held.
func (e *engine) finished(done []*request, end float64) {
	keep := e.clock.now() - goneHorizon.Seconds()*e.clock.scale
	i := 0
	for i < len(e.gone) && e.gone[i].finished < keep {
		i++
	}
	e.gone = e.gone[i:]
	for _, r := range done {
		e.gone = append(e.gone, heldSpan{r.reached, end})
	}
}

// promptExpRef is the prompt length at which FrontendPerPromptToken is the
// per-token cost whatever FrontendPromptExponent says.
const promptExpRef = 8192

// frontendModel is vLLM's API server as one FIFO worker: a request queues
// behind earlier ones and costs FrontendBase plus, per image,
// FrontendImageMiss on a multimodal processor cache miss or
// FrontendImageHit on a hit (a /tokenize call costs FrontendTokenize). It
// counts the multimodal cache queries and hits, in items, as vLLM does.
// Every job also costs FrontendPerInflight per request the engine holds
// (submitted, waiting or running): the API server's event loop serves the
// outputs and tasks of every request in flight, so it slows down as the
// engine fills.
type frontendModel struct {
	t    *timing
	m    *metrics
	mm   *lru
	free float64 // model time the worker is free again
	// floor is when the last job trim dropped ended: no job starts before.
	floor float64
	// jobs are the reservations not yet over, in the worker's order.
	jobs []*feJob
}

// reserve queues a request received at model time now at the end of
// the queue and returns when its processing starts and when the frontend
// hands it over. The simulations reserve in arrival order, so the end is
// their place.
func (f *frontendModel) reserve(now float64, digests []string, tokenize bool, load, promptTokens int) (start, done float64) {
	j := &feJob{at: now, cost: f.cost(digests, tokenize, load, promptTokens), fixed: true}
	f.trim(now)
	f.place(j, len(f.jobs))
	return j.start, j.end
}

// cost is the frontend's work for a request (model seconds); it looks
// its images up in the multimodal processor cache.
func (f *frontendModel) cost(digests []string, tokenize bool, load, promptTokens int) float64 {
	cost := f.t.frontendBase
	if tokenize {
		cost = f.t.frontendTokenize
	} else if promptTokens > 0 && f.t.frontendPerPromptToken > 0 {
		n := float64(promptTokens)
		cost += f.t.frontendPerPromptToken * n
		if exp := f.t.frontendPromptExp; exp != 0 && exp != 1 {
			cost += f.t.frontendPerPromptToken * n * (math.Pow(n/promptExpRef, exp-1) - 1)
		}
	}
	cost += f.t.frontendPerInflight * float64(load)
	hits := 0
	for _, d := range digests {
		if f.mm.get(d) {
			hits++
			cost += f.t.frontendImageHit
		} else {
			f.mm.put(d)
			cost += f.t.frontendImageMiss
		}
	}
	if len(digests) > 0 {
		f.m.mmQueried(len(digests), hits)
	}
	return cost
}

// reserveInOrder queues a request that arrived at model time at in
// arrival order among the reservations that have not started by model
// time now and are not fixed: a served twin's handlers come to the queue
// in the order they got the CPU, which on a busy machine is not the order
// their requests arrived in, and a queue filled in their order leaves its
// worker idle for an early arrival that came late, where the
// simulation's, in arrival order, does not. The jobs it goes before start
// later: moved lists them (their requests' ready times move with them).
func (f *frontendModel) reserveInOrder(at, now float64, digests []string, load, promptTokens int) (j *feJob, moved []*feJob) {
	j = &feJob{at: at, cost: f.cost(digests, false, load, promptTokens)}
	f.trim(min(at, now))
	i := len(f.jobs)
	for i > 0 && f.jobs[i-1].at > at && !f.jobs[i-1].fixed {
		i--
	}
	return j, f.place(j, i)
}

// place puts j at position i of the queue and times it and the jobs after
// it, each starting when it arrived or when the one before ends; it
// returns the jobs after j whose times moved.
func (f *frontendModel) place(j *feJob, i int) (moved []*feJob) {
	f.jobs = slices.Insert(f.jobs, i, j)
	prev := f.floor
	if i > 0 {
		prev = f.jobs[i-1].end
	}
	if i == len(f.jobs)-1 {
		prev = max(prev, f.free) // a cancelled tail may have left the worker free earlier
	}
	for _, x := range f.jobs[i:] {
		start := max(x.at, prev)
		if x != j && start == x.start {
			break // the rest keep their times
		}
		x.start, x.end = start, start+x.cost
		if x != j {
			moved = append(moved, x)
		}
		prev = x.end
	}
	f.free = max(f.free, f.jobs[len(f.jobs)-1].end)
	return moved
}

// submit hands a request to the engine that reaches it at model time
// ready, which may be ahead of now: it is added to the scheduler at the
// first step boundary at or after ready. Submitting ahead means a handler
// that wakes late cannot make its request miss a step.
func (e *engine) submit(r *request, ready float64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dead {
		if r.fe != nil {
			r.fe.fixed = true // never queued: the job moves no more
		}
		return errEngineDead
	}
	if r.fe != nil { // its times may have moved since the handler read them
		ready, r.arrival = r.fe.ready(), r.fe.start
	}
	e.inbox = append(e.inbox, inboxEntry{r, ready})
	e.signal()
	return nil
}

// abort withdraws a request whose client went away.
func (e *engine) abort(r *request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.aborts = append(e.aborts, r)
	e.signal()
}

// kill fails every request in flight and refuses new ones until revive.
func (e *engine) kill() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dead {
		return
	}
	e.dead = true
	fail := func(r *request) {
		if r.err == nil && r.finished == 0 {
			r.err = errEngineDead
			close(r.done)
		}
	}
	for _, in := range e.inbox {
		fail(in.r)
	}
	for _, r := range e.c.waiting {
		fail(r)
	}
	for _, r := range e.c.running {
		fail(r)
	}
	e.inbox, e.aborts = nil, nil
	e.c.waiting, e.c.running = nil, nil
}

// revive restarts a dead engine with empty caches and fresh metrics.
func (e *engine) revive() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.dead {
		return
	}
	e.dead = false
	e.reset()
}

func (e *engine) isDead() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dead
}

// run steps the core until ctx ends. Steps follow each other in model
// time: while busy, the next step starts where the last ended; when idle,
// it starts when the first request reached the engine, not when the
// goroutine happened to wake. A late wake-up therefore shortens the next
// sleep instead of stretching the model. Requests that reached the engine
// during a step join at the boundary after it.
func (e *engine) run(ctx context.Context) {
	prevEnd := 0.0
	// slept is the model time of the last idle wait that ran out: the clock
	// wakes early by its lateness estimate, so the request waited for is
	// due even though now() may still read a little before it; waiting
	// again for the rest would spin.
	slept := math.Inf(-1)
	for {
		e.mu.Lock()
		start, ready := e.nextStart(prevEnd, slept)
		if !ready {
			e.mu.Unlock()
			due, alive := e.wait(ctx, start)
			if !alive {
				return
			}
			if due {
				slept = start
			}
			continue
		}
		st, end, gen := e.startStep(start)
		e.mu.Unlock()
		if st == nil {
			continue
		}
		if e.clock.sleepUntil(ctx, end) != nil {
			return
		}
		if e.busyMachine != nil {
			e.busyMachine() // tests: the goroutine gets the CPU back late
		}
		prevEnd = end
		e.finishStep(st, end, gen)
		e.checkDeadline(end)
	}
}

// nextStart is when the next step starts (ready), or, when there is
// nothing to step yet, the model time to wait for (+Inf: a submit, abort
// or kill). Called with e.mu held.
func (e *engine) nextStart(prevEnd, slept float64) (start float64, ready bool) {
	e.processAborts(max(prevEnd, e.clock.now()))
	switch {
	case e.dead:
		return math.Inf(1), false
	case e.c.hasWork():
		return prevEnd, true
	case len(e.inbox) > 0:
		first := e.inbox[0].ready
		for _, in := range e.inbox {
			first = min(first, in.ready)
		}
		if first > slept && first > e.clock.now() {
			// Submitted ahead of its model arrival: wait for it (or for
			// an earlier one).
			return first, false
		}
		return max(prevEnd, first), true
	}
	return math.Inf(1), false
}

// wait waits for model time t (+Inf: only a submit, abort or kill); due
// says t came, alive is false when ctx ended.
func (e *engine) wait(ctx context.Context, t float64) (due, alive bool) {
	if math.IsInf(t, 1) {
		return false, e.idle(ctx)
	}
	return e.idleUntil(ctx, t)
}

// startStep admits the requests that reached the engine by start and
// schedules a step: it returns the step, its model end and the core
// generation it belongs to (nil when nothing could be scheduled). Called
// with e.mu held.
func (e *engine) startStep(start float64) (st *step, end float64, gen int) {
	drained := e.drain(start)
	at := start + float64(drained)*e.t.admitPerRequest + e.t.schedulePass
	st = e.c.schedule(at)
	if st == nil {
		// Work that cannot run: the head waiting request needs more KV
		// blocks than the engine has. Validation keeps prompts within
		// max_model_len, so this is a profile error; fail it closed.
		if len(e.c.waiting) > 0 {
			r := e.c.waiting[0]
			e.c.waiting = e.c.waiting[1:]
			r.err = errors.New("request does not fit in the KV cache")
			close(r.done)
		}
		return nil, 0, 0
	}
	e.steps++
	return st, at + st.duration(e.t), e.gen
}

// finishStep completes a step that ended at model time end: its tokens
// are sampled, finished requests are released and streams signalled. A
// step of a core that died or was revived meanwhile is dropped.
func (e *engine) finishStep(st *step, end float64, gen int) {
	e.mu.Lock()
	if e.dead || gen != e.gen {
		e.mu.Unlock()
		return
	}
	done := e.c.complete(st, end)
	e.finished(done, end)
	for _, r := range done {
		if r.batchSeqs > 1 {
			e.batched++
		}
	}
	for _, en := range st.entries {
		if en.r.progress != nil {
			select {
			case en.r.progress <- struct{}{}:
			default:
			}
		}
	}
	e.mu.Unlock()
	for _, r := range done {
		close(r.done)
	}
}

// idleUntil waits for model time t, or a submit, abort or kill. due says
// the wait ran out (t is due); alive is false when ctx ended.
func (e *engine) idleUntil(ctx context.Context, t float64) (due, alive bool) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	woke := make(chan struct{})
	go func() {
		defer close(woke)
		select {
		case <-e.wake:
		case <-wctx.Done():
		}
	}()
	err := e.clock.sleepUntil(wctx, t)
	cancel()
	<-woke
	return err == nil, ctx.Err() == nil
}

// idle waits for a submit, an abort or a kill; false when ctx ended.
func (e *engine) idle(ctx context.Context) bool {
	select {
	case <-e.wake:
		return true
	case <-ctx.Done():
		return false
	}
}

// drain adds the inbox requests that reached the engine by model time at
// to the scheduler, each queued admitPerRequest after the one before (the
// engine core adds them one by one). It returns how many it added.
func (e *engine) drain(at float64) int {
	n := 0
	keep := e.inbox[:0]
	for _, in := range e.inbox {
		if in.ready > at {
			keep = append(keep, in)
			continue
		}
		if in.r.fe != nil {
			in.r.fe.fixed = true // in the engine core: its frontend times stand
		}
		in.r.reached = in.ready
		e.c.add(in.r, at+float64(n)*e.t.admitPerRequest)
		n++
	}
	clear(e.inbox[len(keep):])
	e.inbox = keep
	return n
}

func (e *engine) processAborts(now float64) {
	for _, r := range e.aborts {
		for i, in := range e.inbox {
			if in.r == r {
				e.inbox = append(e.inbox[:i], e.inbox[i+1:]...)
				break
			}
		}
		if r.fe != nil {
			e.fe.cancelJob(r.fe, now)
			r.fe.fixed = true // its request is gone: the job moves no more
		} else {
			e.fe.cancel(r.arrival, now)
		}
		e.c.abort(r, now)
	}
	e.aborts = nil
}
