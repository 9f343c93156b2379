package stub

import (
	"math"
)

// LegacyVersion is what /version reports for Config.Legacy: a release
// before logprob_token_ids (vLLM PR #43463, merged 2026-07-13).
const LegacyVersion = "0.25.1+vetbench.twin"

// offFormatDraw draws whether content answers off-format.
func offFormatDraw(key []byte, share float64) bool {
	if share <= 0 {
		return false
	}
	return newRNG(key, []byte("off-format")).float() < share
}

// makeOffFormat lifts a filler token above every candidate, so greedy
// sampling picks it: the candidates' logits relative to each other are
// unchanged, so is the softmax over them.
func (d *distribution) makeOffFormat(key []byte) {
	if len(d.cand) == 0 {
		return // no options: the answer is prose already
	}
	top := math.Inf(-1)
	for _, v := range d.cand {
		top = max(top, v)
	}
	d.others[fillerID(fillerTexts[0])] = top + newRNG(key, []byte("off-format lift")).between(0.5, 3)
}
