package stub

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/vetbench/vetbench/judgments"
)

// Replay serves recorded answer distributions, keyed by the item and
// question of each request's X-Request-Id (judgments.RequestID). A
// replayed answer's candidate logprobs are log(p) of the recorded
// probabilities, so a client's softmax gives back the recorded
// probabilities. Answers recorded without probabilities (e.g. typevet's
// Score distributions) and requests the recording does not cover fall back
// to the answer model; the twin counts both (Stats). Build one with
// NewReplay, from answers such as receipts/replay reads from a receipt.
type Replay struct {
	// Source names the recording (e.g. "typevet:checks"), for logs.
	Source  string
	answers map[replayKey]replayed
	// Omitted counts recorded answers that carry no probabilities and could
	// not be reconstructed; they fall back to the answer model.
	Omitted int
	// Reconstructed counts value-only Score answers (typevet publishes the
	// expected level and the most probable level, not the distribution)
	// served as a stand-in distribution with exactly that expected level and
	// that most probable level (see scoreStandIn).
	Reconstructed int
}

type replayKey struct{ item, question string }

type replayed struct {
	labels []string
	probs  []float64 // decision order
}

// NewReplay indexes recorded answers for replay: answers maps an item id to
// the answers recorded for that item's questions. A malformed answer (a
// label without a probability, a probability that is not a probability, a
// question answered twice) is an error naming its item and question.
func NewReplay(source string, answers map[string][]judgments.Answer) (Replay, error) {
	rp := Replay{Source: source, answers: map[replayKey]replayed{}}
	// Items in id order: the first error reported does not depend on map order.
	items := make([]string, 0, len(answers))
	for id := range answers {
		items = append(items, id)
	}
	slices.Sort(items)
	for _, id := range items {
		for _, a := range answers[id] {
			key := replayKey{id, a.Question}
			where := fmt.Sprintf("replay: item %q question %q", id, a.Question)
			if _, dup := rp.answers[key]; dup {
				return Replay{}, fmt.Errorf("%s: answered twice", where)
			}
			if len(a.Probabilities) == 0 {
				if rec, ok := scoreStandIn(a); ok {
					rp.answers[key] = rec
					rp.Reconstructed++
					continue
				}
				rp.Omitted++
				continue
			}
			if len(a.Labels) == 0 {
				return Replay{}, fmt.Errorf("%s: probabilities without a label order", where)
			}
			if len(a.Labels) > MaxControls {
				return Replay{}, fmt.Errorf("%s: %d labels, at most %d controls exist", where, len(a.Labels), MaxControls)
			}
			rec := replayed{labels: a.Labels, probs: make([]float64, len(a.Labels))}
			for i, l := range a.Labels {
				p, ok := a.Probabilities[l]
				if !ok {
					return Replay{}, fmt.Errorf("%s: no probability for label %q", where, l)
				}
				if math.IsNaN(p) || p < 0 || p > 1 {
					return Replay{}, fmt.Errorf("%s: label %q has probability %v", where, l, p)
				}
				rec.probs[i] = p
			}
			if len(a.Probabilities) != len(a.Labels) {
				return Replay{}, fmt.Errorf("%s: %d probabilities for %d labels", where, len(a.Probabilities), len(a.Labels))
			}
			rp.answers[key] = rec
		}
	}
	return rp, nil
}

// Len is the number of replayable answers.
func (rp Replay) Len() int { return len(rp.answers) }

// replayOutcome says what replay did for one request.
type replayOutcome int

const (
	replayNone     replayOutcome = iota // replay off
	replayServed                        // recorded distribution served
	replayMissing                       // no recorded answer for the request id
	replayMismatch                      // recorded labels ≠ the prompt's options
)

// lookup returns the recorded distribution for a request id whose prompt
// has n options.
func (rp *Replay) lookup(requestID string, n int) (distribution, replayOutcome) {
	if rp == nil || rp.answers == nil {
		return distribution{}, replayNone
	}
	item, question, ok := judgments.ParseRequestID(requestID)
	if !ok {
		return distribution{}, replayMissing
	}
	rec, ok := rp.answers[replayKey{item, question}]
	if !ok {
		return distribution{}, replayMissing
	}
	if len(rec.probs) != n {
		return distribution{}, replayMismatch
	}
	d := distribution{cand: make([]float64, n), others: map[int]float64{}, replayed: true}
	for i, p := range rec.probs {
		d.cand[i] = max(math.Log(p), MinLogprob)
	}
	return d, replayServed
}

// scoreStandIn rebuilds a value-only Score answer as a distribution over two
// levels, the recorded most probable level L with mass q > 1/2 and one other
// level m on the side of the recorded expected level s, so that the expected
// level is s and the most probable level is L: q = (s−m)/(L−m). It tries m
// from the level next to L outwards and reports false when no level works
// (an expected level far from the most probable one needs a wider
// distribution than two levels can give).
func scoreStandIn(a judgments.Answer) (replayed, bool) {
	n := len(a.Labels)
	level, err := strconv.Atoi(a.Label)
	if a.Kind != judgments.Score || n < 2 || err != nil || level < 0 || level >= n || math.IsNaN(a.Value) {
		return replayed{}, false
	}
	probs := make([]float64, n)
	s := a.Value
	if math.Abs(s-float64(level)) < 1e-12 {
		probs[level] = 1
		return replayed{labels: a.Labels, probs: probs}, true
	}
	step := 1
	if s < float64(level) {
		step = -1
	}
	for m := level + step; m >= 0 && m < n; m += step {
		q := (s - float64(m)) / float64(level-m)
		if q > 0.5 && q <= 1 {
			probs[level], probs[m] = q, 1-q
			return replayed{labels: a.Labels, probs: probs}, true
		}
	}
	return replayed{}, false
}
