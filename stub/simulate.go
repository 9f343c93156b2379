package stub

import (
	"container/heap"
	"encoding/binary"
	"math"
	"sort"
	"time"
)

// The simulation API: the engine core, the frontend model and a
// profile's timing driven on a virtual clock, with no HTTP, goroutines or
// wall time, so a published figure can be reproduced in milliseconds of
// CPU whatever the machine is doing. SimulateMatrix runs the speed
// matrix's method (llm-inference-bench), SimulateTokens the token-
// throughput receipt's. The twin's tests compare its profiles with
// published results through them, and cmd/twinfit fits profile constants
// with them (stub/fit). The HTTP twin runs the same core (engine.run);
// BenchmarkHTTPvsSim compares the two.

// fixedTime is the _created time of simulated metrics.
var fixedTime = time.Date(2026, 9, 30, 19, 0, 0, 0, time.UTC)

// decodeSim drives the engine core, the frontend model and a profile's
// timing on a virtual clock for streaming clients: the fast twin of the
// whole server for decode workloads, as simServer (sim_test.go, test-only) is for
// judgments. It follows engine.run step for step: requests reach the
// scheduler at the first step boundary after they are ready, aborts are
// applied at boundaries, a step's tokens arrive at its end. The network
// is not modelled (the published runs' clients were local).
type decodeSim struct {
	p     Profile
	t     *timing
	m     *metrics
	c     *core
	fe    *frontendModel
	now   float64
	q     simQueue
	seq   int
	inbox []inboxEntry
	abort []*request
	busy  bool
	steps int

	// onToken is called for every token a request receives; onDone when
	// it finishes (any reason, aborts included).
	onToken func(r *request, at float64)
	onDone  func(r *request, at float64)
}

func newDecodeSim(p Profile) *decodeSim {
	t := newTiming(p, 1)
	m := newMetrics(p, p.Model, fixedTime)
	return &decodeSim{p: p, t: t, m: m, c: newCore(p, m), fe: &frontendModel{t: t, m: m, mm: newLRU(p.MMCacheItems)}}
}

type simAction struct {
	t   float64
	seq int
	fn  func()
}

type simQueue []simAction

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].t != q[j].t {
		return q[i].t < q[j].t
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simAction)) }
func (q *simQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// at schedules fn at model time t (never before now).
func (s *decodeSim) at(t float64, fn func()) {
	s.seq++
	heap.Push(&s.q, simAction{t: max(t, s.now), seq: s.seq, fn: fn})
}

// runUntil executes events up to and including time t (or until stop
// says so), leaving the clock at t.
func (s *decodeSim) runUntil(t float64, stop func() bool) {
	for s.q.Len() > 0 && s.q[0].t <= t {
		a := heap.Pop(&s.q).(simAction)
		s.now = a.t
		a.fn()
		if stop != nil && stop() {
			return
		}
	}
	if !math.IsInf(t, 1) {
		s.now = max(s.now, t)
	}
}

// send submits r at model time now: the frontend (serial), the ingest
// stage, then the scheduler at the next boundary.
func (s *decodeSim) send(r *request) {
	load := len(s.inbox) + len(s.c.waiting) + len(s.c.running)
	start, done := s.fe.reserve(s.now, digestsOf(r.prompt), false, load, len(r.prompt.Tokens))
	r.arrival = start
	ready := done + s.t.ingest(len(r.prompt.Tokens), load)
	s.at(ready, func() {
		s.inbox = append(s.inbox, inboxEntry{r, s.now})
		if !s.busy {
			s.boundary()
		}
	})
}

// cancel withdraws a request at the next boundary, as engine.abort does.
func (s *decodeSim) cancel(r *request) {
	s.abort = append(s.abort, r)
	for i, in := range s.inbox {
		if in.r == r {
			s.inbox = append(s.inbox[:i], s.inbox[i+1:]...)
			break
		}
	}
	if !s.busy {
		s.boundary()
	}
}

func (s *decodeSim) boundary() {
	for _, r := range s.abort {
		if s.c.abort(r, s.now) && s.onDone != nil {
			s.onDone(r, s.now)
		}
	}
	s.abort = s.abort[:0]
	n := 0
	keep := s.inbox[:0]
	for _, in := range s.inbox {
		if in.ready > s.now {
			keep = append(keep, in)
			continue
		}
		s.c.add(in.r, s.now+float64(n)*s.t.admitPerRequest)
		n++
	}
	s.inbox = keep
	if !s.c.hasWork() {
		s.busy = false
		return
	}
	at := s.now + float64(n)*s.t.admitPerRequest + s.t.schedulePass
	st := s.c.schedule(at)
	if st == nil {
		panic("simulated request does not fit in the KV cache")
	}
	s.busy = true
	s.steps++
	s.at(at+st.duration(s.t), func() { s.stepEnd(st) })
}

func (s *decodeSim) stepEnd(st *step) {
	before := make([]int, len(st.entries))
	for i, e := range st.entries {
		before[i] = e.r.generated
	}
	done := s.c.complete(st, s.now)
	if s.onToken != nil {
		for i, e := range st.entries {
			// a verified step yields 1 + accepted drafts: each is a token
			for range e.r.generated - before[i] {
				s.onToken(e.r, s.now)
			}
		}
	}
	if s.onDone != nil {
		for _, r := range done {
			s.onDone(r, s.now)
		}
	}
	s.boundary()
}

// idle runs until nothing is queued or in flight.
func (s *decodeSim) idle() {
	s.runUntil(math.Inf(1), nil)
}

func digestsOf(p prompt) []string {
	out := make([]string, len(p.Images))
	for i, im := range p.Images {
		out[i] = im.Digest
	}
	return out
}

// synthPrompt is a prompt of n text tokens whose ids derive from tag (the
// same tag, the same prompt: prefix-cache hits), plus images image
// placeholders blocks of imageTokens each with distinct digests.
func synthPrompt(tag string, n, images, imageTokens int, blockSize int) (prompt, []uint64) {
	var p prompt
	key := newRNG([]byte(tag))
	for range n {
		p.Tokens = append(p.Tokens, wordBase+int(key.next()%wordSpan))
	}
	for i := range images {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(i))
		d := newRNG([]byte(tag), []byte("image"), b[:])
		p.Tokens = append(p.Tokens, TokenImageStart)
		p.Images = append(p.Images, promptImage{Digest: tag + "#" + itoa(i) + "#" + itoa(int(d.next()%1e9)), Offset: len(p.Tokens), Length: imageTokens})
		for range imageTokens {
			p.Tokens = append(p.Tokens, TokenImageSoft)
		}
		p.Tokens = append(p.Tokens, TokenImageEnd)
	}
	p.Text = tag
	return p, blockHashes(p, blockSize, "")
}

// median is numpy's percentile 50 (linear between the middle two).
func median(xs []float64) float64 {
	return percentile(xs, 0.5)
}

func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

// ---- The speed matrix method (method.md §1–§6) ----

// MatrixCell is one cell of a simulated speed matrix as
// llm-inference-bench reports it: a sustained-decode cell, or a prefill
// row's scout (PrefillTokS, PrefillTTFT).
type MatrixCell struct {
	Context, C                    int
	TotalTokS, PerRequestTokS     float64
	TTFT, ITL                     float64 // p50 over the cell's requests, seconds
	AvgRunning                    float64
	Completed, OutputTokens       int
	Window                        float64
	Queued                        bool // "Requests queued": waiting seen, running under 0.95·C or never C
	PrefillTokS, PrefillTTFT      float64
	prefillMeasured               bool
	warmupTimedOut, readinessSeen bool
}

// MatrixRun is the speed matrix method's parameters.
type MatrixRun struct {
	Contexts    []int // prompt tokens per row
	Levels      []int
	MaxTokens   int     // 4096 on the published pages
	Duration    float64 // 30 s
	PrefillOnly []int   // contexts with a prefill row but no decode row (128K)
}

// SimulateMatrix runs the speed matrix on a fresh simulated server in the tool's order:
// every context at the first level (whose scouts, cold, are the prefill
// rows), then the first context at every level, then the rest row by row;
// 2 s between cells. In a cell every request sends the context's one
// prompt (the scout warmed it: KV demand is ctx + C × output), C workers
// keep C streams in flight, the 30 s window starts once nothing waits,
// every stream has a token and C run, held for 3 s on 1 s scrapes, and
// tokens are counted inside it; TTFT and time between tokens are p50
// over every request of the cell, warm-up included.
func SimulateMatrix(p Profile, m MatrixRun) (cells map[[2]int]*MatrixCell, prefill map[int]*MatrixCell) {
	s := newDecodeSim(p)
	cells = map[[2]int]*MatrixCell{}
	prefill = map[int]*MatrixCell{}
	type key = [2]int
	var order []key
	for _, ctx := range m.Contexts {
		order = append(order, key{ctx, m.Levels[0]})
	}
	for _, c := range m.Levels[1:] {
		order = append(order, key{m.Contexts[0], c})
	}
	for _, ctx := range m.Contexts[1:] {
		for _, c := range m.Levels[1:] {
			order = append(order, key{ctx, c})
		}
	}
	prompts := map[int]prompt{}
	hashes := map[int][]uint64{}
	promptFor := func(ctx int) (prompt, []uint64) {
		if _, ok := prompts[ctx]; !ok {
			pr, h := synthPrompt("ctx-"+itoa(ctx), ctx, 0, 0, p.BlockSize)
			prompts[ctx], hashes[ctx] = pr, h
		}
		return prompts[ctx], hashes[ctx]
	}
	// scout sends one max_tokens=1 request of the context's prompt and
	// returns its TTFT.
	scout := func(ctx int) float64 {
		pr, h := promptFor(ctx)
		r := &request{prompt: pr, hashes: h, maxTokens: 1}
		r.gen = generation{key: contentKey(pr)}
		sent := s.now
		first := math.NaN()
		s.onToken = func(x *request, at float64) {
			if x == r && math.IsNaN(first) {
				first = at
			}
		}
		s.onDone = nil
		s.send(r)
		s.runUntil(math.Inf(1), func() bool { return !math.IsNaN(first) })
		s.idle()
		return first - sent
	}
	for _, ctx := range m.PrefillOnly {
		_ = ctx // measured after the matrix, below
	}
	for _, k := range order {
		ctx, c := k[0], k[1]
		cell := &MatrixCell{Context: ctx, C: c}
		cells[k] = cell
		cold := prefill[ctx] == nil
		t := scout(ctx)
		if cold {
			prefill[ctx] = &MatrixCell{Context: ctx, C: 1, PrefillTTFT: t, PrefillTokS: float64(ctx) / t, prefillMeasured: true}
		}
		runCell(s, cell, m, promptFor)
		s.idle()
		s.runUntil(s.now+2, nil)
	}
	for _, ctx := range m.PrefillOnly {
		t := scout(ctx)
		prefill[ctx] = &MatrixCell{Context: ctx, C: 1, PrefillTTFT: t, PrefillTokS: float64(ctx) / t, prefillMeasured: true}
		s.runUntil(s.now+2, nil)
	}
	return cells, prefill
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// mreq is one client request of a cell.
type mreq struct {
	worker        int
	sent          float64
	first, last   float64
	n             int
	finished, cut bool
}

// runCell simulates one matrix cell as the tool measures it: C streams
// kept full (a stream that ends at its length is replaced at once), a
// warmup until the server is ready, a window of m.Duration, then the
// cell's figures from what the window saw.
func runCell(s *decodeSim, cell *MatrixCell, m MatrixRun, promptFor func(int) (prompt, []uint64)) {
	pr, h := promptFor(cell.Context)
	r := &cellRun{s: s, cell: cell, m: m, pr: pr, h: h, reqs: map[*request]*mreq{}, current: make([]*request, cell.C)}
	s.onToken, s.onDone = r.onToken, r.onDone
	t0 := s.now
	for w := range cell.C {
		r.sendNew(w)
	}
	r.warmUp(t0)
	running, queued := r.measure()
	r.stop()
	r.figures(running, queued)
}

// cellRun is the state of one simulated cell.
type cellRun struct {
	s       *decodeSim
	cell    *MatrixCell
	m       MatrixRun
	pr      prompt
	h       []uint64
	reqs    map[*request]*mreq
	all     []*mreq
	current []*request // each worker's stream

	stopped, measuring     bool
	start, end, lastUpdate float64
	windowTokens           int
}

// sendNew starts worker w's next stream (ignore_eos: it runs to its length).
func (c *cellRun) sendNew(w int) {
	r := &request{prompt: c.pr, hashes: c.h, maxTokens: c.m.MaxTokens}
	// ignore_eos: never EOS; the content's key draws the drafts'
	// acceptance, as the served twin's does
	r.gen = generation{key: contentKey(c.pr)}
	mr := &mreq{worker: w, sent: c.s.now, first: math.NaN()}
	c.reqs[r] = mr
	c.all = append(c.all, mr)
	c.current[w] = r
	c.s.send(r)
}

// onToken counts a stream's token, and the window's when inside it.
func (c *cellRun) onToken(r *request, at float64) {
	mr := c.reqs[r]
	if mr == nil || mr.cut {
		return
	}
	mr.n++
	if math.IsNaN(mr.first) {
		mr.first = at
	}
	mr.last = at
	if c.measuring && at > c.start && at <= c.end {
		c.windowTokens++
		c.lastUpdate = max(c.lastUpdate, at)
	}
}

// onDone replaces a stream that ran to its length, until the window ends.
func (c *cellRun) onDone(r *request, at float64) {
	mr := c.reqs[r]
	if mr == nil || mr.cut {
		return
	}
	mr.finished = true
	if !c.stopped && r.finishReason == "length" {
		c.sendNew(mr.worker)
	}
}

// warmUp runs until readiness on 1 s scrapes: nothing waiting, every
// stream has a token, C running; held for 3 s, checked from 2 s in.
// Timeouts as the tool's. The window starts where it ends.
func (c *cellRun) warmUp(t0 float64) {
	timeout := 60.0
	switch {
	case c.cell.Context > 64*1024:
		timeout = 180
	case c.cell.Context > 32*1024:
		timeout = 120
	}
	holdSince := math.NaN()
	for tick := t0 + 1; ; tick++ {
		c.s.runUntil(tick, nil)
		ok := len(c.s.c.waiting) == 0 && len(c.s.c.running) >= c.cell.C
		for _, r := range c.current {
			ok = ok && c.reqs[r].n > 0
		}
		if !ok {
			holdSince = math.NaN()
		} else if math.IsNaN(holdSince) {
			holdSince = tick
		}
		if tick-t0 >= 2 && !math.IsNaN(holdSince) && tick-holdSince >= 3 {
			c.cell.readinessSeen = true
			c.start = tick
			return
		}
		if tick-t0 >= timeout {
			c.cell.warmupTimedOut = true
			c.start = tick
			return
		}
	}
}

// measure runs the window on 1 s scrapes: how many ran at each, and
// whether any request waited.
func (c *cellRun) measure() (running []float64, queued bool) {
	c.end = c.start + c.m.Duration
	c.measuring = true
	for tick := c.start + 1; tick <= c.end; tick++ {
		c.s.runUntil(tick, nil)
		running = append(running, float64(len(c.s.c.running)))
		queued = queued || len(c.s.c.waiting) > 0
	}
	return running, queued
}

// stop ends the window: no new streams, the unfinished ones cut.
func (c *cellRun) stop() {
	c.s.runUntil(c.end, nil)
	c.stopped = true
	c.measuring = false
	for _, r := range c.current {
		if mr := c.reqs[r]; !mr.finished {
			mr.cut = true
			c.s.cancel(r)
		}
	}
}

// figures are the cell's figures: medians over every stream, totals over
// the window, queued as the tool's verdict says.
func (c *cellRun) figures(running []float64, queued bool) {
	var ttft, itl, perReq []float64
	completed := 0
	for _, mr := range c.all {
		if mr.n > 0 {
			ttft = append(ttft, mr.first-mr.sent)
		}
		if mr.n > 1 {
			x := (mr.last - mr.first) / float64(mr.n-1)
			itl = append(itl, x)
			perReq = append(perReq, 1/x)
		}
		if mr.finished && !mr.cut {
			completed++
		}
	}
	avg, most := 0.0, 0.0
	for _, r := range running {
		avg += r / float64(len(running))
		most = max(most, r)
	}
	cell := c.cell
	cell.TTFT, cell.ITL = median(ttft), median(itl)
	cell.PerRequestTokS = median(perReq)
	cell.Window = c.lastUpdate - c.start
	if cell.Window > 0 {
		cell.TotalTokS = float64(c.windowTokens) / cell.Window
	}
	cell.AvgRunning, cell.Completed, cell.OutputTokens = avg, completed, c.windowTokens
	// The peer's capacity_limited (method.md §4): a queue seen, under
	// 0.95·C running on average or C in no reading, or no warm-up.
	under := cell.C > 1 && (avg < 0.95*float64(cell.C) || most < float64(cell.C))
	cell.Queued = queued || under || cell.warmupTimedOut
}

// ---- The token-throughput method (token-throughput-rtx3090.json) ----

// TokensPoint is one point of the receipt: aggregate and per-request
// output tok/s and mean batch completion time.
type TokensPoint struct {
	Workload                      string
	C                             int
	Aggregate, PerRequest, MeanS  float64
	TTFT                          float64 // mean, over the measured batches
	Runs                          []float64
	VerifiedTokens, WantPerRepeat int
}

// TokensRun is the receipt's method: c requests at once, each a short
// unique prompt (and, for one_image, one unique image), output fixed
// greedy ignore-EOS tokens; a warm-up batch, then repeats batches each
// timed from send to the last completion; aggregate = output tokens ÷
// batch time (over all repeats), per request = aggregate ÷ c.
type TokensRun struct {
	PromptTokens, ImageTokens, Output, Repeats int
}

// SimulateTokens runs one point of the token-throughput method on a fresh
// simulated server: c requests of workload ("text" or
// "one_image_per_request") at once.
func SimulateTokens(p Profile, tr TokensRun, workload string, c int) TokensPoint {
	return simulateTokens(p, tr, workload, c, nil)
}

// simulateTokens is SimulateTokens whose timed batches send their requests
// when sends says (per repeat, each request's send in model seconds after
// the batch starts; nil: all at once): a real client's arrivals replayed.
// TTFT counts from each request's send, as vllm bench serve's does.
func simulateTokens(p Profile, tr TokensRun, workload string, c int, sends [][]float64) TokensPoint {
	s := newDecodeSim(p)
	images := 0
	if workload == "one_image_per_request" {
		images = 1
	}
	pt := TokensPoint{Workload: workload, C: c, WantPerRepeat: c * tr.Output}
	seq := 0
	var ttftSum float64
	var ttftN int
	batch := func(at []float64) (wall float64, tokens int) {
		left := c
		var last float64
		t0 := s.now
		sent := make(map[*request]float64, c)
		s.onToken = func(r *request, at float64) {
			if r.generated == 1 {
				ttftSum += at - sent[r]
				ttftN++
			}
			tokens++
		}
		s.onDone = func(r *request, at float64) { left--; last = at }
		for i := range c {
			seq++
			pr, h := synthPrompt("unique-"+workload+"-"+itoa(seq), tr.PromptTokens, images, tr.ImageTokens, p.BlockSize)
			r := &request{prompt: pr, hashes: h, maxTokens: tr.Output, gen: generation{key: contentKey(pr)}}
			send := func() { sent[r] = s.now; s.send(r) }
			if at == nil {
				send()
				continue
			}
			s.at(t0+at[i], send)
		}
		s.runUntil(math.Inf(1), func() bool { return left == 0 })
		s.idle()
		return last - t0, tokens
	}
	batch(nil) // warm-up
	ttftSum, ttftN = 0, 0
	total, totalWall := 0, 0.0
	for k := range tr.Repeats {
		s.runUntil(s.now+1, nil)
		var at []float64
		if sends != nil {
			at = sends[k]
		}
		w, n := batch(at)
		pt.Runs = append(pt.Runs, w)
		total += n
		totalWall += w
	}
	pt.VerifiedTokens = total
	pt.Aggregate = float64(total) / totalWall
	pt.PerRequest = pt.Aggregate / float64(c)
	pt.MeanS = totalWall / float64(tr.Repeats)
	pt.TTFT = ttftSum / float64(max(ttftN, 1))
	return pt
}
