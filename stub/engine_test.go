package stub

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// TestTokenizer pins the twin's tokenizer: single-token controls with
// fixed Gemma-like ids, "10" as two tokens, a leading space on words.
func TestTokenizer(t *testing.T) {
	for i, c := range []string{"0", "1", "9", "A", "Z"} {
		toks := Tokenize(c)
		require.Len(t, toks, 1, c)
		id, ok := ControlTokenID(c)
		require.True(t, ok)
		require.Equal(t, id, toks[0].ID, c)
		require.Equal(t, []int{236800, 236801, 236809, 236810, 236835}[i], id, c)
	}
	require.Len(t, Tokenize("10"), 2, `"10" is two tokens, as on Gemma`)
	toks := Tokenize("Compare the check")
	require.Equal(t, []string{"Compare", "▁the", "▁check"}, []string{toks[0].Piece, toks[1].Piece, toks[2].Piece})
	require.Equal(t, Tokenize("check"), Tokenize("check"), "deterministic")
	require.NotEqual(t, Tokenize("check")[0].ID, Tokenize(" check")[0].ID, "a leading space makes another token")
	// payee _ matches : ▁$ 1 , 2 3 4 . 5 6 \n\n Options : \n
	require.Len(t, Tokenize("payee_matches: $1,234.56\n\nOptions:\n"), 17)
}

// TestImageTokens pins the image placeholder count: the largest grid with
// the image's aspect ratio inside Gemma 4's budget of 280.
func TestImageTokens(t *testing.T) {
	for _, tc := range []struct{ w, h, want int }{
		{250, 250, 256}, {1000, 440, 275}, {440, 1000, 275}, {896, 896, 256}, {2000, 100, 222}, {1, 1, 256},
	} {
		got := ImageTokens(tc.w, tc.h, DefaultImageTokenBudget)
		require.Equal(t, tc.want, got, "%dx%d", tc.w, tc.h)
		require.LessOrEqual(t, got, DefaultImageTokenBudget)
	}
}

// TestPromptSizes shows typevet's prompts come out at the receipts' sizes
// (input_tokens per judgment: checks 1909–1929, faces 1978, signatures
// 1975–2044+) within 2%, and that prefix sharing is per item.
func TestPromptSizes(t *testing.T) {
	p := ProfileH100Gemma4()
	for _, tc := range []struct {
		name     string
		items    [][]simReq
		perJudge float64
	}{
		{"checks", simItems(t, twintest.CompactChecks(t), p), 1917},
		{"faces", simItems(t, lookalikeFaces(t, 10), p), 1978},
		{"signatures", simItems(t, lookalikeSignatures(t, 10), p), 2045},
	} {
		total := 0
		for _, it := range tc.items {
			for _, r := range it {
				total += len(r.p.Tokens)
			}
		}
		mean := float64(total) / float64(len(tc.items))
		require.InEpsilon(t, tc.perJudge, mean, 0.02, "%s: %.1f tokens per judgment", tc.name, mean)
		a, b := tc.items[0][0], tc.items[0][1]
		shared := 0
		for shared < len(a.hashes) && shared < len(b.hashes) && a.hashes[shared] == b.hashes[shared] {
			shared++
		}
		require.Positive(t, shared, "%s: questions of one item share blocks", tc.name)
		other := tc.items[1][0]
		require.NotEqual(t, a.hashes[0], other.hashes[0], "%s: another item's image makes another first block", tc.name)
	}
}

// TestCountOptions reads the option count from typevet's field block, so
// both scoring modes see the same candidates.
func TestCountOptions(t *testing.T) {
	for _, q := range checksSpec().Questions {
		require.Equal(t, len(q.Options), countOptions("state\n\n"+q.FieldBlock()), q.ID)
	}
	require.Zero(t, countOptions("no options here"))
}

// TestBlockPool pins the KV block manager: LRU eviction of freed blocks
// from the head, hits that take blocks off the free queue, first-writer
// caching, and a reset refused while blocks are held.
func TestBlockPool(t *testing.T) {
	p := newBlockPool(4, true)
	a, b := p.allocate(), p.allocate()
	p.cache(a, 1)
	p.cache(b, 2)
	require.Equal(t, 2, p.numFree)
	require.False(t, p.reset(), "blocks are held")
	p.release(b) // freed tail first, as a request frees its blocks in reverse
	p.release(a)
	require.Equal(t, 4, p.numFree)
	hit, ok := p.lookup(1)
	require.True(t, ok)
	p.touch(hit)
	require.Equal(t, 3, p.numFree, "a hit on a free block takes it off the queue")
	p.release(hit)
	// The two never-used blocks go first, then the least recently freed.
	p.allocate()
	p.allocate()
	p.allocate()
	_, ok = p.lookup(2)
	require.False(t, ok, "block 2 was freed first and is evicted first")
	_, ok = p.lookup(1)
	require.True(t, ok, "block 1 was touched again and survives")
	c := p.allocate()
	require.Same(t, a, c)
	_, ok = p.lookup(1)
	require.False(t, ok)
	require.Nil(t, p.allocate(), "no blocks left")

	q := newBlockPool(2, false)
	x := q.allocate()
	q.cache(x, 7)
	_, ok = q.lookup(7)
	require.False(t, ok, "prefix caching off: nothing is cached")
}

// TestCorePrefixCache drives the core directly: the second request with
// the same prompt hits every full block but the last token's, and a
// different image breaks the chain at the image.
func TestCorePrefixCache(t *testing.T) {
	prof := ProfileFast()
	m := newMetrics(prof, prof.Model, fixedTime)
	c := newCore(prof, m)
	set := lookalikeChecks(t, 1)
	reqs := simItems(t, set, prof)
	run := func(sr simReq, now float64) *request {
		r := &request{prompt: sr.p, hashes: sr.hashes, maxTokens: 1, arrival: now}
		c.add(r, now)
		st := c.schedule(now)
		require.NotNil(t, st)
		done := c.complete(st, now+1)
		require.Len(t, done, 1)
		return r
	}
	first := run(reqs[0][0], 0)
	require.Zero(t, first.numCached)
	again := run(reqs[0][0], 2)
	require.Equal(t, (len(reqs[0][0].p.Tokens)-1)/16*16, again.numCached, "all full blocks but the last token's")
	other := run(reqs[1][0], 4) // same text, another image
	require.Less(t, other.numCached, reqs[1][0].p.Images[0].Offset+1, "the chain breaks at the image")
	require.Zero(t, c.pool.used(), "finished requests hold no blocks")
}
