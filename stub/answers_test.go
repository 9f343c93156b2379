package stub_test

import (
	"math"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// judgeAll runs the set at concurrency c against a fresh twin on fake time
// and returns the answers by item and question, and the twin's counters.
func judgeAll(t *testing.T, set fixtures.Set, c int, mode judgments.Mode, cfg stub.Config) (map[string]judgments.Answer, stub.Stats) {
	t.Helper()
	var out map[string]judgments.Answer
	var st stub.Stats
	synctest.Test(t, func(t *testing.T) {
		tw := newTwin(t, cfg)
		res := closedLoop(t.Context(), t, tw.client(judgments.WithMode(mode)), set, c, false)
		out, st = answersByKey(res.Judgments), tw.Stats()
	})
	return out, st
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
// 0.001 or more. With the noise off, load changes nothing. On fake time
// the batches a run forms are the profile's, not the machine's.
func TestBatchNoise(t *testing.T) {
	set := twintest.CompactChecks(t)
	alone, st1 := judgeAll(t, set, 1, judgments.ModeTokenIDs, stub.Config{})
	require.Zero(t, st1.BatchedPrefills, "at c=1 every prefill runs alone")
	again, _ := judgeAll(t, set, 1, judgments.ModeTokenIDs, stub.Config{})
	require.Equal(t, alone, again, "c=1 is deterministic")
	loaded, st := judgeAll(t, set, 32, judgments.ModeTokenIDs, stub.Config{})
	t.Logf("c=32: %d of %d prefills shared a step", st.BatchedPrefills, len(alone))
	require.Greater(t, st.BatchedPrefills, len(alone)/2, "at c=32 prefills share steps")
	moved, nearTies := 0, 0
	for k, a := range alone {
		b := loaded[k]
		gap := logitGap(a)
		if gap < 2e-3 {
			nearTies++
		}
		if a.Label != b.Label {
			moved++
			require.Less(t, gap, 4*stub.DefaultBatchNoise, "%s: a verdict with a logit gap of %g moved (%s -> %s)", k, gap, a.Label, b.Label)
		}
		if a.Kind == judgments.Noul {
			require.Less(t, math.Abs(a.Value-b.Value), 0.001, "%s: a Noul moved by 0.001 or more", k)
			require.LessOrEqual(t, math.Abs(a.Value-b.Value), stub.DefaultBatchNoise+1e-15, "%s: |Δp| ≤ noise", k)
		}
	}
	t.Logf("%d answers, %d near-tied, %d verdicts moved between c=1 and c=32", len(alone), nearTies, moved)
	require.Positive(t, nearTies, "the default spread has near ties")
	require.Positive(t, moved, "batch noise moved no near-tied verdict")

	quiet, _ := judgeAll(t, set, 32, judgments.ModeTokenIDs, stub.Config{NoBatchNoise: true})
	require.Equal(t, alone, quiet, "without batch noise, load changes no answer")
}

// TestScoringModesAgree shows token_ids and top_logprobs scoring give the
// same answers: the answer model counts the prompt's options, and every
// candidate ranks inside a top-20.
func TestScoringModesAgree(t *testing.T) {
	set := twintest.CompactChecks(t)
	set.Cases = set.Cases[:14]
	ids, _ := judgeAll(t, set, 4, judgments.ModeTokenIDs, stub.Config{NoBatchNoise: true})
	top, _ := judgeAll(t, set, 4, judgments.ModeTopLogprobs, stub.Config{NoBatchNoise: true})
	require.Len(t, top, len(ids))
	for k, a := range ids {
		require.Equal(t, a.Label, top[k].Label, k)
		for l, p := range a.Probabilities {
			require.InDelta(t, p, top[k].Probabilities[l], 1e-12, "%s %s", k, l)
		}
	}
}

// handAnswers is a small recording built by hand: Nouls, a Choice with a
// tiny and a zero probability, and a Score recorded without probabilities
// or a value (nothing to rebuild it from).
func handAnswers(set fixtures.Set) map[string][]judgments.Answer {
	noul := []map[string]float64{{"false": 0.2, "true": 0.8}, {"false": 0.999999, "true": 0.000001}}
	choice := map[string]float64{"consistent": 0.5, "payee_mismatch": 0.25, "amount_mismatch": 0.125, "date_mismatch": 0.0625,
		"unsigned": 0.0625 - 1e-300, "cannot_tell": 0}
	out := map[string][]judgments.Answer{}
	for i, c := range set.Cases {
		for qi, q := range set.Spec.Questions {
			a := judgments.Answer{Question: q.ID, Kind: q.Kind, Labels: q.Labels()}
			switch q.Kind {
			case judgments.Choice:
				a.Probabilities = choice
			case judgments.Noul:
				a.Probabilities = noul[(i+qi)%2]
			}
			out[c.ID] = append(out[c.ID], a)
		}
	}
	return out
}

// copyAnswers deep-copies a recording, for mutating one answer.
func copyAnswers(in map[string][]judgments.Answer) map[string][]judgments.Answer {
	out := map[string][]judgments.Answer{}
	for id, as := range in {
		for _, a := range as {
			p := map[string]float64{}
			for k, v := range a.Probabilities {
				p[k] = v
			}
			if a.Probabilities == nil {
				p = nil
			}
			a.Probabilities = p
			out[id] = append(out[id], a)
		}
	}
	return out
}

// TestReplay shows recorded probabilities come back exactly (within 1e-12
// after the client's softmax) in both scoring modes, and that answers
// recorded without probabilities fall back to the model and are counted.
// Malformed recordings are refused with the item and question named.
func TestReplay(t *testing.T) {
	set := twintest.CompactChecks(t)
	set.Cases = set.Cases[:7]
	rec := handAnswers(set)
	rp, err := stub.NewReplay("hand:checks", rec)
	require.NoError(t, err)
	require.Equal(t, 7*3, rp.Len())
	require.Equal(t, 7, rp.Omitted, "the Score answers carry no probabilities")
	require.Zero(t, rp.Reconstructed, "and no value to rebuild one from")
	for _, mode := range []judgments.Mode{judgments.ModeTokenIDs, judgments.ModeTopLogprobs} {
		got, st := judgeAll(t, set, 8, mode, stub.Config{Replay: &rp})
		for id, answers := range rec {
			for _, want := range answers {
				if want.Probabilities == nil {
					continue
				}
				a := got[id+"|"+want.Question]
				for l, p := range want.Probabilities {
					require.InDelta(t, p, a.Probabilities[l], 1e-12, "%s %s %s %s", mode, id, want.Question, l)
				}
			}
		}
		require.Equal(t, 21, st.ReplayServed, mode)
		require.Equal(t, 7, st.ReplayMissing, "%s: the Score questions fell back to the model", mode)
		require.Equal(t, 7, st.ReplayOmitted)
	}

	// Positive control: without replay the answers are the model's.
	model, _ := judgeAll(t, set, 8, judgments.ModeTokenIDs, stub.Config{})
	require.NotEqual(t, 0.8, model[set.Cases[0].ID+"|payee_matches"].Value)

	bad := copyAnswers(rec)
	delete(bad[set.Cases[0].ID][0].Probabilities, "true")
	_, err = stub.NewReplay("bad", bad)
	require.ErrorContains(t, err, `item "r00:clean" question "payee_matches": no probability for label "true"`)
	bad = copyAnswers(rec)
	bad[set.Cases[1].ID][0].Probabilities["true"] = math.NaN()
	_, err = stub.NewReplay("bad", bad)
	require.ErrorContains(t, err, "probability NaN")
	bad = copyAnswers(rec)
	bad[set.Cases[2].ID] = append(bad[set.Cases[2].ID], bad[set.Cases[2].ID][0])
	_, err = stub.NewReplay("bad", bad)
	require.ErrorContains(t, err, "answered twice")
	bad = copyAnswers(rec)
	bad[set.Cases[3].ID][0].Labels = nil
	_, err = stub.NewReplay("bad", bad)
	require.ErrorContains(t, err, "without a label order")
}

// TestAdjust shows the adjust hook as a positive control: it flips one
// verdict and shifts one Noul of one item, and nothing else.
func TestAdjust(t *testing.T) {
	set := twintest.CompactChecks(t)
	set.Cases = set.Cases[:7]
	base, _ := judgeAll(t, set, 4, judgments.ModeTokenIDs, stub.Config{NoBatchNoise: true})
	target := set.Cases[3].ID
	verdict := base[target+"|verdict"]
	loser := 0
	for i, l := range verdict.Labels {
		if l != verdict.Label {
			loser = i
			break
		}
	}
	loserID, ok := stub.ControlTokenID(judgments.Control(loser))
	require.True(t, ok)
	noul := base[target+"|payee_matches"]
	adjusted, _ := judgeAll(t, set, 4, judgments.ModeTokenIDs, stub.Config{NoBatchNoise: true, Adjust: func(item, question string, logits map[int]float64) {
		if item != target {
			return
		}
		switch question {
		case "verdict":
			logits[loserID] += 50
		case "payee_matches":
			logits[stub.TokenDigit0+1] += 0.1
		}
	}})
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
