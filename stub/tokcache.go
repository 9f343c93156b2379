package stub

import "sync"

// Long prompts are tokenized once. The speed matrix sends one prompt of up
// to a million tokens from every stream of a cell, and the twin's
// tokenizer takes about 1.6 s of CPU for 4 MB of text: without a cache a
// 128-stream cell at 1M tokens would spend minutes tokenizing what one
// call already did. Tokenizing is a pure function of the text, so the
// cache is shared by every twin in the process.

// longText is the shortest text part whose ids are cached (shorter ones
// tokenize faster than a cache would pay for itself in memory).
const longText = 64 << 10

// textCache holds the token ids of the most recent long texts, at most
// max ids in all (the oldest go first).
type textCache struct {
	mu    sync.Mutex
	max   int
	ids   map[string][]int
	order []string
	held  int
}

var longTexts = &textCache{max: 32 << 20, ids: map[string][]int{}}

// tokenIDs is text's token ids, from the cache when it holds them. The
// slice is shared: callers copy out of it, never into it.
func (c *textCache) tokenIDs(text string) []int {
	c.mu.Lock()
	ids, ok := c.ids[text]
	c.mu.Unlock()
	if ok {
		return ids
	}
	toks := Tokenize(text)
	ids = make([]int, len(toks))
	for i, t := range toks {
		ids[i] = t.ID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.ids[text]; !ok && len(ids) <= c.max {
		for c.held+len(ids) > c.max && len(c.order) > 0 {
			old := c.order[0]
			c.order = c.order[1:]
			c.held -= len(c.ids[old])
			delete(c.ids, old)
		}
		c.ids[text] = ids
		c.order = append(c.order, text)
		c.held += len(ids)
	}
	return ids
}
