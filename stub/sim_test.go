package stub

import (
	"container/heap"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// The simulator drives the engine core, the frontend model and the
// profile's timing on a virtual clock, with a closed-loop client shaped
// like typevet's pool: c workers, each taking the next item, tokenizing
// the controls of every question (typevet re-tokenizes per judgment, see
// judgments.TypevetTokenizeCalls) and then asking the questions one after another.
// It is the fast twin of the whole server: calibration_sim_test.go checks
// it against the receipts for all three sets, calibration_test.go the
// server itself for checks (on fake time in make test, over real HTTP in
// make calibrate).

type simReq struct {
	p       prompt
	hashes  []uint64
	digests []string
}

// simItems renders every request of a set as the judgments client sends
// it.
func simItems(t testing.TB, set fixtures.Set, p Profile) [][]simReq {
	t.Helper()
	out := make([][]simReq, len(set.Cases))
	for i, c := range set.Cases {
		urls := make([]string, len(c.Images))
		for k, im := range c.Images {
			urls[k] = im.DataURL()
		}
		for _, q := range set.Spec.Questions {
			parts, err := judgments.Content(c.Item, q, urls)
			if err != nil {
				t.Fatal(err)
			}
			m := message{Role: "user"}
			for _, pt := range parts {
				if pt.ImageURL != nil {
					data, err := decodeDataURL(pt.ImageURL.URL)
					if err != nil {
						t.Fatal(err)
					}
					m.Parts = append(m.Parts, part{Image: newPartImage(data)})
				} else {
					m.Parts = append(m.Parts, part{Text: pt.Text})
				}
			}
			pr, err := renderChat([]message{m}, true, false, p.ImageTokenBudget)
			if err != nil {
				t.Fatal(err)
			}
			r := simReq{p: pr, hashes: blockHashes(pr, p.BlockSize, "")}
			for _, im := range pr.Images {
				r.digests = append(r.digests, im.Digest)
			}
			out[i] = append(out[i], r)
		}
	}
	return out
}

type simServer struct {
	p   Profile
	t   *timing
	m   *metrics
	c   *core
	fe  *frontendModel
	at  float64 // virtual now between runs
	rng *rand.Rand
}

func newSimServer(p Profile, slowdown float64) *simServer {
	t := newTiming(p, slowdown)
	m := newMetrics(p, p.Model, fixedTime)
	return &simServer{p: p, t: t, m: m, c: newCore(p, m), fe: &frontendModel{t: t, m: m, mm: newLRU(p.MMCacheItems)},
		rng: rand.New(rand.NewPCG(1, 2))}
}

// simRun is one measured run: typevet's throughput block.
type simRun struct {
	Wall, JPS, P50, P95, HitRate, QueueMean, PrefillMean, E2EMean float64
	Requests, PromptTokens                                        float64
	// FrontendBusy and EngineBusy are the fractions of the run the
	// frontend worker and the engine were busy; TokenizeWait is the mean
	// wait of a /tokenize call behind the frontend.
	FrontendBusy, EngineBusy, TokenizeWait float64
}

type simEvent struct {
	t    float64
	seq  int
	kind int
	cl   int
	r    *request
	st   *step
}

const (
	evClient = iota
	evArrive
	evReady
	evStepEnd
)

type eventQueue []simEvent

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].t != q[j].t {
		return q[i].t < q[j].t
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *eventQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// warm asks the first question of every item at concurrency 32, without
// tokenize calls: the cheap stand-in for typevet's subset sweep that ran
// before its full-set receipts (it leaves the multimodal cache warm with
// the subset's images).
func (s *simServer) warm(items [][]simReq) {
	first := make([][]simReq, len(items))
	for i, it := range items {
		first[i] = it[:1]
	}
	s.run(first, 32, 0)
}

// run judges every item at concurrency c.
func (s *simServer) run(items [][]simReq, c, tokenizeCalls int) simRun {
	type client struct {
		item, action int
		start        float64
	}
	var q eventQueue
	seq := 0
	push := func(e simEvent) {
		seq++
		e.seq = seq
		heap.Push(&q, e)
	}
	before := s.snapshot()
	t0 := s.at
	next := 0
	clients := make([]client, c)
	owner := map[*request]int{}
	var lat []float64
	var inbox []inboxEntry
	busy := false
	prevEnd := 0.0
	var feBusy, engBusy, tokWait, tokN float64
	rts := map[int]float64{} // client -> round trip of its request in flight
	boundary := func(start float64) {
		n := 0
		keep := inbox[:0]
		for _, in := range inbox {
			if in.ready > start {
				keep = append(keep, in)
				continue
			}
			s.c.add(in.r, start+float64(n)*s.t.admitPerRequest)
			n++
		}
		inbox = keep
		if !s.c.hasWork() {
			busy = false
			return
		}
		at := start + float64(n)*s.t.admitPerRequest + s.t.schedulePass
		st := s.c.schedule(at)
		if st == nil {
			panic("simulated request does not fit in the KV cache")
		}
		busy = true
		engBusy += st.duration(s.t)
		push(simEvent{t: at + st.duration(s.t), kind: evStepEnd, st: st})
	}
	for i := range c {
		push(simEvent{t: t0, kind: evClient, cl: i})
		clients[i].item = -1
	}
	end := t0
	for q.Len() > 0 {
		e := heap.Pop(&q).(simEvent)
		switch e.kind {
		case evClient:
			cl := &clients[e.cl]
			if cl.item >= 0 && cl.action == tokenizeCalls+len(items[cl.item]) {
				lat = append(lat, e.t-cl.start)
				end = max(end, e.t)
				cl.item = -1
			}
			if cl.item < 0 {
				if next == len(items) {
					continue
				}
				cl.item, cl.action, cl.start = next, 0, e.t
				next++
			}
			rts[e.cl] = s.t.roundTrip(s.rng.Float64())
			push(simEvent{t: e.t + rts[e.cl]/2, kind: evArrive, cl: e.cl})
		case evArrive:
			cl := &clients[e.cl]
			if cl.action < tokenizeCalls {
				start, done := s.fe.reserve(e.t, nil, true, len(inbox)+len(s.c.waiting)+len(s.c.running), 0)
				tokWait += start - e.t
				tokN++
				feBusy += done - start
				cl.action++
				push(simEvent{t: done + rts[e.cl]/2, kind: evClient, cl: e.cl})
				continue
			}
			sr := items[cl.item][cl.action-tokenizeCalls]
			cl.action++
			start, done := s.fe.reserve(e.t, sr.digests, false, len(inbox)+len(s.c.waiting)+len(s.c.running), len(sr.p.Tokens))
			feBusy += done - start
			r := &request{prompt: sr.p, hashes: sr.hashes, maxTokens: 1, arrival: start}
			owner[r] = e.cl
			push(simEvent{t: done, kind: evReady, r: r})
		case evReady:
			inbox = append(inbox, inboxEntry{e.r, e.t})
			if !busy {
				boundary(e.t)
			}
		case evStepEnd:
			for _, r := range s.c.complete(e.st, e.t) {
				push(simEvent{t: e.t + rts[owner[r]]/2, kind: evClient, cl: owner[r]})
			}
			prevEnd = e.t
			boundary(prevEnd)
		}
	}
	s.at = end
	after := s.snapshot()
	sort.Float64s(lat)
	wall := end - t0
	d := func(k string) float64 { return after[k] - before[k] }
	return simRun{
		Wall: wall, JPS: float64(len(items)) / wall, P50: twintest.NearestRank(lat, 0.50), P95: twintest.NearestRank(lat, 0.95),
		HitRate:     d("hits") / d("queries"),
		QueueMean:   d("queue_sum") / d("queue_count"),
		PrefillMean: d("prefill_sum") / d("queue_count"),
		E2EMean:     d("e2e_sum") / d("queue_count"),
		Requests:    d("queue_count"), PromptTokens: d("prompt"),
		FrontendBusy: feBusy / wall, EngineBusy: engBusy / wall, TokenizeWait: tokWait / max(tokN, 1),
	}
}

func (s *simServer) snapshot() map[string]float64 {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	return map[string]float64{
		"hits": s.m.prefixHits, "queries": s.m.prefixQueries, "prompt": s.m.promptTokens,
		"queue_sum": s.m.hist["vllm:request_queue_time_seconds"].sum, "queue_count": s.m.hist["vllm:request_queue_time_seconds"].count,
		"prefill_sum": s.m.hist["vllm:request_prefill_time_seconds"].sum, "e2e_sum": s.m.hist["vllm:e2e_request_latency_seconds"].sum,
	}
}
