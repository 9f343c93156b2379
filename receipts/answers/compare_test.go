package answers_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/answers"
	"github.com/vetbench/vetbench/receipts/internal/receipttest"
)

var (
	noul   = receipttest.Noul
	choice = receipttest.Choice
	score  = receipttest.Score
	sample = receipttest.Sample
)

func compare(t *testing.T, base, cand *receipts.Receipt, p answers.Policy) *answers.Report {
	t.Helper()
	rep, err := answers.Compare(base, cand, p)
	require.NoError(t, err)
	return rep
}

func TestCompareIdenticalPasses(t *testing.T) {
	t.Parallel()
	base, cand := sample(t), sample(t)
	cand.Pins.Concurrency, cand.Throughput.Concurrency = 16, 16 // levels are not identity
	rep := compare(t, base, cand, answers.DefaultPolicy())
	require.True(t, rep.Passed, rep.Failures())
	require.False(t, rep.Failed())
	require.Equal(t, 4, rep.ItemsCompared)
	require.Equal(t, 12, rep.AnswersCompared)
	require.Equal(t, 12, rep.VerdictsEqual)
	require.Zero(t, rep.VerdictsMoved.Total())
	require.Empty(t, rep.Failures())
	require.True(t, rep.Identity.Equal)
}

// Positive controls: each detector fires on its mutation, and the clean
// neighbour stays silent.
func TestCompareControls(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		mutate  func(t *testing.T, r *receipts.Receipt)
		policy  answers.Policy
		passed  bool
		contain string // a failure line must contain this
		check   func(t *testing.T, rep *answers.Report)
	}{
		{"confident verdict moved", func(t *testing.T, r *receipts.Receipt) {
			r.Items[0].Answers[1] = choice(t, 0.1, 0.85, 0.05) // baseline a 0.9: margin 0.83
		}, answers.DefaultPolicy(), false, "item i0, question verdict: confident verdict moved a → b",
			func(t *testing.T, rep *answers.Report) {
				require.Equal(t, answers.Moves{Confident: 1}, rep.VerdictsMoved)
				require.Len(t, rep.Moved, 1)
				require.Equal(t, answers.Confident, rep.Moved[0].Class)
				require.InDelta(t, 0.9, rep.Moved[0].Baseline.Probabilities["a"], 1e-12)
				require.InDelta(t, 0.85, rep.Moved[0].Candidate.Probabilities["b"], 1e-12)
			}},
		{"near tie moved passes by default", func(t *testing.T, r *receipts.Receipt) {
			r.Items[1].Answers[1] = choice(t, 0.45, 0.49, 0.06) // baseline margin 0.04
		}, answers.DefaultPolicy(), true, "",
			func(t *testing.T, rep *answers.Report) {
				require.Equal(t, answers.Moves{NearTie: 1}, rep.VerdictsMoved)
				require.Equal(t, answers.NearTie, rep.Moved[0].Class)
			}},
		{"near tie moved fails under strict", func(t *testing.T, r *receipts.Receipt) {
			r.Items[1].Answers[1] = choice(t, 0.45, 0.49, 0.06)
		}, answers.StrictPolicy(), false, "item i1, question verdict: near-tie verdict moved a → b", nil},
		{"noul moved 0.002 fails", func(t *testing.T, r *receipts.Receipt) {
			r.Items[2].Answers[0] = noul(t, 0.602)
		}, answers.DefaultPolicy(), false, "item i2, question same: P(true) moved by 0.002000",
			func(t *testing.T, rep *answers.Report) {
				require.Equal(t, 1, rep.NoulBeyondTolerance)
				require.InDelta(t, 0.002, rep.MaxNoulDelta, 1e-9)
				require.Zero(t, rep.VerdictsMoved.Total())
			}},
		{"noul moved 0.0005 passes", func(t *testing.T, r *receipts.Receipt) {
			r.Items[2].Answers[0] = noul(t, 0.6005)
		}, answers.DefaultPolicy(), true, "",
			func(t *testing.T, rep *answers.Report) {
				require.Zero(t, rep.NoulBeyondTolerance)
				require.InDelta(t, 0.0005, rep.MaxNoulDelta, 1e-9)
			}},
		{"noul flipped across one half", func(t *testing.T, r *receipts.Receipt) {
			r.Items[2].Answers[0] = noul(t, 0.4) // baseline 0.6: margin 0.2, near tie
		}, answers.DefaultPolicy(), false, "P(true) moved by 0.200000",
			func(t *testing.T, rep *answers.Report) {
				require.Equal(t, answers.Moves{NearTie: 1}, rep.VerdictsMoved)
			}},
		{"score level moved confidently", func(t *testing.T, r *receipts.Receipt) {
			r.Items[0].Answers[2] = score(t, 0.01, 0.01, 0.03, 0.8, 0.15)
		}, answers.DefaultPolicy(), false, "question quality: confident verdict moved 4 → 3", nil},
		{"missing item", func(t *testing.T, r *receipts.Receipt) {
			r.Items = r.Items[:3]
			r.Pins.Fixture.Items = 4
			r.Throughput.Judgments = 3 // the totals count the items
		}, answers.DefaultPolicy(), false, "1 baseline items missing from the candidate (i3)", nil},
		{"failed item", func(t *testing.T, r *receipts.Receipt) {
			r.Items[3].Answers = nil
			r.Items[3].Error = "question same: missing scores for requested candidates"
			r.Throughput.Judgments, r.Throughput.Failed = 3, 1
		}, answers.DefaultPolicy(), false, "item i3: failed in the candidate", nil},
		{"stopped run", func(t *testing.T, r *receipts.Receipt) {
			r.Stopped = &receipts.Stopped{Index: 3, Item: "i3", Reason: "error", Message: "HTTP 500", Discarded: 0}
			r.Items = r.Items[:3]
			r.Throughput.Judgments = 3
		}, answers.DefaultPolicy(), false, "candidate stopped at item i3 (error): HTTP 500", nil},
		{"question missing", func(t *testing.T, r *receipts.Receipt) {
			r.Items[1].Answers = r.Items[1].Answers[:2]
		}, answers.DefaultPolicy(), false, "item i1, question quality: not comparable: no answer in the candidate", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			base, cand := sample(t), sample(t)
			c.mutate(t, cand)
			require.NoError(t, cand.Validate(), "the mutated candidate is itself a valid receipt")
			rep := compare(t, base, cand, c.policy)
			require.Equal(t, c.passed, rep.Passed, rep.Failures())
			require.Equal(t, !c.passed, rep.Failed())
			if c.contain != "" {
				require.Contains(t, strings.Join(rep.Failures(), "\n"), c.contain)
			} else {
				require.Empty(t, rep.Failures())
			}
			if c.check != nil {
				c.check(t, rep)
			}
		})
	}
}

func TestCompareValueOnlyScoreFailsClosed(t *testing.T) {
	t.Parallel()
	base, cand := sample(t), sample(t)
	for _, r := range []*receipts.Receipt{base, cand} {
		for i := range r.Items {
			a := &r.Items[i].Answers[2]
			a.Probabilities, a.Logprobs, a.Confidence = nil, nil, 0
		}
		r.Identity.Digest = ""
	}
	cand.Items[1].Answers[2].Label = "3" // was 2; no margin is known
	require.NoError(t, cand.Validate())
	rep := compare(t, base, cand, answers.DefaultPolicy())
	require.Equal(t, answers.Moves{Confident: 1}, rep.VerdictsMoved)
	require.Nil(t, rep.Moved[0].Baseline.Margin)
	require.Contains(t, rep.Failures()[0], "baseline margin unknown (value only)")
	require.Nil(t, rep.Questions[2].MaxProbDelta)
}

func TestCompareIdentityMismatch(t *testing.T) {
	t.Parallel()
	base, cand := sample(t), sample(t)
	cand.Pins.Model = "google/gemma-4-31B-it-FP8"
	cand.Pins.Served[0] = receipts.ServedModel{ID: "google/gemma-4-31B-it-FP8", Root: "google/gemma-4-31B-it-FP8", MaxModelLen: 8192}
	_, err := answers.Compare(base, cand, answers.DefaultPolicy())
	require.ErrorIs(t, err, receipts.ErrIdentityMismatch)
	require.Contains(t, err.Error(), "model: google/gemma-4-31B-it → google/gemma-4-31B-it-FP8")

	p := answers.DefaultPolicy()
	p.AllowIdentityDrift = true
	rep := compare(t, base, cand, p)
	require.False(t, rep.Identity.Equal)
	require.Contains(t, rep.Identity.Differences, "model: google/gemma-4-31B-it → google/gemma-4-31B-it-FP8")
	require.True(t, rep.Passed, "allowed drift with equal answers passes")
}

func TestReportJSONContract(t *testing.T) {
	t.Parallel()
	base, cand := sample(t), sample(t)
	cand.Items[0].Answers[1] = choice(t, 0.1, 0.85, 0.05)
	cand.Items[2].Answers[0] = noul(t, 0.61)
	rep := compare(t, base, cand, answers.DefaultPolicy())
	data, err := json.Marshal(rep)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	for _, k := range []string{"schema", "set", "baseline", "candidate", "policy", "identity", "items_compared",
		"answers_compared", "verdicts_equal", "verdicts_moved", "noul_beyond_tolerance", "max_noul_delta",
		"questions", "moved", "noul_drift", "missing", "failed_items", "incomparable", "failures", "passed"} {
		require.Contains(t, m, k)
	}
	require.Equal(t, "vetbench.compare/v1", m["schema"])
	require.Equal(t, map[string]any{"near_tie": 0.0, "confident": 1.0}, m["verdicts_moved"])
	require.Equal(t, 1.0, m["noul_beyond_tolerance"])
	require.InDelta(t, 0.01, m["max_noul_delta"], 1e-9)
	require.Equal(t, false, m["passed"])
	id := m["identity"].(map[string]any)
	require.Equal(t, true, id["equal"])
	require.Equal(t, []any{}, id["differences"])
	q := m["questions"].([]any)[0].(map[string]any)
	require.Equal(t, "same", q["question"])
	require.InDelta(t, 0.01, q["max_noul_delta"], 1e-9)
	require.Nil(t, m["questions"].([]any)[1].(map[string]any)["max_noul_delta"], "null for a Choice")
	mv := m["moved"].([]any)[0].(map[string]any)
	require.Equal(t, "i0", mv["item"])
	require.Equal(t, "verdict", mv["question"])
	require.Equal(t, "confident", mv["class"])
	require.Contains(t, mv["baseline"].(map[string]any)["probabilities"], "a")
	require.Contains(t, mv["candidate"].(map[string]any)["probabilities"], "b")
}

func TestReportText(t *testing.T) {
	t.Parallel()
	base, cand := sample(t), sample(t)
	cand.Items[0].Answers[1] = choice(t, 0.1, 0.85, 0.05)
	rep := compare(t, base, cand, answers.DefaultPolicy())
	var b bytes.Buffer
	require.NoError(t, rep.WriteText(&b))
	out := b.String()
	require.Contains(t, out, "1 moved (0 near-tie, 1 confident)")
	require.Contains(t, out, "i0  verdict  confident  baseline margin 0.830000")
	require.Contains(t, out, "baseline   a:  a 0.9000  b 0.0700  c 0.0300")
	require.Contains(t, out, "FAIL (1):")
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	p := answers.DefaultPolicy()
	require.NoError(t, p.Validate())
	p.NoulTolerance = -1
	_, err := answers.Compare(sample(t), sample(t), p)
	require.ErrorContains(t, err, "noul tolerance")
	p = answers.DefaultPolicy()
	p.NearTieMargin = 2
	require.ErrorContains(t, p.Validate(), "near-tie margin")
}

func TestCompareLabelsOrKindDiffer(t *testing.T) {
	t.Parallel()
	base, cand := sample(t), sample(t)
	p := answers.DefaultPolicy()
	p.AllowIdentityDrift = true // a different question is also a prompt digest change
	q2 := judgments.NewChoice("verdict", "Pick one:", judgments.Option{Label: "a"}, judgments.Option{Label: "b"})
	for i := range cand.Items {
		a, err := judgments.Decide(q2, []float64{-0.1, -2.4})
		require.NoError(t, err)
		cand.Items[i].Answers[1] = a
	}
	rep := compare(t, base, cand, p)
	require.Len(t, rep.Incomparable, 4)
	require.True(t, rep.Failed())
}

// Off-format answers are shown beside the comparison (both sides record
// their sampled tokens), not failed: the verdicts are what is compared.
func TestCompareShowsOffFormat(t *testing.T) {
	base, cand := sample(t), sample(t)
	for _, r := range []*receipts.Receipt{base, cand} {
		for i := range r.Items {
			for j := range r.Items[i].Answers {
				r.Items[i].Answers[j].Sampled = "token_id:236800"
			}
		}
	}
	cand.Items[0].Answers[0].Sampled, cand.Items[0].Answers[0].OffFormat = "token_id:818", true
	rep, err := answers.Compare(base, cand, answers.DefaultPolicy())
	require.NoError(t, err)
	require.True(t, rep.Passed)
	require.NotNil(t, rep.OffFormat)
	require.Zero(t, rep.OffFormat.Baseline.Total)
	require.Equal(t, 1, rep.OffFormat.Candidate.Total)
	var b strings.Builder
	require.NoError(t, rep.WriteText(&b))
	require.Contains(t, b.String(), "off-format answers (sampled token no candidate): baseline 0 of ")
	require.Contains(t, b.String(), "→ candidate 1 of ")

	rep, err = answers.Compare(sample(t), sample(t), answers.DefaultPolicy())
	require.NoError(t, err)
	require.Nil(t, rep.OffFormat, "no sampled tokens recorded: nothing to show")
}
