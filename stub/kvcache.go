package stub

// block is one KV-cache block of blockSize token slots.
type block struct {
	id     int
	hash   uint64
	hashed bool // hash is valid and the block is in the prefix cache
	ref    int  // requests holding the block
	// free-queue links; a block with ref 0 sits in the queue, least
	// recently freed first, and is evicted from the head.
	prev, next *block
	queued     bool
}

// blockPool is vLLM's KV block manager in miniature: a fixed number of
// blocks, a free queue in LRU order (freed blocks go to the tail,
// allocation pops the head and evicts its cached hash), and a map from
// block hash to cached block for prefix caching.
type blockPool struct {
	blocks  []block
	head    block // sentinel of the free queue
	numFree int
	cached  map[uint64]*block
	caching bool
}

func newBlockPool(n int, caching bool) *blockPool {
	p := &blockPool{blocks: make([]block, n), cached: map[uint64]*block{}, caching: caching}
	p.head.next, p.head.prev = &p.head, &p.head
	for i := range p.blocks {
		p.blocks[i].id = i
		p.pushTail(&p.blocks[i])
	}
	return p
}

func (p *blockPool) pushTail(b *block) {
	b.prev, b.next = p.head.prev, &p.head
	p.head.prev.next = b
	p.head.prev = b
	b.queued = true
	p.numFree++
}

func (p *blockPool) unlink(b *block) {
	b.prev.next, b.next.prev = b.next, b.prev
	b.prev, b.next, b.queued = nil, nil, false
	p.numFree--
}

// lookup returns the cached block of hash, if any.
func (p *blockPool) lookup(hash uint64) (*block, bool) {
	if !p.caching {
		return nil, false
	}
	b, ok := p.cached[hash]
	return b, ok
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
	b := p.head.next
	if b == &p.head {
		return nil
	}
	p.unlink(b)
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
	p.cached[hash] = b
}

// used is the number of blocks some request holds.
func (p *blockPool) used() int { return len(p.blocks) - p.numFree }

// reset drops every cached hash; it refuses (false) while any block is
// held, as vLLM's reset_prefix_cache does.
func (p *blockPool) reset() bool {
	if p.used() > 0 {
		return false
	}
	for h, b := range p.cached {
		b.hashed = false
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
