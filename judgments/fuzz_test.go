package judgments

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The questions FuzzScore scores: every kind, and a Choice long enough
// to use the letter controls ("A", "B").
var fuzzQuestions = []Question{
	NewNoul("same", "Same?", "yes", "no"),
	NewChoice("verdict", "Pick one:", Option{Label: "a"}, Option{Label: "b"}, Option{Label: "c"}),
	NewScore("quality", "Rate:", "0", "1", "2", "3", "4"),
	NewChoice("wide", "Pick one:", Option{Label: "l0"}, Option{Label: "l1"}, Option{Label: "l2"}, Option{Label: "l3"},
		Option{Label: "l4"}, Option{Label: "l5"}, Option{Label: "l6"}, Option{Label: "l7"}, Option{Label: "l8"},
		Option{Label: "l9"}, Option{Label: "l10"}, Option{Label: "l11"}),
}

// FuzzScore scores arbitrary chat responses the way the client does
// (decode the logprobs, pick the candidates, decide): the answer must
// come from every candidate present exactly once with a possible logprob
// (finite, at most 0, at least vLLM's floor -9999)
// (checked against a second, plainer reading of the entries), with finite
// probabilities that sum to 1 over the candidates; anything else must fail
// closed with a *CandidateError wrapping one of the typed errors. sel
// picks the question, the mode, and whether two controls share a token
// id (which must fail closed: the answer would be ambiguous). Seeds are
// vLLM-shaped responses in testdata/fuzz/FuzzScore:
//
//	go test ./judgments -run '^$' -fuzz '^FuzzScore$' -fuzztime 60s -fuzzminimizetime 200x
func FuzzScore(f *testing.F) {
	f.Add([]byte(`{"choices":[{"logprobs":{"content":[{"token":"token_id:101","top_logprobs":[{"token":"token_id:100","logprob":-2.5},{"token":"token_id:101","logprob":-0.1}]}]}}]}`), uint8(0))
	f.Add([]byte(`{"choices":[{"logprobs":{"content":[{"token":"1","top_logprobs":[{"token":"1","logprob":-0.2},{"token":" 0","logprob":-3},{"token":"0","logprob":-1.9}]}]}}]}`), uint8(4))
	// vLLM's N+1 shape: the sampled token (no candidate) first.
	f.Add([]byte(`{"choices":[{"logprobs":{"content":[{"token":"token_id:7","top_logprobs":[{"token":"token_id:7","logprob":-0.1},{"token":"token_id:100","logprob":-2.5},{"token":"token_id:101","logprob":-3}]}]}}]}`), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, sel uint8) {
		if len(data) > 4<<10 {
			t.Skip("long inputs add no shapes")
		}
		q := fuzzQuestions[int(sel)%len(fuzzQuestions)]
		mode := ModeTokenIDs
		if sel&4 != 0 {
			mode = ModeTopLogprobs
		}
		controls := Controls{}
		for i, c := range q.Controls() {
			controls[c] = 100 + i
		}
		if sel&8 != 0 {
			controls[Control(1)] = controls[Control(0)]
		}
		var lp chatResponse
		if err := json.Unmarshal(data, &lp); err != nil {
			return // the client fails the question: "decode chat response"
		}
		if len(lp.Choices) == 0 || lp.Choices[0].Logprobs == nil || len(lp.Choices[0].Logprobs.Content) == 0 {
			return // the client fails the question with ErrNoLogprobs
		}
		first := lp.Choices[0].Logprobs.Content[0]
		entries, sampled := first.TopLogprobs, first.Token
		want, off, ok := plainCandidates(q, sampled, entries, controls, mode)
		sc, err := Candidates(q, Position{Sampled: sampled, Entries: entries}, controls, mode)
		got := sc.Logprobs
		if err != nil {
			if ok {
				t.Fatalf("refused a response with every candidate once and finite: %v", err)
			}
			typed(t, err)
			return
		}
		if !ok {
			t.Fatalf("scored a response the plain reading refuses: %v", got)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("candidate %d: %v, want %v", i, got[i], want[i])
			}
		}
		if sc.OffFormat != off || sc.Sampled != sampled {
			t.Fatalf("sampled %q off-format %v, want %q %v", sc.Sampled, sc.OffFormat, sampled, off)
		}
		a, err := Decide(q, got)
		if err != nil && slices.Max(got) <= MinLogprob && errors.Is(err, ErrImpossibleLogprob) {
			return // every candidate at vLLM's floor: no answer from nothing
		}
		if err != nil {
			typed(t, err)
			t.Fatalf("candidates passed but Decide failed: %v", err)
		}
		checkAnswer(t, q, a)
	})
}

// plainCandidates is a second reading of the entries: each candidate's
// key (its text, or "token_id:N" for its pinned id) must be distinct and
// appear exactly once with a finite logprob; in token-id mode nothing
// else may appear but, once, the sampled token (vLLM puts it first). It
// also says whether the sampled token is off-format (no candidate's key).
func plainCandidates(q Question, sampled string, entries []TokenLogprob, controls Controls, mode Mode) ([]float64, bool, bool) {
	ctrl := q.Controls()
	keys := make([]string, len(ctrl))
	for i, c := range ctrl {
		keys[i] = c
		if mode == ModeTokenIDs {
			id, ok := controls[c]
			if !ok {
				return nil, false, false
			}
			keys[i] = "token_id:" + strconv.Itoa(id)
		}
		for j := range i {
			if keys[j] == keys[i] {
				return nil, false, false
			}
		}
	}
	off := sampled != ""
	for _, k := range keys {
		off = off && k != sampled
	}
	out := make([]float64, len(keys))
	sum := make([]float64, len(keys)) // log of every spelling's summed mass
	dup := false
	for i, k := range keys {
		n := 0
		for _, e := range entries {
			if e.Token != k {
				continue
			}
			n++
			if e.Logprob == nil || math.IsNaN(*e.Logprob) || math.IsInf(*e.Logprob, 0) || *e.Logprob > 0 || *e.Logprob < MinLogprob {
				return nil, false, false // a logprob no model gives
			}
			if n == 1 || *e.Logprob > out[i] {
				out[i] = *e.Logprob
			}
			if n == 1 {
				sum[i] = *e.Logprob
			} else {
				hi, lo := max(sum[i], *e.Logprob), min(sum[i], *e.Logprob)
				sum[i] = hi + math.Log1p(math.Exp(lo-hi))
			}
		}
		// Top-logprobs text may spell a control twice (a byte fallback):
		// read at its best entry unless the summed mass picks another
		// winner. Token ids never repeat.
		if n == 0 || (n > 1 && mode == ModeTokenIDs) {
			return nil, false, false
		}
		dup = dup || n > 1
	}
	if dup && bestOf(out) != bestOf(sum) {
		return nil, false, false
	}
	if mode == ModeTokenIDs {
		extra := 0
		for _, e := range entries {
			known := false
			for _, k := range keys {
				known = known || e.Token == k
			}
			if !known {
				if !off || e.Token != sampled || !strings.HasPrefix(e.Token, "token_id:") {
					return nil, false, false
				}
				extra++
			}
		}
		if extra > 1 {
			return nil, false, false
		}
	}
	return out, off, true
}

// bestOf is the first index of the largest value.
func bestOf(xs []float64) int {
	w := 0
	for i := range xs {
		if xs[i] > xs[w] {
			w = i
		}
	}
	return w
}

// typed fails unless err is a *CandidateError wrapping a scoring error.
func typed(t *testing.T, err error) {
	var ce *CandidateError
	if !errors.As(err, &ce) {
		t.Fatalf("error %T is not a *CandidateError: %v", err, err)
	}
	for _, want := range []error{ErrMissingCandidate, ErrDuplicateCandidate, ErrNonFinite, ErrImpossibleLogprob, ErrUnexpectedToken, ErrNoLogprobs} {
		if errors.Is(err, want) {
			return
		}
	}
	t.Fatalf("error wraps no scoring error: %v", err)
}

// checkAnswer holds an answer to what Decide promises: finite
// probabilities over exactly the question's labels summing to 1, the
// label their argmax (the earlier label on a tie), the value as the kind
// defines it.
func checkAnswer(t *testing.T, q Question, a Answer) {
	if len(a.Probabilities) != len(q.Options) || len(a.Labels) != len(q.Options) {
		t.Fatalf("%d probabilities, %d labels for %d options", len(a.Probabilities), len(a.Labels), len(q.Options))
	}
	sum, win := 0.0, 0
	probs := make([]float64, len(q.Options))
	for i, o := range q.Options {
		p, ok := a.Probabilities[o.Label]
		if !ok || math.IsNaN(p) || p < 0 || p > 1 {
			t.Fatalf("P(%s) = %v (present %v)", o.Label, p, ok)
		}
		probs[i] = p
		sum += p
		if p > probs[win] {
			win = i
		}
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Fatalf("probabilities sum to %v", sum)
	}
	if a.Label != q.Options[win].Label || a.Confidence != probs[win] {
		t.Fatalf("label %q (%v), argmax %q (%v)", a.Label, a.Confidence, q.Options[win].Label, probs[win])
	}
	var want float64
	switch q.Kind {
	case Noul:
		want = probs[1]
	case Score:
		for i, p := range probs {
			want += float64(i) * p
		}
	default:
		want = probs[win]
	}
	if math.IsNaN(a.Value) || math.Abs(a.Value-want) > 1e-9 {
		t.Fatalf("value %v, want %v", a.Value, want)
	}
}
