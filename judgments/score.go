package judgments

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Scoring failures. Each fails the question closed: no answer is guessed.
var (
	ErrMissingCandidate   = errors.New("missing scores for requested candidates")
	ErrDuplicateCandidate = errors.New("duplicate candidate")
	ErrNonFinite          = errors.New("non-finite candidate logprob")
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
}

// Candidates picks the question's candidate logprobs, in decision order, out
// of the returned entries. In ModeTokenIDs every entry must be "token_id:N",
// exactly the requested ids, once each; in ModeTopLogprobs entries are matched
// on their text and non-candidates are ignored.
func Candidates(q Question, entries []TokenLogprob, controls Controls, mode Mode) ([]float64, error) {
	ctrl := q.Controls()
	index := make(map[string]int, len(ctrl)) // key -> decision index
	for i, c := range ctrl {
		key := c
		if mode == ModeTokenIDs {
			id, ok := controls[c]
			if !ok {
				return nil, &CandidateError{Question: q.ID, Control: c, Err: fmt.Errorf("no token id pinned: %w", ErrMissingCandidate)}
			}
			key = strconv.Itoa(id)
		}
		index[key] = i
	}
	out := make([]float64, len(ctrl))
	found := make([]bool, len(ctrl))
	for _, e := range entries {
		key := e.Token
		if mode == ModeTokenIDs {
			id, ok := strings.CutPrefix(e.Token, "token_id:")
			if !ok {
				return nil, &CandidateError{Question: q.ID, Err: fmt.Errorf("%w: %q is not token_id:N", ErrUnexpectedToken, e.Token)}
			}
			key = id
		}
		i, ok := index[key]
		if !ok {
			if mode == ModeTokenIDs {
				return nil, &CandidateError{Question: q.ID, Err: fmt.Errorf("%w: %q was not requested", ErrUnexpectedToken, e.Token)}
			}
			continue
		}
		if found[i] {
			return nil, &CandidateError{Question: q.ID, Control: ctrl[i], Err: ErrDuplicateCandidate}
		}
		if e.Logprob == nil || math.IsNaN(*e.Logprob) || math.IsInf(*e.Logprob, 0) {
			return nil, &CandidateError{Question: q.ID, Control: ctrl[i], Err: ErrNonFinite}
		}
		found[i] = true
		out[i] = *e.Logprob
	}
	for i, ok := range found {
		if !ok {
			return nil, &CandidateError{Question: q.ID, Control: ctrl[i], Err: ErrMissingCandidate}
		}
	}
	return out, nil
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
		if math.IsNaN(lp) || math.IsInf(lp, 0) {
			return Answer{}, &CandidateError{Question: q.ID, Control: Control(i), Err: ErrNonFinite}
		}
		top = max(top, lp)
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
