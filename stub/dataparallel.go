package stub

import (
	"bytes"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
)

// Data parallelism as vllm serve --data-parallel-size N has it: one API
// server (the twin's frontend: tokenization, the multimodal processor
// cache) fronts N engine cores, each with its own scheduler, KV cache,
// prefix cache and encoder cache, and its own /metrics series (label
// engine="i"). Engine 0 holds the frontend and the clock; with one engine
// everything is as it always was.

// statsInterval is how often vLLM's DP coordinator publishes the engines'
// request counts to the API servers (stats_update_interval_ms, 100 ms,
// vllm/v1/engine/coordinator.py), in model seconds.
const statsInterval = 0.1

// balancer spreads requests over the engines as vLLM's DPLBAsyncMPClient
// does (get_core_engine_for_request, vllm/v1/engine/core_client.py): the
// lowest waiting×4 + running from the counts the coordinator last
// published, ties to the first engine from the client's start index (0 for
// one API server), and the chosen engine's waiting count bumped locally so
// that requests between two publications do not all land on one engine.
type balancer struct {
	mu        sync.Mutex
	engines   []*engine
	counts    [][2]int // per engine: waiting, running
	published float64
	have      bool
}

func newBalancer(es []*engine) *balancer {
	return &balancer{engines: es, counts: make([][2]int, len(es))}
}

// pick chooses the engine for a request handed over at model time now.
func (b *balancer) pick(now float64) *engine {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.have || now-b.published >= statsInterval {
		for i, e := range b.engines {
			b.counts[i] = e.requestCounts()
		}
		b.published, b.have = now, true
	}
	best, low := 0, math.MaxInt
	for i, c := range b.counts {
		if score := c[0]*4 + c[1]; score < low {
			best, low = i, score
		}
	}
	b.counts[best][0]++
	return b.engines[best]
}

// requestCounts are the engine's waiting (submitted or queued) and running
// requests, as its scheduler reports them to the coordinator.
func (e *engine) requestCounts() [2]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return [2]int{len(e.inbox) + len(e.c.waiting), len(e.c.running)}
}

// load is the requests the engine holds at model time at (held).
func (e *engine) load(at float64) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.held(at)
}

// handOff runs a chat request through the API server's frontend and picks
// the engine it goes to when the frontend hands it over. With one engine
// it is engine 0's frontend, exactly; with several the frontend job costs
// the load of every engine (the API server serves all of them) and the
// multimodal cache lookups are counted on the chosen engine's series.
func (s *Server) handOff(at float64, digests []string, promptTokens int) (e *engine, arrival, ready float64, job *feJob) {
	if len(s.engines) == 1 {
		job, arrival, ready = s.eng.frontendInOrder(at, digests, promptTokens)
		return s.eng, arrival, ready, job
	}
	load := 0
	for _, x := range s.engines {
		load += x.load(at)
	}
	var mm metrics // collects this request's multimodal cache lookups
	s.eng.mu.Lock()
	saved := s.eng.fe.m
	s.eng.fe.m = &mm
	arrival, ready = s.eng.fe.reserve(at, digests, false, load, promptTokens)
	ready += s.eng.t.ingest(promptTokens, load)
	s.eng.fe.m = saved
	s.eng.mu.Unlock()
	e = s.lb.pick(ready)
	if mm.mmQueries > 0 {
		e.mu.Lock()
		m := e.m
		e.mu.Unlock()
		m.mmQueried(int(mm.mmQueries), int(mm.mmHits))
	}
	return e, arrival, ready, nil
}

// killAll kills every engine: with data parallelism one dead engine core
// takes the server down.
func (s *Server) killAll() {
	for _, e := range s.engines {
		e.kill()
	}
}

// anyDead says whether some engine is dead.
func (s *Server) anyDead() bool {
	for _, e := range s.engines {
		if e.isDead() {
			return true
		}
	}
	return false
}

// writeMetrics writes every engine's series as one exposition: a family's
// HELP and TYPE once, then each engine's samples.
func (s *Server) writeMetrics(w io.Writer) error {
	pages := make([]string, len(s.engines))
	for i, e := range s.engines {
		e.mu.Lock()
		m := e.m
		e.mu.Unlock()
		var b bytes.Buffer
		if err := m.write(&b); err != nil {
			return err
		}
		pages[i] = b.String()
	}
	if len(pages) == 1 {
		_, err := io.WriteString(w, pages[0])
		return err
	}
	_, err := io.WriteString(w, mergeExpositions(pages))
	return err
}

// mergeExpositions merges text expositions family by family, in the first
// page's order: each family block (its # HELP and # TYPE lines, then its
// samples) appears once, with the samples of every page.
func mergeExpositions(pages []string) string {
	type block struct {
		head    string
		samples []string
	}
	var order []string
	blocks := map[string]*block{}
	for _, page := range pages {
		var cur *block
		for _, line := range strings.SplitAfter(page, "\n") {
			if line == "" {
				continue
			}
			if name, ok := strings.CutPrefix(line, "# HELP "); ok {
				name, _, _ = strings.Cut(name, " ")
				b, seen := blocks[name]
				if !seen {
					b = &block{head: line}
					blocks[name] = b
					order = append(order, name)
				}
				cur = b
				continue
			}
			if strings.HasPrefix(line, "# TYPE ") {
				if len(cur.samples) == 0 && !strings.Contains(cur.head, "# TYPE ") {
					cur.head += line
				}
				continue
			}
			cur.samples = append(cur.samples, line)
		}
	}
	var out strings.Builder
	for _, name := range order {
		b := blocks[name]
		out.WriteString(b.head)
		for _, l := range b.samples {
			out.WriteString(l)
		}
	}
	return out.String()
}

// engineLabel is an engine's label value.
func engineLabel(i int) string { return strconv.Itoa(i) }

// tokenizeFrontend is a /tokenize job on the API server's frontend.
func (s *Server) tokenizeFrontend(at float64) (start, done float64) {
	if len(s.engines) == 1 {
		return s.eng.frontend(at, nil, true, 0)
	}
	load := 0
	for _, x := range s.engines {
		load += x.load(at)
	}
	s.eng.mu.Lock()
	defer s.eng.mu.Unlock()
	return s.eng.fe.reserve(at, nil, true, load, 0)
}
