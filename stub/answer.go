package stub

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"sort"
	"sync"
)

// MinLogprob is vLLM's floor for a returned logprob.
const MinLogprob = -9999.0

// DefaultBatchNoise is the default bound on the batch noise added to each
// candidate logit. A logit gap then moves by at most 2× this within one run
// and 4× between two runs, so a Noul's P(true) moves by at most this much
// (|Δp| ≤ Δgap/4): 0.0008 < the 0.001 that typevet's run plan allows.
const DefaultBatchNoise = 0.0008

// Spread shapes the answer model's confidence: Confident answers have a
// winner ahead by 8–20 logits, NearTie ones a runner-up 5e-5–8e-4 logits
// behind (close enough for the default batch noise to swap them about one
// time in four), the rest a runner-up 0.3–3 logits behind.
type Spread struct {
	Confident float64
	NearTie   float64
}

// DefaultSpread is most answers confident, some moderate, a few near-tied.
var DefaultSpread = Spread{Confident: 0.85, NearTie: 0.05}

// fillerTexts are non-control tokens that hold the probability mass the
// candidates do not (an LLM's next-token distribution is never only the
// options). Each is one token of the twin's tokenizer.
var fillerTexts = []string{"The", "Answer", "Control", "Based", "Looking", "Option", "yes", "no", "\n", "\n\n", " ", "*"}

func fillerID(text string) int { return fillerIDs()[text] }

// fillerIDs tokenizes the filler texts once: the answer model reads them
// for every first token, and a stream's first chunk waits on it.
var fillerIDs = sync.OnceValue(func() map[string]int {
	m := make(map[string]int, len(fillerTexts))
	for _, t := range fillerTexts {
		m[t] = Tokenize(t)[0].ID
	}
	return m
})

// distribution is one request's next-token logits: the candidates
// (controls 0..n-1 in decision order), other enumerated tokens, and the
// log-mass of everything not enumerated.
type distribution struct {
	cand    []float64       // logits of controls 0..n-1
	others  map[int]float64 // logits of fillers and non-candidate controls
	restLog float64         // log of the mass of the unenumerated vocabulary
	// replayed answers carry the recorded distribution: no noise, no rest.
	replayed bool
}

// rng is splitmix64: a tiny deterministic generator seeded from a hash.
type rng struct{ s uint64 }

func newRNG(parts ...[]byte) *rng {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return &rng{s: binary.LittleEndian.Uint64(h.Sum(nil))}
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float is uniform in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

func (r *rng) between(lo, hi float64) float64 { return lo + (hi-lo)*r.float() }

// contentKey identifies a request's content: its user text and images.
// Same prompt and images, same answer.
func contentKey(p prompt) []byte {
	h := sha256.New()
	h.Write([]byte(p.Text))
	for _, im := range p.Images {
		h.Write([]byte{0})
		h.Write([]byte(im.Digest))
	}
	return h.Sum(nil)
}

// modelDistribution is the answer model: deterministic logits over n
// candidates from the content key, shaped by the spread.
func modelDistribution(key []byte, n int, sp Spread) distribution {
	g := newRNG(key, []byte("answer"))
	d := distribution{cand: make([]float64, n), others: make(map[int]float64, len(fillerTexts)+MaxControls)}
	if n > 0 {
		win := int(g.next() % uint64(n))
		u := g.float()
		runner := win
		if n > 1 {
			runner = (win + 1 + int(g.next()%uint64(n-1))) % n
		}
		for i := range d.cand {
			switch {
			case i == win:
				d.cand[i] = 0
			case u < sp.Confident:
				d.cand[i] = -g.between(8, 20)
			case i == runner && u < sp.Confident+sp.NearTie:
				d.cand[i] = -g.between(5e-5, 8e-4)
			case u < sp.Confident+sp.NearTie:
				d.cand[i] = -g.between(4, 12)
			case i == runner:
				d.cand[i] = -g.between(0.3, 3)
			default:
				d.cand[i] = -g.between(6, 16)
			}
		}
	}
	// Fillers and the other controls rank below every candidate, so that
	// a top-k of at least n holds all candidates and both scoring modes
	// see the same answer; the unenumerated vocabulary holds the rest of
	// the mass.
	floor := 0.0
	for _, v := range d.cand {
		floor = min(floor, v)
	}
	for i, text := range fillerTexts {
		if n == 0 && i == 0 {
			d.others[fillerID(text)] = 0 // no options: the answer is prose
			continue
		}
		d.others[fillerID(text)] = floor - g.between(1, 6)
	}
	for i := n; i < MaxControls; i++ {
		d.others[controlID(i)] = floor - g.between(8, 20)
	}
	d.restLog = -g.between(2, 5)
	return d
}

// MaxControls is how many single-character controls exist.
const MaxControls = 36

// addNoise perturbs each candidate logit by up to ±amp, as a function of
// the content and the batch the prefill ran in; a batch of one (c=1) adds
// nothing, so answers alone on the engine are exactly the model's.
func (d *distribution) addNoise(key []byte, batchSeqs int, amp float64) {
	if amp == 0 || batchSeqs <= 1 || d.replayed {
		return
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(batchSeqs))
	g := newRNG(key, []byte("batch"), b[:])
	for i := range d.cand {
		d.cand[i] += amp * (2*g.float() - 1)
	}
}

// logprobs normalises the distribution over the whole vocabulary and
// returns the log-probability of every enumerated token (vLLM's raw
// logprobs, floored at MinLogprob).
func (d distribution) logprobs() map[int]float64 {
	top := d.restLog
	for _, v := range d.cand {
		top = max(top, v)
	}
	for _, v := range d.others {
		top = max(top, v)
	}
	sum := math.Exp(d.restLog - top)
	if d.replayed {
		sum = 0
	}
	for _, v := range d.cand {
		sum += math.Exp(v - top)
	}
	// Sum in id order: a floating-point sum depends on its order, and the
	// same content must give bit-identical logprobs.
	ids := make([]int, 0, len(d.others))
	for id := range d.others {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		sum += math.Exp(d.others[id] - top)
	}
	lse := top + math.Log(sum)
	out := make(map[int]float64, len(d.cand)+len(d.others))
	for id, v := range d.others {
		out[id] = max(v-lse, MinLogprob)
	}
	for i, v := range d.cand {
		out[controlID(i)] = max(v-lse, MinLogprob)
	}
	return out
}

// background is the logprob of a token the distribution does not
// enumerate: deterministic, and far below any enumerated one.
func background(key []byte, id int) float64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(id))
	return -30 - newRNG(key, []byte("background"), b[:]).between(0, 20)
}

// ranked is a distribution's tokens, most probable first (ties by id).
type ranked struct {
	id int
	lp float64
}

// greedy is rank(lps)[0] without the sort: the sampled token when no
// logprobs are asked for.
func greedy(lps map[int]float64) ranked {
	best := ranked{lp: math.Inf(-1)}
	for id, lp := range lps {
		if lp > best.lp || (lp == best.lp && id < best.id) {
			best = ranked{id, lp}
		}
	}
	return best
}

func rank(lps map[int]float64) []ranked {
	out := make([]ranked, 0, len(lps))
	for id, lp := range lps {
		out = append(out, ranked{id, lp})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].lp != out[j].lp {
			return out[i].lp > out[j].lp
		}
		return out[i].id < out[j].id
	})
	return out
}

// tokenText spells a token id of the twin's vocabulary.
func tokenText(id int) string {
	if s, ok := controlText(id); ok {
		return s
	}
	if s, ok := genTokenText(id); ok {
		return s
	}
	for _, text := range fillerTexts {
		if fillerID(text) == id {
			return text
		}
	}
	return "<unk>"
}
