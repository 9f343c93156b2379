package stub

import (
	"encoding/binary"
	"fmt"
)

// TokenEOS is the twin's end-of-sequence token (Gemma's <eos> id). It is
// counted in completion_tokens, as vLLM counts it, and writes no text.
const TokenEOS = 1

// genWords is the fixed vocabulary generated text is drawn from. Each word
// has at most wordChunk letters, so with its leading space it is one token
// of the twin's tokenizer: a client that re-tokenizes the output counts
// what usage says.
var genWords = []string{
	"the", "model", "server", "token", "engine", "batch", "cache", "step",
	"time", "queue", "request", "stream", "output", "prefill", "decode", "kernel",
	"memory", "weights", "layer", "block", "prefix", "image", "vision", "text",
	"answer", "check", "result", "value", "signal", "window", "context", "history",
	"during", "after", "before", "while", "because", "which", "every", "other",
	"first", "second", "third", "early", "later", "often", "rarely", "always",
	"large", "small", "quick", "steady", "careful", "simple", "useful", "known",
	"number", "theory", "proof", "method", "figure", "table", "chapter", "record",
	"ancient", "modern", "greek", "indian", "arabic", "chinese", "europe", "school",
	"scholar", "treatise", "algebra", "geometry", "calculus", "series", "circle", "square",
	"prime", "ratio", "measure", "angle", "line", "point", "plane", "space",
	"and", "of", "in", "to", "with", "from", "into", "over",
	"is", "was", "were", "became", "showed", "found", "used", "made",
	"new", "old", "great", "many", "few", "whole", "part", "same",
	"then", "thus", "also", "still", "again", "further", "here", "there",
	"work", "idea", "rule", "form", "sign", "count", "sum", "limit",
}

var (
	genIDs  []int          // token id of " word", by genWords index
	genText map[int]string // token id -> text
)

func init() {
	genText = make(map[int]string, len(genWords))
	taken := map[int]string{}
	for _, t := range fillerTexts {
		taken[fillerID(t)] = t
	}
	for _, w := range genWords {
		toks := Tokenize(" " + w)
		if len(toks) != 1 {
			panic(fmt.Sprintf("stub: generated word %q is %d tokens", w, len(toks)))
		}
		id := toks[0].ID
		if prev, dup := taken[id]; dup {
			panic(fmt.Sprintf("stub: generated word %q shares token id %d with %q", w, id, prev))
		}
		taken[id] = w
		genIDs = append(genIDs, id)
		genText[id] = " " + w
	}
}

// Natural lengths: without ignore_eos a request's output ends with EOS as
// the minNatural-th to maxNatural-th token, by a hash of its content.
const (
	minNatural = 32
	maxNatural = 511
)

// generation is what the twin's model writes for one request after its
// first token (which comes from the answer model): words drawn from
// genWords by a hash of the content and the position, EOS at the
// request's natural length unless ignore_eos, and, when the loop fault
// fired, a cycle of period words repeated from the second token on.
type generation struct {
	key []byte
	// eosAt is the output length (EOS included) at which the model samples
	// EOS; 0 = never (ignore_eos).
	eosAt int
	// period > 0 makes the text loop: from loopAt on (the loop fault: from
	// the second token), the words repeat with this period (loops.go).
	period, loopAt int
	// thinkAt > 0 is the position of the end-of-thinking token of a
	// request that thinks (reasoning.go): reasoning before, content after.
	thinkAt int
}

// newGeneration is a request's generation: content key, ignore_eos,
// min_tokens (EOS is not sampled before it), and the loop fault.
func newGeneration(key []byte, ignoreEOS bool, minTokens int, loop bool) generation {
	g := generation{key: key}
	r := newRNG(key, []byte("natural length"))
	if !ignoreEOS {
		g.eosAt = max(minNatural+int(r.next()%uint64(maxNatural-minNatural+1)), minTokens+1)
	}
	if loop {
		g.period = 7 + int(r.next()%13)
	}
	return g
}

// naturalLength is the output length of the request's EOS, or 0.
func (g generation) naturalLength() int { return g.eosAt }

// word is the genWords index written at position pos (≥ 1).
func (g generation) word(pos int) int {
	if start := max(1, g.loopAt); g.period > 0 && pos >= start {
		pos = start + (pos-start)%g.period
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(pos))
	return int(newRNG(g.key, []byte("word"), b[:]).next() % uint64(len(genWords)))
}

// token is the token sampled at position pos ≥ 1: EOS at the natural
// length, a word before it. (An output cut short by max_tokens never
// reaches its EOS position.)
func (g generation) token(pos int) int {
	if g.eosAt > 0 && pos == g.eosAt-1 {
		return TokenEOS
	}
	if g.thinkAt > 0 && pos == g.thinkAt {
		return TokenThinkEnd
	}
	return genIDs[g.word(pos)]
}

// logprobs is the next-token distribution at position pos ≥ 1: the
// sampled token well ahead of four other words (the twin is greedy).
func (g generation) logprobs(pos int) map[int]float64 {
	top := g.token(pos)
	d := distribution{others: map[int]float64{top: 0}, restLog: -4}
	for k := 1; len(d.others) < 5; k++ {
		id := genIDs[(g.word(pos)+k*37)%len(genIDs)]
		if _, ok := d.others[id]; !ok {
			d.others[id] = -1.5 - 1.1*float64(k)
		}
	}
	return d.logprobs()
}

// text is what token id writes in the output (special tokens write
// nothing, as vLLM's detokenizer skips them).
func genTokenText(id int) (string, bool) {
	if id == TokenEOS || id == TokenThinkEnd {
		return "", true
	}
	s, ok := genText[id]
	return s, ok
}
