package stub

// block is one KV-cache block of blockSize token slots. It holds no
// pointers (the free queue links are indices), so the pool, a million
// blocks for a large GPU, is memory the garbage collector never scans: a
// pointer-linked pool cost a 2-core machine a quarter of its CPU in GC
// marking while a time-scaled twin served, and its latency with it.
type block struct {
	hash   uint64
	id     int32
	ref    int32 // requests holding the block
	hashed bool  // hash is valid and the block is in the prefix cache
	queued bool
	// free-queue links (indices into the pool; the sentinel is the last);
	// a block with ref 0 sits in the queue, least recently freed first,
	// and is evicted from the head.
	prev, next int32
}

// blockPool is vLLM's KV block manager in miniature: a fixed number of
// blocks, a free queue in LRU order (freed blocks go to the tail,
// allocation pops the head and evicts its cached hash), and a map from
// block hash to cached block for prefix caching.
//
// The free queue starts as every block in id order; the blocks never yet
// allocated (ids virgin and up) are that queue's head, in order, and need
// no links, and blocks are allocated in pages as they are first used, so
// a pool costs nothing to build whatever its size.
type blockPool struct {
	pages    [][]block // blockPage blocks each, made as blocks are first used
	sentinel block     // the linked free queue's; its id is n
	n        int
	virgin   int // blocks [virgin, n) were never allocated
	numFree  int
	cached   map[uint64]int32
	caching  bool
}

// blockPage is how many blocks a page of the pool holds.
const blockPage = 4096

func newBlockPool(n int, caching bool) *blockPool {
	p := &blockPool{n: n, numFree: n, cached: map[uint64]int32{}, caching: caching}
	p.pages = make([][]block, ceilDiv(n, blockPage))
	p.sentinel.id, p.sentinel.prev, p.sentinel.next = int32(n), int32(n), int32(n)
	return p
}

// block is block i (n: the sentinel).
func (p *blockPool) block(i int32) *block {
	if int(i) == p.n {
		return &p.sentinel
	}
	pg := p.pages[i/blockPage]
	if pg == nil {
		pg = make([]block, blockPage)
		p.pages[i/blockPage] = pg
	}
	return &pg[i%blockPage]
}

// head is the linked free queue's sentinel.
func (p *blockPool) head() *block { return &p.sentinel }

func (p *blockPool) pushTail(b *block) {
	h := p.head()
	b.prev, b.next = h.prev, h.id
	p.block(h.prev).next = b.id
	h.prev = b.id
	b.queued = true
	p.numFree++
}

func (p *blockPool) unlink(b *block) {
	p.block(b.prev).next, p.block(b.next).prev = b.next, b.prev
	b.queued = false
	p.numFree--
}

// lookup returns the cached block of hash, if any.
func (p *blockPool) lookup(hash uint64) (*block, bool) {
	if !p.caching {
		return nil, false
	}
	i, ok := p.cached[hash]
	if !ok {
		return nil, false
	}
	return p.block(i), true
}

// touch takes a reference on a cached block (a prefix-cache hit), taking
// it off the free queue when nobody held it.
func (p *blockPool) touch(b *block) {
	if b.queued {
		p.unlink(b)
	}
	b.ref++
}

// allocate pops the least recently freed block, evicting its cached hash.
func (p *blockPool) allocate() *block {
	var b *block
	switch h := p.head(); {
	case p.virgin < p.n:
		b = p.block(int32(p.virgin))
		b.id = int32(p.virgin)
		p.virgin++
		p.numFree--
	case h.next == h.id:
		return nil
	default:
		b = p.block(h.next)
		p.unlink(b)
	}
	if b.hashed {
		delete(p.cached, b.hash)
		b.hashed = false
	}
	b.ref = 1
	return b
}

// release drops one reference; a block nobody holds goes to the tail of
// the free queue but keeps its hash until it is evicted.
func (p *blockPool) release(b *block) {
	b.ref--
	if b.ref == 0 {
		p.pushTail(b)
	}
}

// cache registers a full block under its hash (first writer wins, as in
// vLLM: a duplicate block stays uncached).
func (p *blockPool) cache(b *block, hash uint64) {
	if !p.caching || b.hashed {
		return
	}
	if _, dup := p.cached[hash]; dup {
		return
	}
	b.hash, b.hashed = hash, true
	p.cached[hash] = b.id
}

// used is the number of blocks some request holds.
func (p *blockPool) used() int { return p.n - p.numFree }

// reset drops every cached hash; it refuses (false) while any block is
// held, as vLLM's reset_prefix_cache does.
func (p *blockPool) reset() bool {
	if p.used() > 0 {
		return false
	}
	for h, i := range p.cached {
		p.block(i).hashed = false
		delete(p.cached, h)
	}
	return true
}

// lru is a small LRU set of string keys with a fixed capacity in items
// (the multimodal processor cache and the encoder cache).
type lru struct {
	cap   int
	order []string // least recent first
	pos   map[string]bool
}

func newLRU(capacity int) *lru { return &lru{cap: capacity, pos: map[string]bool{}} }

// get reports whether key is present and marks it most recent.
func (c *lru) get(key string) bool {
	if !c.pos[key] {
		return false
	}
	c.bump(key)
	return true
}

func (c *lru) bump(key string) {
	for i, k := range c.order {
		if k == key {
			c.order = append(append(c.order[:i:i], c.order[i+1:]...), key)
			return
		}
	}
}

// put inserts key as most recent, evicting the least recent when full.
func (c *lru) put(key string) {
	if c.cap <= 0 {
		return
	}
	if c.pos[key] {
		c.bump(key)
		return
	}
	if len(c.order) >= c.cap {
		delete(c.pos, c.order[0])
		c.order = c.order[1:]
	}
	c.order = append(c.order, key)
	c.pos[key] = true
}

func (c *lru) reset() {
	c.order = nil
	c.pos = map[string]bool{}
}
