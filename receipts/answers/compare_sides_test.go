package answers_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/answers"
)

// Compare's item walk, from either side: which items it compares, skips
// or lists as missing, and its failure lines in their order (stops, items
// in baseline order, missing items, nothing compared).
func TestCompareItemWalk(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		mutate    func(base, cand *receipts.Receipt)
		failures  []string
		compared  int
		missing   answers.Missing
		failed    []answers.FailedItem
		incomp    int
		questions []string
	}{
		{"identical", func(_, _ *receipts.Receipt) {}, []string{}, 4,
			answers.Missing{BaselineOnly: []string{}, CandidateOnly: []string{}}, []answers.FailedItem{}, 0,
			[]string{"same", "verdict", "quality"}},
		{"discarded items on either side are neither compared nor missing", func(base, cand *receipts.Receipt) {
			base.Items[0].Discarded, cand.Items[0].Discarded = true, true
			cand.Items[1].Discarded = true
		}, []string{"1 baseline items missing from the candidate (i1)"}, 2,
			answers.Missing{BaselineOnly: []string{"i1"}, CandidateOnly: []string{}}, []answers.FailedItem{}, 0,
			[]string{"same", "verdict", "quality"}},
		{"both sides stopped and failed, baseline first", func(base, cand *receipts.Receipt) {
			base.Stopped = &receipts.Stopped{Item: "i3", Reason: "error", Message: "a"}
			cand.Stopped = &receipts.Stopped{Item: "i2", Reason: "interrupted", Message: "b"}
			base.Items[1].Error, base.Items[1].Answers = "x", nil
			cand.Items[1].Error, cand.Items[1].Answers = "y", nil
			cand.Items[2].Error = "z"
		}, []string{
			"baseline stopped at item i3 (error): a",
			"candidate stopped at item i2 (interrupted): b",
			"item i1: failed in the baseline: x",
			"item i1: failed in the candidate: y",
			"item i2: failed in the candidate: z",
		}, 2, answers.Missing{BaselineOnly: []string{}, CandidateOnly: []string{}},
			[]answers.FailedItem{{Item: "i1", Side: "baseline", Error: "x"}, {Item: "i1", Side: "candidate", Error: "y"}, {Item: "i2", Side: "candidate", Error: "z"}},
			0, []string{"same", "verdict", "quality"}},
		{"a receipt's own text is printed escaped", func(base, cand *receipts.Receipt) {
			// Terminal escapes, a carriage return and a bidi override in a
			// receipt from someone else (a typevet run, an edited file):
			// the failure lines reach the terminal.
			cand.Stopped = &receipts.Stopped{Item: "i3", Reason: "error", Message: "HTTP 500: \x1b]0;PWNED\a\x1b[2J\rok\u202e"}
			cand.Items[1].Error, cand.Items[1].Answers = "\x1b[31mEVIL\r", nil
		}, []string{
			`candidate stopped at item i3 (error): HTTP 500: \x1b]0;PWNED\a\x1b[2J\rok\u202e`,
			`item i1: failed in the candidate: \x1b[31mEVIL\r`,
		}, 3, answers.Missing{BaselineOnly: []string{}, CandidateOnly: []string{}},
			[]answers.FailedItem{{Item: "i1", Side: "candidate", Error: "\x1b[31mEVIL\r"}},
			0, []string{"same", "verdict", "quality"}},
		{"items held by one side only, each way", func(base, cand *receipts.Receipt) {
			base.Items[3].ID = "b9"
			cand.Items[2].ID = "c7"
		}, []string{
			"2 baseline items missing from the candidate (i2, b9)",
			"2 candidate items missing from the baseline (c7, i3)",
		}, 2, answers.Missing{BaselineOnly: []string{"i2", "b9"}, CandidateOnly: []string{"c7", "i3"}}, []answers.FailedItem{}, 0,
			[]string{"same", "verdict", "quality"}},
		{"a question only the candidate answers; summaries follow the baseline's first answers", func(base, cand *receipts.Receipt) {
			for i := range base.Items {
				base.Items[i].Answers = base.Items[i].Answers[1:]
			}
		}, []string{
			"item i0, question same: not comparable: no answer in the baseline",
			"item i1, question same: not comparable: no answer in the baseline",
			"item i2, question same: not comparable: no answer in the baseline",
			"item i3, question same: not comparable: no answer in the baseline",
		}, 4, answers.Missing{BaselineOnly: []string{}, CandidateOnly: []string{}}, []answers.FailedItem{}, 4,
			[]string{"verdict", "quality"}},
		{"nothing compared", func(base, cand *receipts.Receipt) {
			for i := range cand.Items {
				cand.Items[i].ID = "c" + cand.Items[i].ID
			}
		}, []string{
			"4 baseline items missing from the candidate (i0, i1, i2, i3)",
			"4 candidate items missing from the baseline (ci0, ci1, ci2, ci3)",
			"no item was compared",
		}, 0, answers.Missing{BaselineOnly: []string{"i0", "i1", "i2", "i3"}, CandidateOnly: []string{"ci0", "ci1", "ci2", "ci3"}}, []answers.FailedItem{}, 0,
			nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			base, cand := sample(t), sample(t)
			c.mutate(base, cand)
			rep := compare(t, base, cand, answers.DefaultPolicy())
			require.Equal(t, c.failures, rep.Failures())
			require.Equal(t, len(c.failures) == 0, rep.Passed)
			require.Equal(t, c.compared, rep.ItemsCompared)
			require.Equal(t, c.missing, rep.Missing)
			require.Equal(t, c.failed, rep.FailedItems)
			require.Len(t, rep.Incomparable, c.incomp)
			var qs []string
			for _, q := range rep.Questions {
				qs = append(qs, q.Question)
			}
			require.Equal(t, c.questions, qs)
		})
	}
	_, err := answers.Compare(nil, sample(t), answers.DefaultPolicy())
	require.EqualError(t, err, "compare: nil receipt")
}
