package judgments

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Scoring failures. Each fails the question closed: no answer is guessed.
var (
	ErrMissingCandidate   = errors.New("missing scores for requested candidates")
	ErrDuplicateCandidate = errors.New("duplicate candidate")
	ErrNonFinite          = errors.New("non-finite candidate logprob")
	ErrImpossibleLogprob  = errors.New("impossible candidate logprob")
	ErrUnexpectedToken    = errors.New("unexpected token in logprobs")
	ErrNoLogprobs         = errors.New("response holds no logprobs")
)

// CandidateError says which question and control failed scoring, and why.
type CandidateError struct {
	Question string
	Control  string // empty when the failure is not about one control
	Err      error
}

func (e *CandidateError) Error() string {
	if e.Control == "" {
		return fmt.Sprintf("question %s: %v", e.Question, e.Err)
	}
	return fmt.Sprintf("question %s: control %q: %v", e.Question, e.Control, e.Err)
}

func (e *CandidateError) Unwrap() error { return e.Err }

// Mode is how candidate logprobs are asked for.
type Mode string

const (
	// ModeTokenIDs asks vLLM for the candidates' ids (logprob_token_ids,
	// return_tokens_as_token_ids): every candidate comes back.
	ModeTokenIDs Mode = "token_ids"
	// ModeTopLogprobs asks any OpenAI-compatible server for its top-k; a
	// candidate outside the returned top-k is a missing candidate.
	ModeTopLogprobs Mode = "top_logprobs"
)

// ParseMode reads a mode name.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ModeTokenIDs, ModeTopLogprobs:
		return Mode(s), nil
	}
	return "", fmt.Errorf("unknown scoring mode %q (want %s or %s)", s, ModeTokenIDs, ModeTopLogprobs)
}

// Controls pins each control string to its single token id.
type Controls map[string]int

// TokenLogprob is one returned top_logprobs entry. Logprob is nil when the
// server sent null (it cannot carry NaN in JSON).
type TokenLogprob struct {
	Token   string   `json:"token"`
	Logprob *float64 `json:"logprob"`
}

// Answer is one question's answer.
type Answer struct {
	Question string `json:"question"`
	Kind     Kind   `json:"kind"`
	// Label is the argmax label (the earlier label wins an exact tie).
	Label string `json:"label"`
	// Value is P(true) for a Noul, the expected level for a Score and the
	// winner's probability for a Choice.
	Value      float64 `json:"value"`
	Confidence float64 `json:"confidence"`
	// Labels are the question's labels in decision order (control i is
	// label i), so the answer can be replayed or re-scored without the spec.
	Labels []string `json:"labels"`
	// Probabilities by label: softmax over the candidates' logprobs only.
	Probabilities map[string]float64 `json:"probabilities"`
	// Logprobs are the raw candidate logprobs by label, as the server sent them.
	Logprobs     map[string]float64 `json:"logprobs,omitempty"`
	PromptTokens int                `json:"prompt_tokens"`
	// Sampled is the token the server sampled (greedy: temperature 0), as
	// it spelled it; empty when unknown (a typevet receipt).
	Sampled string `json:"sampled,omitempty"`
	// OffFormat says the sampled token was none of the candidates: the
	// model, left to itself, would not have answered with a control. The
	// answer still stands (softmax over the candidates).
	OffFormat bool `json:"off_format,omitempty"`
	// CachedTokens is usage.prompt_tokens_details.cached_tokens, when the
	// server sent it (vllm serve --enable-prompt-tokens-details).
	CachedTokens *int `json:"cached_tokens,omitempty"`
	// DuplicateDecodings counts top_logprobs entries that decoded to a
	// control another entry already spelled, combined (Candidates).
	DuplicateDecodings int `json:"duplicate_decodings,omitempty"`
}

// Position is what scoring reads of the first returned position: the token
// the server sampled, as it spelled it (content[0].token), and the
// top_logprobs entries.
type Position struct {
	Sampled string
	Entries []TokenLogprob
}

// Scored are a question's candidate logprobs in decision order, with what
// the server sampled.
type Scored struct {
	Logprobs []float64
	// Sampled is the sampled token as the server spelled it ("token_id:N" in
	// ModeTokenIDs); empty when the server sent none.
	Sampled string
	// OffFormat says the sampled token is none of the candidates: greedy
	// decoding would have answered something other than a control.
	OffFormat bool
	// DuplicateDecodings counts entries combined with another that decodes
	// to the same control text (ModeTopLogprobs; see Candidates).
	DuplicateDecodings int
}

// spread is what the entries decoding to one control say: the least and
// most probable of them, and their summed mass (log-sum-exp).
type spread struct{ lo, hi, lse float64 }

func (s *spread) add(lp float64) {
	s.lo, s.hi = min(s.lo, lp), max(s.hi, lp)
	m := max(s.lse, lp)
	s.lse = m + math.Log(math.Exp(s.lse-m)+math.Exp(lp-m))
}

// Candidates picks the question's candidate logprobs, in decision order, out of
// the returned entries, without assuming their order.
//
// In ModeTokenIDs every entry must be "token_id:N" and each requested id
// must come back once. vLLM also returns the sampled token (first, then the
// requested ids, de-duplicated: N entries when the greedy token is a
// candidate, N+1 when it is not), so one entry equal to the sampled token is
// accepted; any other unrequested id fails closed (ErrUnexpectedToken).
// In ModeTopLogprobs entries are matched on their text and non-candidates
// are ignored (the sampled token comes first, and when it is outside the
// top-k the k-th best is dropped: only the text says which is which).
//
// Two entries may decode to one control's text: vLLM de-duplicates
// top_logprobs by token id and decodes each id on its own, so on a
// SentencePiece vocabulary with byte fallback (Gemma's) the piece "1" and
// the byte token <0x31> both read "1". typevet scores exactly one id per
// control, the one /tokenize gives: the piece (a tokenizer falls back to
// bytes only for text its vocabulary lacks), which a model trained on such
// tokenizations gives nearly all the mass, the byte spelling almost none.
// So the control's logprob is its most probable entry — typevet's id — and
// the combined entries are counted (Scored.DuplicateDecodings). The
// question fails closed (ErrDuplicateCandidate) only when that reading is
// ambiguous: when summing every spelling's mass (log-sum-exp, the
// probability of emitting the control's text at all) would pick another
// label, the other spellings hold too much mass to call one of them noise.
func Candidates(q Question, pos Position, controls Controls, mode Mode) (Scored, error) {
	n := len(q.Options)
	// keys[i] is control i as an entry spells it: the control itself, or
	// its token id's digits, all in one buffer (no allocation per control).
	var (
		digits   [MaxControls * 20]byte
		endsArr  [MaxControls + 1]int
		foundArr [MaxControls]bool
	)
	buf, ends, found := digits[:0], endsArr[:], foundArr[:]
	if n > MaxControls { // not a valid question; scored as ever, on the heap
		ends, found = make([]int, n+1), make([]bool, n)
	}
	for i := range n {
		if mode == ModeTokenIDs {
			id, ok := controls[Control(i)]
			if !ok {
				return Scored{}, &CandidateError{Question: q.ID, Control: Control(i), Err: fmt.Errorf("no token id pinned: %w", ErrMissingCandidate)}
			}
			buf = strconv.AppendInt(buf, int64(id), 10)
		} else {
			buf = append(buf, Control(i)...)
		}
		ends[i+1] = len(buf)
	}
	// index is the decision index of an entry's key; the last control of
	// a key wins, so two controls sharing a token id leave the earlier one
	// missing (fail closed).
	index := func(key string) (int, bool) {
		for i := n - 1; i >= 0; i-- {
			if string(buf[ends[i]:ends[i+1]]) == key {
				return i, true
			}
		}
		return 0, false
	}
	out := Scored{Logprobs: make([]float64, n), Sampled: pos.Sampled}
	sampledSeen := false
	var dups map[int]*spread
	for _, e := range pos.Entries {
		key := e.Token
		if mode == ModeTokenIDs {
			id, ok := strings.CutPrefix(e.Token, "token_id:")
			if !ok {
				return Scored{}, &CandidateError{Question: q.ID, Err: fmt.Errorf("%w: %q is not token_id:N", ErrUnexpectedToken, e.Token)}
			}
			key = id
		}
		i, ok := index(key)
		if !ok {
			if mode != ModeTokenIDs {
				continue
			}
			if e.Token != pos.Sampled || pos.Sampled == "" || sampledSeen {
				return Scored{}, &CandidateError{Question: q.ID, Err: fmt.Errorf("%w: %q was not requested", ErrUnexpectedToken, e.Token)}
			}
			sampledSeen = true // the sampled token, not a candidate: off-format
			continue
		}
		if found[i] && mode == ModeTokenIDs {
			return Scored{}, &CandidateError{Question: q.ID, Control: Control(i), Err: ErrDuplicateCandidate}
		}
		if err := checkLogprob(e.Logprob); err != nil {
			return Scored{}, &CandidateError{Question: q.ID, Control: Control(i), Err: err}
		}
		if found[i] {
			dups = merge(dups, i, &out, *e.Logprob)
			continue
		}
		found[i] = true
		out.Logprobs[i] = *e.Logprob
	}
	if err := complete(q, found[:n], out.Logprobs, dups); err != nil {
		return Scored{}, err
	}
	out.OffFormat = offFormat(pos.Sampled, mode, index)
	return out, nil
}

// offFormat says the sampled token (as the server spelled it; "" when
// unknown) is no candidate's key.
func offFormat(sampled string, mode Mode, index func(string) (int, bool)) bool {
	if sampled == "" {
		return false
	}
	if mode == ModeTokenIDs {
		sampled = strings.TrimPrefix(sampled, "token_id:")
	}
	_, candidate := index(sampled)
	return !candidate
}

// complete says which candidate is missing, or that entries decoding to
// one control leave the answer ambiguous; nil when the scores stand.
func complete(q Question, found []bool, lps []float64, dups map[int]*spread) error {
	for i, ok := range found {
		if !ok {
			return &CandidateError{Question: q.ID, Control: Control(i), Err: ErrMissingCandidate}
		}
	}
	if c, ok := ambiguous(lps, dups); !ok {
		return &CandidateError{Question: q.ID, Control: Control(c),
			Err: fmt.Errorf("%w: several entries decode to one control and which one is the tokenizer's decides the answer", ErrDuplicateCandidate)}
	}
	return nil
}

// merge combines a second entry decoding to control i into out (its most
// probable entry stands) and records the spread of its readings.
func merge(dups map[int]*spread, i int, out *Scored, lp float64) map[int]*spread {
	if dups == nil {
		dups = map[int]*spread{}
	}
	if dups[i] == nil {
		v := out.Logprobs[i]
		dups[i] = &spread{lo: v, hi: v, lse: v}
	}
	dups[i].add(lp)
	out.Logprobs[i] = dups[i].hi
	out.DuplicateDecodings++
	return dups
}

// ambiguous checks that lps (each duplicated control at its most probable
// entry) and the summed-mass reading (each at log-sum-exp of its entries)
// pick the same winner. It returns a duplicated control and false when
// they do not.
func ambiguous(lps []float64, dups map[int]*spread) (int, bool) {
	if len(dups) == 0 {
		return 0, true
	}
	mass := slices.Clone(lps)
	first := -1
	for i, s := range dups {
		mass[i] = s.lse
		if first < 0 || i < first {
			first = i
		}
	}
	if argmax(lps) == argmax(mass) {
		return 0, true
	}
	return first, false
}

// argmax is the index of the largest value, the earlier on an exact tie.
func argmax(xs []float64) int {
	w := 0
	for i, x := range xs {
		if x > xs[w] {
			w = i
		}
	}
	return w
}

// Decide turns candidate logprobs (decision order) into an answer: softmax
// over the candidates only, greedy argmax with the earlier label winning an
// exact tie.
func Decide(q Question, logprobs []float64) (Answer, error) {
	if len(logprobs) != len(q.Options) {
		return Answer{}, &CandidateError{Question: q.ID, Err: fmt.Errorf("%w: %d logprobs for %d options", ErrMissingCandidate, len(logprobs), len(q.Options))}
	}
	top := math.Inf(-1)
	for i, lp := range logprobs {
		if err := checkLogprob(&lp); err != nil {
			return Answer{}, &CandidateError{Question: q.ID, Control: Control(i), Err: err}
		}
		top = max(top, lp)
	}
	if top <= MinLogprob {
		// Every candidate at vLLM's floor: none has any probability, and a
		// "tie" of nothing would be scored 1/n each.
		return Answer{}, &CandidateError{Question: q.ID, Err: fmt.Errorf("%w: every candidate at the floor %g (no candidate has any probability)", ErrImpossibleLogprob, MinLogprob)}
	}
	probs := make([]float64, len(logprobs))
	sum := 0.0
	for i, lp := range logprobs {
		probs[i] = math.Exp(lp - top)
		sum += probs[i]
	}
	win := 0
	for i := range probs {
		probs[i] /= sum
		if probs[i] > probs[win] {
			win = i
		}
	}
	a := Answer{
		Question:      q.ID,
		Kind:          q.Kind,
		Label:         q.Options[win].Label,
		Labels:        q.Labels(),
		Confidence:    probs[win],
		Probabilities: make(map[string]float64, len(probs)),
		Logprobs:      make(map[string]float64, len(probs)),
	}
	for i, o := range q.Options {
		a.Probabilities[o.Label] = probs[i]
		a.Logprobs[o.Label] = logprobs[i]
	}
	switch q.Kind {
	case Noul:
		a.Value = probs[1]
	case Score:
		for i, p := range probs {
			a.Value += float64(i) * p
		}
	default:
		a.Value = probs[win]
	}
	return a, nil
}

// Margin is the gap between the two most probable labels of an answer; a
// small margin marks a near tie.
func (a Answer) Margin() float64 {
	first, second := 0.0, 0.0
	for _, p := range a.Probabilities {
		switch {
		case p > first:
			first, second = p, first
		case p > second:
			second = p
		}
	}
	return first - second
}

// MinLogprob is the smallest logprob vLLM sends: it clamps every logprob
// with max(value, -9999.0) (serving's _get_top_logprobs), so -inf arrives
// as -9999.
const MinLogprob = -9999.0

// checkLogprob refuses a logprob no model can give: missing, NaN or ±Inf,
// above 0 (a probability above 1; log-softmax is ≤ 0 in floating point
// too, as the log of a sum that includes exp(0)) or below vLLM's floor.
func checkLogprob(lp *float64) error {
	switch {
	case lp == nil || math.IsNaN(*lp) || math.IsInf(*lp, 0):
		return ErrNonFinite
	case *lp > 0:
		return fmt.Errorf("%w: %g is above 0 (a probability above 1)", ErrImpossibleLogprob, *lp)
	case *lp < MinLogprob:
		return fmt.Errorf("%w: %g is below vLLM's floor %g", ErrImpossibleLogprob, *lp, MinLogprob)
	}
	return nil
}
