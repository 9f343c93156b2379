package stub

import (
	"math"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/typevet"
)

// judgeAll runs the set at concurrency c against a fresh twin and returns
// the answers by item and question.
func judgeAll(t *testing.T, set fixtures.Set, c int, mode judgments.Mode, opts ...Option) (map[string]judgments.Answer, Stats) {
	t.Helper()
	rs, err := Start(opts...)
	require.NoError(t, err)
	defer rs.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	cl := judgments.NewClient(rs.URL(), judgments.WithModel(rs.Model()), judgments.WithMode(mode), judgments.WithHTTPClient(&http.Client{Transport: tr}))
	res := closedLoop(t.Context(), t, cl, set, c, false)
	out := map[string]judgments.Answer{}
	for _, j := range res.Judgments {
		for _, a := range j.Answers {
			out[j.Item+"|"+a.Question] = a
		}
	}
	return out, rs.Stats()
}

// logitGap is the gap between the two largest candidate logprobs.
func logitGap(a judgments.Answer) float64 {
	first, second := math.Inf(-1), math.Inf(-1)
	for _, lp := range a.Logprobs {
		switch {
		case lp > first:
			first, second = lp, first
		case lp > second:
			second = lp
		}
	}
	return first - second
}

// TestBatchNoise shows that answers alone on the engine (c=1) are exactly
// the model's and repeatable, that under load (c=32) batch noise moves
// near-tied verdicts but no confident one, and that no Noul moves by
// 0.001 or more. With the noise off, load changes nothing.
func TestBatchNoise(t *testing.T) {
	set := compactChecks(t)
	// Alone on the engine, timing cannot matter: run c=1 without step time.
	instant := ProfileFast()
	instant.StepBase, instant.StepPerSeq, instant.StepPerImage = 0, 0, 0
	alone, st1 := judgeAll(t, set, 1, judgments.ModeTokenIDs, WithProfile(instant))
	require.Zero(t, st1.BatchedPrefills, "at c=1 every prefill runs alone")
	again, _ := judgeAll(t, set, 1, judgments.ModeTokenIDs, WithProfile(instant))
	require.Equal(t, alone, again, "c=1 is deterministic")
	loaded, st := judgeAll(t, set, 32, judgments.ModeTokenIDs)
	require.Greater(t, st.BatchedPrefills, len(alone)/10, "at c=32 prefills share steps")
	moved, nearTies := 0, 0
	for k, a := range alone {
		b := loaded[k]
		gap := logitGap(a)
		if gap < 2e-3 {
			nearTies++
		}
		if a.Label != b.Label {
			moved++
			require.Less(t, gap, 4*DefaultBatchNoise, "%s: a verdict with a logit gap of %g moved (%s -> %s)", k, gap, a.Label, b.Label)
		}
		if a.Kind == judgments.Noul {
			require.Less(t, math.Abs(a.Value-b.Value), 0.001, "%s: a Noul moved by 0.001 or more", k)
			require.LessOrEqual(t, math.Abs(a.Value-b.Value), DefaultBatchNoise+1e-15, "%s: |Δp| ≤ noise", k)
		}
	}
	t.Logf("%d answers, %d near-tied, %d verdicts moved between c=1 and c=32", len(alone), nearTies, moved)
	require.Positive(t, nearTies, "the default spread has near ties")
	require.Positive(t, moved, "batch noise moved no near-tied verdict")

	quiet, _ := judgeAll(t, set, 32, judgments.ModeTokenIDs, WithBatchNoise(0))
	require.Equal(t, alone, quiet, "without batch noise, load changes no answer")
}

// TestScoringModesAgree shows token_ids and top_logprobs scoring give the
// same answers: the answer model counts the prompt's options, and every
// candidate ranks inside a top-20.
func TestScoringModesAgree(t *testing.T) {
	set := compactChecks(t)
	set.Cases = set.Cases[:14]
	ids, _ := judgeAll(t, set, 4, judgments.ModeTokenIDs, WithBatchNoise(0))
	top, _ := judgeAll(t, set, 4, judgments.ModeTopLogprobs, WithBatchNoise(0))
	require.Len(t, top, len(ids))
	for k, a := range ids {
		require.Equal(t, a.Label, top[k].Label, k)
		for l, p := range a.Probabilities {
			require.InDelta(t, p, top[k].Probabilities[l], 1e-12, "%s %s", k, l)
		}
	}
}

// handReceipt is a small receipt built by hand: a Noul, a Choice with a
// tiny and a zero probability, and a Score recorded without
// probabilities.
func handReceipt(set fixtures.Set) *receipts.Receipt {
	r := &receipts.Receipt{Schema: receipts.Schema, Source: receipts.SourceVetbench, Set: set.Name}
	probs := []map[string]float64{
		{"false": 0.2, "true": 0.8},
		{"false": 0.999999, "true": 0.000001},
		{"consistent": 0.5, "payee_mismatch": 0.25, "amount_mismatch": 0.125, "date_mismatch": 0.0625, "unsigned": 0.0625 - 1e-300, "cannot_tell": 0},
	}
	for i, c := range set.Cases {
		it := receipts.Item{ID: c.ID}
		for qi, q := range set.Spec.Questions {
			a := judgments.Answer{Question: q.ID, Kind: q.Kind, Labels: q.Labels()}
			if q.Kind != judgments.Score {
				a.Probabilities = probs[(i+qi)%len(probs)]
				if q.Kind == judgments.Choice {
					a.Probabilities = probs[2]
				} else if (i+qi)%2 == 1 {
					a.Probabilities = probs[1]
				} else {
					a.Probabilities = probs[0]
				}
			}
			it.Answers = append(it.Answers, a)
		}
		r.Items = append(r.Items, it)
	}
	return r
}

// TestReplay shows a replayed receipt's probabilities come back exactly
// (within 1e-12 after the client's softmax) in both scoring modes, and
// that answers recorded without probabilities fall back to the model and
// are counted.
func TestReplay(t *testing.T) {
	set := compactChecks(t)
	set.Cases = set.Cases[:7]
	rec := handReceipt(set)
	rp, err := ReplayFromReceipt(rec)
	require.NoError(t, err)
	require.Equal(t, 7*3, rp.Len())
	require.Equal(t, 7, rp.Omitted, "the Score answers carry no probabilities")
	for _, mode := range []judgments.Mode{judgments.ModeTokenIDs, judgments.ModeTopLogprobs} {
		got, st := judgeAll(t, set, 8, mode, WithReplay(rp))
		for _, it := range rec.Items {
			for _, want := range it.Answers {
				a := got[it.ID+"|"+want.Question]
				if want.Probabilities == nil {
					continue
				}
				for l, p := range want.Probabilities {
					require.InDelta(t, p, a.Probabilities[l], 1e-12, "%s %s %s %s", mode, it.ID, want.Question, l)
				}
			}
		}
		require.Equal(t, 21, st.ReplayServed, mode)
		require.Equal(t, 7, st.ReplayMissing, "%s: the Score questions fell back to the model", mode)
		require.Equal(t, 7, st.ReplayOmitted)
	}

	// Positive control: without replay the answers are the model's.
	model, _ := judgeAll(t, set, 8, judgments.ModeTokenIDs)
	require.NotEqual(t, 0.8, model[set.Cases[0].ID+"|payee_matches"].Value)

	// Malformed receipts are refused with the place named.
	bad := handReceipt(set)
	delete(bad.Items[0].Answers[0].Probabilities, "true")
	_, err = ReplayFromReceipt(bad)
	require.ErrorContains(t, err, `item "r00:clean" question "payee_matches"`)
	bad = handReceipt(set)
	bad.Items[1].Answers[0].Probabilities["true"] = math.NaN()
	_, err = ReplayFromReceipt(bad)
	require.ErrorContains(t, err, "probability NaN")
	bad = handReceipt(set)
	bad.Items[2].Answers = append(bad.Items[2].Answers, bad.Items[2].Answers[0])
	_, err = ReplayFromReceipt(bad)
	require.ErrorContains(t, err, "answered twice")
}

// TestReplayTypevetReceipt replays typevet's single-stream checks receipt
// (imported by receipts/typevet) and gets its Noul and verdict
// distributions back exactly; its Score distributions were not published,
// so those come back as stand-ins with the recorded expected level and
// most probable level.
func TestReplayTypevetReceipt(t *testing.T) {
	rec, err := typevet.ReadFile("../receipts/typevet/testdata/check_match_vllm_receipt.json")
	require.NoError(t, err)
	rp, err := ReplayFromReceipt(rec)
	require.NoError(t, err)
	set := compactChecks(t)
	got, st := judgeAll(t, set, 16, judgments.ModeTokenIDs, WithReplay(rp))
	exact, scores := 0, 0
	for _, it := range rec.Items {
		for _, want := range it.Answers {
			a, ok := got[it.ID+"|"+want.Question]
			require.True(t, ok, "%s %s not judged", it.ID, want.Question)
			if len(want.Probabilities) == 0 {
				require.Equal(t, want.Label, a.Label, "%s %s: most probable level", it.ID, want.Question)
				require.InDelta(t, want.Value, a.Value, 1e-9, "%s %s: expected level", it.ID, want.Question)
				scores++
				continue
			}
			for l, p := range want.Probabilities {
				require.InDelta(t, p, a.Probabilities[l], 1e-12, "%s %s %s", it.ID, want.Question, l)
			}
			exact++
		}
	}
	t.Logf("replayed %d typevet answers exactly and %d value-only scores as stand-ins; %d fell back", exact, scores, st.ReplayMissing)
	require.Equal(t, 140*3, exact)
	require.Equal(t, 140, scores)
	require.Equal(t, 140, rp.Reconstructed)
	require.Zero(t, st.ReplayMissing)
	require.Zero(t, rp.Omitted)
}

func TestScoreStandIn(t *testing.T) {
	labels := []string{"0", "1", "2", "3", "4"}
	for _, tc := range []struct {
		label string
		value float64
		ok    bool
	}{
		{"4", 4, true},
		{"4", 3.999999, true},
		{"3", 2.86, true},
		{"2", 2.3, true},
		{"4", 2.5, true}, // needs level 0 as the other point
		{"0", 0.4, true},
		{"4", 1.0, false}, // no two-level distribution has mean 1 and mode 4
		{"", 3, false},
		{"7", 3, false},
	} {
		rec, ok := scoreStandIn(judgments.Answer{Kind: judgments.Score, Labels: labels, Label: tc.label, Value: tc.value})
		require.Equal(t, tc.ok, ok, "%s %v", tc.label, tc.value)
		if !ok {
			continue
		}
		mean, top := 0.0, 0
		for i, p := range rec.probs {
			mean += float64(i) * p
			if p > rec.probs[top] {
				top = i
			}
		}
		require.InDelta(t, tc.value, mean, 1e-12)
		require.Equal(t, tc.label, labels[top])
	}
}

// TestAdjust shows the adjust hook as a positive control: it flips one
// verdict and shifts one Noul of one item, and nothing else.
func TestAdjust(t *testing.T) {
	set := compactChecks(t)
	set.Cases = set.Cases[:7]
	base, _ := judgeAll(t, set, 4, judgments.ModeTokenIDs, WithBatchNoise(0))
	target := set.Cases[3].ID
	verdict := base[target+"|verdict"]
	loser := 0
	for i, l := range verdict.Labels {
		if l != verdict.Label {
			loser = i
			break
		}
	}
	noul := base[target+"|payee_matches"]
	adjusted, _ := judgeAll(t, set, 4, judgments.ModeTokenIDs, WithBatchNoise(0), WithAdjust(func(item, question string, logits map[int]float64) {
		if item != target {
			return
		}
		switch question {
		case "verdict":
			logits[controlID(loser)] += 50
		case "payee_matches":
			logits[TokenDigit0+1] += 0.1
		}
	}))
	for k, a := range base {
		b := adjusted[k]
		switch k {
		case target + "|verdict":
			require.Equal(t, verdict.Labels[loser], b.Label, "the adjusted verdict flipped")
		case target + "|payee_matches":
			gap := math.Log(noul.Value/(1-noul.Value)) + 0.1
			require.InDelta(t, 1/(1+math.Exp(-gap)), b.Value, 1e-9, "P(true) follows the shifted logit")
			require.NotEqual(t, noul.Value, b.Value)
		default:
			require.Equal(t, a, b, "%s changed", k)
		}
	}
}
