package stub

import (
	"math"
	"slices"
	"time"
)

// request is one chat completion inside the engine. Times are model
// seconds since the twin started.
type request struct {
	prompt    prompt
	hashes    []uint64 // prefix-cache block hashes of the prompt
	maxTokens int

	arrival float64 // reached the server (before the frontend)
	reached float64 // reached the engine (after the frontend and ingest)
	// fe is the request's place in a served twin's frontend queue, whose
	// times can move until it reaches the engine core (reserveInOrder);
	// nil in a simulation.
	fe         *feJob
	queued     float64 // added to the scheduler
	scheduled  float64 // first scheduled
	firstToken float64
	lastToken  float64
	finished   float64

	numComputed int
	numCached   int // prefix-cache hit, in tokens, at the first scheduling
	everRan     bool
	generated   int
	preemptions int
	blocks      []*block
	encoded     map[int]bool // images whose encoder output this run has
	// batchSeqs is the number of sequences in the step that finished the
	// prefill: the batch the answer was computed in.
	batchSeqs    int
	finishReason string
	done         chan struct{}
	err          error

	// gen is what the model writes after the first token, and when it
	// samples EOS (text.go).
	gen generation
	// failAt > 0 makes the request fail (finish_reason "error") when its
	// output reaches that length: the stream-error fault.
	failAt int
	// progress, when set, is signalled after every step that computed for
	// the request, and times records when each token was sampled: a
	// streaming handler follows them.
	progress chan struct{}
	times    []float64
	// scanned is how many leading blocks cacheFull has registered or
	// listed in uncached (full blocks a duplicate hash kept out of the
	// cache); both reset when the request's blocks are rebuilt.
	scanned  int
	uncached []int
}

func (r *request) promptLen() int { return len(r.prompt.Tokens) }

// numTokens is the tokens the request's KV must hold: prompt plus every
// sampled token.
func (r *request) numTokens() int { return len(r.prompt.Tokens) + r.generated }

// step is one scheduled engine iteration.
type step struct {
	start     float64
	entries   []stepEntry
	tokens    int // tokens computed
	images    int // images run through the vision encoder
	preempted int
}

type stepEntry struct {
	r    *request
	from int // tokens r had computed before this step
	n    int // tokens computed for r in this step
	// drafts is the speculative tokens verified with r's last sampled one
	// (n = 1 + drafts): a decode step that can yield up to 1 + drafts
	// tokens (spec.go).
	drafts int
}

// duration is the step's model time under the profile: the roofline model
// when the profile has one (physical.go), the fitted formula otherwise.
func (s *step) duration(p *timing) float64 {
	if p.phys != nil {
		return p.phys.seconds(s) * p.slowdown
	}
	return p.stepBase + p.stepPerToken*math.Pow(float64(s.tokens), p.stepTokenExp) + p.stepPerSeq*float64(len(s.entries)) +
		p.stepPerImage*float64(s.images) + p.stepPerKVToken*float64(s.kvTokens())
}

// kvTokens is the cached tokens the step's sequences attend to (what a
// decode step reads from the KV cache besides the weights).
func (s *step) kvTokens() int {
	n := 0
	for _, e := range s.entries {
		n += e.from
	}
	return n
}

// timing is a profile's durations as float seconds.
type timing struct {
	stepBase, stepPerToken, stepPerSeq, stepPerImage float64
	stepTokenExp                                     float64
	admitPerRequest, schedulePass                    float64
	network, networkJitter                           float64
	frontendBase, frontendImageMiss                  float64
	frontendImageHit, frontendTokenize               float64
	frontendPerInflight                              float64
	frontendPerPromptToken, frontendPromptExp        float64
	stepPerKVToken                                   float64
	ingestBase, ingestPerPromptToken                 float64
	ingestPerInflight, ingestExp                     float64
	slowdown                                         float64
	phys                                             *physical
}

// newTiming applies slowdown to everything the server spends (engine steps,
// scheduling, the API frontend) but not to the network: a slower candidate
// server, whichever part of it is the bottleneck under the profile (the H100
// profile is frontend-bound at c=16 for checks, as typevet's run was).
func newTiming(p Profile, slowdown float64) *timing {
	s := func(d time.Duration) float64 { return d.Seconds() }
	k := func(d time.Duration) float64 { return d.Seconds() * slowdown }
	return &timing{
		stepBase: k(p.StepBase), stepTokenExp: p.StepTokenExponent, stepPerToken: k(p.StepPerToken),
		stepPerSeq: k(p.StepPerSeq), stepPerImage: k(p.StepPerImage),
		admitPerRequest: k(p.AdmitPerRequest), schedulePass: k(p.SchedulePass),
		network: s(p.Network), networkJitter: s(p.NetworkJitter), frontendBase: k(p.FrontendBase), frontendImageMiss: k(p.FrontendImageMiss),
		frontendImageHit: k(p.FrontendImageHit), frontendTokenize: k(p.FrontendTokenize),
		frontendPerInflight: k(p.FrontendPerInflight), frontendPerPromptToken: k(p.FrontendPerPromptToken),
		frontendPromptExp: p.FrontendPromptExponent,
		stepPerKVToken:    k(p.StepPerKVToken),
		ingestBase:        k(p.IngestBase), ingestPerPromptToken: k(p.IngestPerPromptToken),
		ingestPerInflight: k(p.IngestPerInflight), ingestExp: p.IngestInflightExponent,
		slowdown: slowdown,
		phys:     p.Physical.model(),
	}
}

// ingest is the latency between the frontend handing a request over and
// the engine core holding it: a pipeline stage that delays each request
// without holding up the next. vLLM's engine core does hash a prompt's
// blocks one request at a time (its input thread), but that is a small
// part of this fitted latency; priced as serial work the fitted per-token
// cost backs long prompts up behind each other where the published runs
// did not (docs/prediction.md, "The ingest is latency").
func (t *timing) ingest(promptTokens, load int) float64 {
	d := t.ingestBase + t.ingestPerPromptToken*float64(promptTokens)
	if t.ingestPerInflight > 0 && load > 0 {
		exp := t.ingestExp
		if exp == 0 {
			exp = 1
		}
		d += t.ingestPerInflight * math.Pow(float64(load), exp)
	}
	return d
}

// roundTrip is the network round trip for a uniform draw u in [0, 1):
// the fixed part plus an exponential jitter.
func (t *timing) roundTrip(u float64) float64 {
	return t.network - t.networkJitter*math.Log1p(-u)
}

// core is the engine's scheduler and KV cache as a state machine over
// explicit model time: continuous batching with a running set of at most
// MaxNumSeqs, a token budget per step with chunked prefill, FCFS admission
// that stops at the first request the KV cache cannot hold, recompute
// preemption of the newest running request when a running one cannot
// grow, a prefix cache over 16-token blocks and an encoder cache. It is
// not safe for concurrent use; Engine serialises access.
type core struct {
	p       Profile
	pool    *blockPool
	enc     *lru
	waiting []*request
	running []*request
	m       *metrics
}

func newCore(p Profile, m *metrics) *core {
	return &core{
		p:    p,
		pool: newBlockPool(p.NumGPUBlocks, p.EnablePrefixCaching),
		enc:  newLRU(max(1, p.EncoderCacheTokens/max(1, p.ImageTokenBudget))),
		m:    m,
	}
}

func (c *core) hasWork() bool { return len(c.waiting) > 0 || len(c.running) > 0 }

// add queues a request for scheduling.
func (c *core) add(r *request, now float64) {
	r.queued = now
	c.waiting = append(c.waiting, r)
}

// schedule picks the next step at model time now, or nil when there is
// nothing to run.
func (c *core) schedule(now float64) *step {
	s := &step{start: now}
	budget := c.p.MaxNumBatchedTokens
	enc := c.encoderBudget()
	c.scheduleRunning(s, &budget, &enc)
	// Then waiting requests, FCFS, unless this step had to preempt.
	if s.preempted == 0 {
		c.admitWaiting(s, now, &budget, &enc)
	}
	if s.preempted > 0 {
		c.m.preempted(s.preempted)
	}
	c.m.schedulerState(len(c.running), len(c.waiting), c.usage())
	if len(s.entries) == 0 {
		return nil
	}
	return s
}

// scheduleRunning gives the running requests their tokens first, in
// admission order, preempting the newest while the KV cache is short.
func (c *core) scheduleRunning(s *step, budget, enc *int) {
	bs := c.p.BlockSize
	for i := 0; i < len(c.running) && *budget > 0; i++ {
		r := c.running[i]
		drafts := c.drafts(r, *budget)
		n := min(r.numTokens()-r.numComputed+drafts, *budget)
		n = c.fitEncoder(r, r.numComputed, n, enc)
		if n <= 0 {
			continue
		}
		need := ceilDiv(r.numComputed+n, bs) - len(r.blocks)
		self := false
		for need > c.pool.numFree && !self {
			victim := c.running[len(c.running)-1]
			c.running = c.running[:len(c.running)-1]
			c.preempt(victim)
			s.preempted++
			self = victim == r
		}
		if self {
			break // r was the newest; nothing after it is left to run
		}
		c.grow(r, need)
		c.cacheFull(r, r.numComputed+n)
		c.encode(s, r, r.numComputed, r.numComputed+n)
		s.entries = append(s.entries, stepEntry{r, r.numComputed, n, drafts})
		s.tokens += n
		*budget -= n
	}
}

// admitWaiting admits waiting requests in arrival order (FCFS) while the
// batch, the token budget, the encoder and the KV cache take them; the
// first that does not fit stops admission (head-of-line).
func (c *core) admitWaiting(s *step, now float64, budget, enc *int) {
	bs := c.p.BlockSize
	for len(c.waiting) > 0 && len(c.running) < c.p.MaxNumSeqs && *budget > 0 {
		r := c.waiting[0]
		hits := c.prefixHits(r)
		cached := len(hits) * bs
		n := min(r.numTokens()-cached, *budget)
		if n = c.fitEncoder(r, cached, n, enc); n <= 0 {
			break // an image the encoder cannot take this step: wait (FCFS)
		}
		evictable := 0
		for _, b := range hits {
			if b.ref == 0 {
				evictable++
			}
		}
		need := ceilDiv(cached+n, bs) - len(hits)
		if need+evictable > c.pool.numFree {
			break // head-of-line: the KV cache cannot hold it yet
		}
		c.waiting = c.waiting[1:]
		for _, b := range hits {
			c.pool.touch(b)
		}
		r.blocks = append(r.blocks[:0], hits...)
		r.scanned, r.uncached = 0, r.uncached[:0]
		r.numComputed = cached
		c.grow(r, need)
		c.cacheFull(r, cached+n)
		if !r.everRan {
			r.everRan = true
			r.numCached = cached
			r.scheduled = now
			c.m.prefixQueried(r.promptLen(), cached)
		}
		c.encode(s, r, cached, cached+n)
		c.running = append(c.running, r)
		s.entries = append(s.entries, stepEntry{r, cached, n, 0})
		s.tokens += n
		*budget -= n
	}
}

// prefixHits is the longest run of cached blocks at the start of r's
// prompt, leaving at least one token to compute (vLLM recomputes the last
// token of a fully cached prompt).
func (c *core) prefixHits(r *request) []*block {
	limit := (r.numTokens() - 1) / c.p.BlockSize
	var hits []*block
	for b := 0; b < limit && b < len(r.hashes); b++ {
		blk, ok := c.pool.lookup(r.hashes[b])
		if !ok {
			break
		}
		hits = append(hits, blk)
	}
	return hits
}

func (c *core) grow(r *request, need int) {
	for range need {
		r.blocks = append(r.blocks, c.pool.allocate())
	}
}

// cacheFull registers r's full prompt blocks up to upto tokens, in block
// order. A block a duplicate hash kept out is retried on later calls (the
// duplicate may have been evicted since); a cached block stays cached while
// r holds it, so blocks below r.scanned need no second look. (Rescanning
// every block each step would cost a 128K-token prompt 8K map lookups per
// step.)
func (c *core) cacheFull(r *request, upto int) {
	if !c.pool.caching {
		return
	}
	limit := min(upto/c.p.BlockSize, len(r.hashes), len(r.blocks))
	keep := r.uncached[:0]
	for _, b := range r.uncached {
		if b < limit {
			c.pool.cache(r.blocks[b], r.hashes[b])
		}
		if !r.blocks[b].hashed {
			keep = append(keep, b)
		}
	}
	r.uncached = keep
	for b := r.scanned; b < limit; b++ {
		c.pool.cache(r.blocks[b], r.hashes[b])
		if !r.blocks[b].hashed {
			r.uncached = append(r.uncached, b)
		}
	}
	r.scanned = max(r.scanned, limit)
}

// encoderBudget is a step's vision-encoder budget in image tokens: vLLM's
// compute_mm_encoder_budget, max(max_num_encoder_input_tokens, the largest
// item), with max_num_encoder_input_tokens defaulting to
// max_num_batched_tokens.
func (c *core) encoderBudget() int {
	b := c.p.MaxNumEncoderInputTokens
	if b == 0 {
		b = c.p.MaxNumBatchedTokens
	}
	return max(b, c.p.ImageTokenBudget)
}

// fitEncoder is vLLM's _try_schedule_encoder_inputs
// (vllm/v1/core/sched/scheduler.py): the images whose placeholders overlap
// the tokens [lo, lo+n) and are neither encoded for this request nor in the
// encoder cache are charged to the step's encoder budget, in order; at the
// first that does not fit, the step computes the tokens before it only (0
// when the prompt is already past its start: nothing this step). It
// returns the tokens to compute.
func (c *core) fitEncoder(r *request, lo, n int, budget *int) int {
	var charged map[string]bool
	for i, im := range r.prompt.Images {
		if im.Offset >= lo+n {
			break
		}
		if im.Offset+im.Length <= lo || r.encoded[i] || c.enc.pos[im.Digest] || charged[im.Digest] {
			continue
		}
		if im.Length > *budget {
			return max(0, im.Offset-lo)
		}
		*budget -= im.Length
		if charged == nil {
			charged = map[string]bool{}
		}
		charged[im.Digest] = true
	}
	return n
}

// encode runs the vision encoder for images whose placeholders fall in the
// tokens [lo, hi) computed now, unless the encoder cache holds them.
func (c *core) encode(s *step, r *request, lo, hi int) {
	for i, im := range r.prompt.Images {
		if im.Offset >= hi || im.Offset+im.Length <= lo || r.encoded[i] {
			continue
		}
		if r.encoded == nil {
			r.encoded = map[int]bool{}
		}
		r.encoded[i] = true
		if !c.enc.get(im.Digest) {
			c.enc.put(im.Digest)
			s.images++
		}
	}
}

// preempt frees a running request's blocks and puts it back at the head of
// the waiting queue; it will recompute from whatever is still cached.
func (c *core) preempt(r *request) {
	c.free(r)
	r.numComputed = 0
	r.encoded = nil
	r.preemptions++
	c.waiting = append([]*request{r}, c.waiting...)
}

// free releases r's blocks, last block first, so that a prompt's tail is
// evicted before its head (as vLLM does).
func (c *core) free(r *request) {
	for i := len(r.blocks) - 1; i >= 0; i-- {
		c.pool.release(r.blocks[i])
	}
	r.blocks = nil
}

// complete applies a step that ended at model time end and returns the
// requests it finished.
func (c *core) complete(s *step, end float64) []*request {
	var done []*request
	it := iteration{}
	for _, e := range s.entries {
		r := e.r
		m := 1 // tokens the step yields for r
		if e.drafts > 0 {
			a := c.p.Speculative.accepted(r.gen.key, r.generated)
			c.m.specDrafted(e.drafts, a)
			r.numComputed = e.from + 1 + a // rejected drafts' KV is dropped
			m += a
		} else {
			r.numComputed += e.n
		}
		if r.numComputed < r.numTokens() {
			continue // a prefill chunk; more to come
		}
		if r.generated == 0 {
			r.firstToken, r.lastToken = end, end
			r.batchSeqs = len(s.entries)
			r.gen.settle(c.p.Looping, r.promptLen(), r.batchSeqs)
			it.firstTokens = append(it.firstTokens, r)
		} else {
			it.itls = append(it.itls, end-r.lastToken)
			r.lastToken = end
		}
		m = c.sample(r, m, end)
		it.generated += m
		c.cacheFull(r, r.numComputed)
		if r.finishReason == "" {
			continue
		}
		r.finished = end
		c.free(r)
		c.running = slices.DeleteFunc(c.running, func(x *request) bool { return x == r })
		done = append(done, r)
	}
	it.finished = done
	c.m.iterate(it)
	c.m.schedulerState(len(c.running), len(c.waiting), c.usage())
	return done
}

// sample appends up to m tokens sampled at model time end to r, stopping
// at the first that ends it (vLLM's check_stop per token: the length caps
// first, then EOS, which min_tokens holds back: gen.eosAt already respects
// it), and returns how many it kept.
func (c *core) sample(r *request, m int, end float64) int {
	for k := range m {
		r.generated++
		if r.progress != nil {
			r.times = append(r.times, end)
		}
		switch {
		case r.failAt > 0 && r.generated >= r.failAt:
			r.finishReason = "error"
		case r.generated >= r.maxTokens || r.numTokens() >= c.p.MaxModelLen:
			r.finishReason = "length"
		case r.gen.eosAt > 0 && r.generated == r.gen.eosAt:
			r.finishReason = "stop"
		default:
			continue
		}
		return k + 1
	}
	return m
}

// drafts is the speculative tokens r verifies in its next step: k while it
// decodes, fewer near its max_tokens or max_model_len (drafts past them
// would be thrown away), none while it prefills or without speculative
// decoding.
func (c *core) drafts(r *request, budget int) int {
	k := c.p.Speculative.k()
	if k == 0 || r.generated == 0 || r.numComputed != r.numTokens()-1 {
		return 0
	}
	return max(0, min(k, r.maxTokens-r.generated-1, c.p.MaxModelLen-r.numTokens()-1, budget-1))
}

// abort drops a request whose client went away.
func (c *core) abort(r *request, now float64) bool {
	in := false
	c.waiting = slices.DeleteFunc(c.waiting, func(x *request) bool {
		if x == r {
			in = true
		}
		return x == r
	})
	c.running = slices.DeleteFunc(c.running, func(x *request) bool {
		if x == r {
			in = true
		}
		return x == r
	})
	if !in {
		return false
	}
	c.free(r)
	r.finishReason = "abort"
	r.finished = now
	c.m.iterate(iteration{finished: []*request{r}})
	c.m.schedulerState(len(c.running), len(c.waiting), c.usage())
	return true
}

func (c *core) usage() float64 {
	return float64(c.pool.used()) / float64(c.pool.n)
}

// iteration is what one step produced, for the metrics.
type iteration struct {
	firstTokens []*request
	generated   int
	itls        []float64
	finished    []*request
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
