package receipts_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// Each rule of an answer, broken on purpose: the problems named at its
// path, in order. Answers 0, 1, 2 of an item are a Noul, a Choice and a
// Score.
func TestValidateAnswerRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer int
		edit   func(a *judgments.Answer)
		want   []string
	}{
		{"as decided", 1, func(*judgments.Answer) {}, nil},
		{"no question, unknown kind", 1, func(a *judgments.Answer) { a.Question, a.Kind = "", "rank" }, []string{
			".question: empty", `.kind: unknown kind "rank"`}},
		{"one label", 1, func(a *judgments.Answer) { a.Labels = []string{"a"} }, []string{
			".labels: 1 labels, want at least 2"}},
		{"empty and duplicate labels", 1, func(a *judgments.Answer) { a.Labels = []string{"a", "", "a"} }, []string{
			".labels[1]: empty label", `.labels[2]: duplicate label "a"`,
			`.probabilities: no entry for label ""`, `.probabilities.b: not one of the labels [a  a]`, `.probabilities.c: not one of the labels [a  a]`}},
		{"noul labels", 0, func(a *judgments.Answer) { a.Labels = []string{"true", "false"} }, []string{
			".labels: [true false]; a noul has labels [false true]"}},
		{"score levels", 2, func(a *judgments.Answer) { a.Labels = []string{"0", "2", "1", "3", "4"} }, []string{
			`.labels[1]: "2"; score levels are "0".."4"`, ".value: 3.72, but the expected level is 3.7"}},
		{"label, prompt tokens, confidence", 1, func(a *judgments.Answer) { a.Label, a.PromptTokens, a.Confidence = "z", -1, 1.5 }, []string{
			`.label: "z" is not one of the labels [a b c]`, ".prompt_tokens: negative (-1)", ".confidence: 1.5 is outside [0,1]",
			".confidence: 1.5, but the top probability is 0.8999999999999999"}},
		{"value only, not a score", 1, func(a *judgments.Answer) { a.Probabilities, a.Logprobs = nil, nil }, []string{
			".probabilities: empty; only a score may be recorded by value alone"}},
		{"value-only score in range", 2, func(a *judgments.Answer) { a.Probabilities, a.Logprobs, a.Value = nil, nil, 4 }, nil},
		{"value-only score out of range", 2, func(a *judgments.Answer) { a.Probabilities, a.Logprobs, a.Value = nil, nil, 4.5 }, []string{
			".value: 4.5 is outside [0,4]"}},
		{"a probability out of range", 1, func(a *judgments.Answer) { a.Probabilities = map[string]float64{"a": 1.2, "b": 0, "c": 0} }, []string{
			".probabilities.a: 1.2 is not a probability in [0,1]"}},
		{"probabilities not summing to 1, label not the argmax", 1, func(a *judgments.Answer) {
			a.Probabilities, a.Logprobs = map[string]float64{"a": 0.2, "b": 0.5, "c": 0.1}, nil
		}, []string{
			".probabilities: sum to 0.7999999999999999, not 1 within 1e-06",
			`.label: "a" (p=0.2) is not the argmax of its probabilities (max 0.5)`,
			".confidence: 0.8999999999999999, but the top probability is 0.5",
			".value: 0.8999999999999999, but the winner's probability is 0.2"}},
		{"noul value", 0, func(a *judgments.Answer) { a.Value = 0.5 }, []string{".value: 0.5, but P(true) is 0.98"}},
		{"score value", 2, func(a *judgments.Answer) { a.Value = 1 }, []string{".value: 1, but the expected level is 3.72"}},
		{"logprobs above 0, probabilities agree", 1, func(a *judgments.Answer) {
			a.Logprobs = map[string]float64{}
			for l, p := range a.Probabilities {
				a.Logprobs[l] = math.Log(p) + 10 // the same softmax
			}
		}, []string{".logprobs.a: above 0, not a log-probability"}},
		{"logprobs disagree", 1, func(a *judgments.Answer) { a.Logprobs["a"] = 0 }, []string{
			".probabilities.a: 0.8999999999999999, but its logprob gives 0.9090909090909091",
			".probabilities.b: 0.07, but its logprob gives 0.06363636363636364",
			".probabilities.c: 0.03, but its logprob gives 0.027272727272727268"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := sample(t)
			a := r.Items[0].Answers[c.answer]
			a.Labels = append([]string(nil), a.Labels...)
			c.edit(&a)
			r.Items[0].Answers[c.answer] = a
			prefix := "items[0].answers[" + string(rune('0'+c.answer)) + "]"
			var got []string
			var joined interface{ Unwrap() []error }
			if err := r.Validate(); errors.As(err, &joined) {
				for _, e := range joined.Unwrap() {
					var se *receipts.SchemaError
					require.True(t, errors.As(e, &se))
					if rest, ok := strings.CutPrefix(se.Path, prefix); ok && !strings.HasPrefix(rest, "[") {
						got = append(got, rest+": "+se.Msg)
					}
				}
			}
			require.Equal(t, c.want, got)
		})
	}
}
