package quality_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/fixtures/checks"
	"github.com/vetbench/vetbench/fixtures/faces"
	"github.com/vetbench/vetbench/fixtures/signatures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/quality"
)

// qAnswers builds the answers Compute reads: the verdict label, Noul
// values and Score values (the other Answer fields do not enter a figure).
func qAnswers(verdict string, nouls, scores map[string]float64) []judgments.Answer {
	out := []judgments.Answer{{Question: "verdict", Kind: judgments.Choice, Label: verdict}}
	for q, p := range nouls {
		label := "false"
		if p >= 0.5 {
			label = "true"
		}
		out = append(out, judgments.Answer{Question: q, Kind: judgments.Noul, Label: label, Value: p})
	}
	for q, v := range scores {
		out = append(out, judgments.Answer{Question: q, Kind: judgments.Score, Value: v})
	}
	return out
}

// checksRules are typevet's checks rules, written out by hand from
// check_match/metrics.py (not taken from the fixtures package, so a wrong
// fixtures.Agreement cannot hide here).
var checksRules = quality.Rules{
	Verdict:    "verdict",
	CannotTell: "cannot_tell",
	Agreement: map[string]map[string]bool{
		"consistent":      {"payee": true, "amounts": true},
		"payee_mismatch":  {"payee": false},
		"amount_mismatch": {"amounts": false},
		"date_mismatch":   {"payee": true, "amounts": true},
		"unsigned":        {"payee": true, "amounts": true},
	},
}

func checkItem(id, group, verdict string, gold []string, payee, amounts float64, payeeGold, amountsGold string) receipts.Item {
	return receipts.Item{
		ID: id, Group: group,
		Gold:    map[string][]string{"verdict": gold, "payee": {payeeGold}, "amounts": {amountsGold}},
		Answers: qAnswers(verdict, map[string]float64{"payee": payee, "amounts": amounts}, map[string]float64{"legibility": 4}),
	}
}

func TestComputeRules(t *testing.T) {
	consistent := []string{"consistent"}
	blurOK := []string{"consistent", "cannot_tell"}
	base := []receipts.Item{
		checkItem("r00:clean", "clean", "consistent", consistent, 0.9, 0.9, "true", "true"),
		checkItem("r00:payee_changed", "payee_changed", "payee_mismatch", []string{"payee_mismatch"}, 0.2, 0.9, "false", "true"),
		checkItem("r00:written_amount_changed", "written_amount_changed", "amount_mismatch", []string{"amount_mismatch"}, 0.9, 0.7, "true", "false"),
		checkItem("r00:low_legibility", "low_legibility", "cannot_tell", blurOK, 0.6, 0.6, "true", "true"),
		checkItem("r01:clean", "clean", "unsigned", consistent, 0.5, 0.95, "true", "true"),
	}
	got := quality.Compute(base, checksRules)
	require.Equal(t, 5, got.Items)
	// right: clean, payee, amount, low_legibility (cannot_tell is listed); wrong: r01 unsigned
	require.InDelta(t, 4.0/5, got.Accuracy, 1e-15)
	require.Equal(t, map[string]float64{"clean": 0.5, "payee_changed": 1, "written_amount_changed": 1, "low_legibility": 1}, got.AccuracyByGroup)
	require.InDelta(t, 1.0/5, got.CannotTellRate, 1e-15)
	// agreement: r00:clean yes; payee yes (0.2 < 0.5); amount no (0.7 >= 0.5);
	// cannot_tell not counted; r01 unsigned yes (0.5 counts as true).
	require.Equal(t, 4, got.AgreementCounted)
	require.NotNil(t, got.NoulChoiceAgreement)
	require.InDelta(t, 3.0/4, *got.NoulChoiceAgreement, 1e-15)
	// payee Noul: all 5 right (0.5 is "true"); amounts: 0.7 on a false gold is wrong.
	require.Equal(t, 1.0, got.NoulAccuracy["payee"])
	require.InDelta(t, 4.0/5, got.NoulAccuracy["amounts"], 1e-15)
	require.Equal(t, map[string]int{"consistent": 1, "unsigned": 1}, got.VerdictCounts["clean"])
	require.Equal(t, 4.0, got.ScoreMeanByGroup["clean"])
	require.Zero(t, got.Unscored)

	t.Run("failed, discarded and unscored items count in no figure", func(t *testing.T) {
		items := append([]receipts.Item(nil), base...)
		bad := checkItem("r02:clean", "clean", "payee_mismatch", consistent, 0.1, 0.1, "true", "true")
		failed, discarded, noVerdict := bad, bad, bad
		failed.Error = "question verdict: missing scores"
		discarded.Discarded = true
		noVerdict.Answers = noVerdict.Answers[1:]
		items = append(items, failed, discarded, noVerdict)
		q := quality.Compute(items, checksRules)
		require.Equal(t, 5, q.Items)
		require.Equal(t, 1, q.Unscored)
		require.Equal(t, got.Accuracy, q.Accuracy)
		require.Equal(t, *got.NoulChoiceAgreement, *q.NoulChoiceAgreement)
	})

	// Positive controls: one changed answer moves exactly the figure it should.
	mutations := []struct {
		name   string
		mutate func(items []receipts.Item)
		check  func(t *testing.T, q receipts.Quality)
	}{
		{"flip r01 to consistent", func(items []receipts.Item) { items[4].Answers[0].Label = "consistent" }, func(t *testing.T, q receipts.Quality) {
			require.Equal(t, 1.0, q.Accuracy)
			require.Equal(t, 1.0, q.AccuracyByGroup["clean"])
		}},
		{"cannot_tell on a clean check is wrong", func(items []receipts.Item) { items[0].Answers[0].Label = "cannot_tell" }, func(t *testing.T, q receipts.Quality) {
			require.InDelta(t, 3.0/5, q.Accuracy, 1e-15)
			require.InDelta(t, 2.0/5, q.CannotTellRate, 1e-15)
			require.Equal(t, 3, q.AgreementCounted)
		}},
		{"amounts Noul drops below 0.5", func(items []receipts.Item) { setValue(items[2], "amounts", 0.49) }, func(t *testing.T, q receipts.Quality) {
			require.Equal(t, 1.0, *q.NoulChoiceAgreement)
		}},
		{"payee Noul just below 0.5 on a matching payee", func(items []receipts.Item) { setValue(items[4], "payee", 0.4999) }, func(t *testing.T, q receipts.Quality) {
			require.InDelta(t, 2.0/4, *q.NoulChoiceAgreement, 1e-15)
			require.InDelta(t, 4.0/5, q.NoulAccuracy["payee"], 1e-15)
		}},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			items := make([]receipts.Item, len(base))
			for i, it := range base {
				items[i] = it
				items[i].Answers = append([]judgments.Answer(nil), it.Answers...)
			}
			m.mutate(items)
			m.check(t, quality.Compute(items, checksRules))
		})
	}
}

// setValue sets the value of the item's answer to question q.
func setValue(it receipts.Item, q string, v float64) {
	for i := range it.Answers {
		if it.Answers[i].Question == q {
			it.Answers[i].Value = v
			return
		}
	}
	panic("no answer " + q)
}

func TestComputeRankAndCalibration(t *testing.T) {
	rules := quality.Rules{Verdict: "verdict", CannotTell: "cannot_tell",
		Agreement: map[string]map[string]bool{"same": {"same": true}, "different": {"same": false}}}
	mk := func(p float64, same bool, verdict string) receipts.Item {
		g, v := "different", []string{"different"}
		if same {
			g, v = "same", []string{"same"}
		}
		return receipts.Item{ID: "x", Group: g,
			Gold:    map[string][]string{"verdict": v, "same": {map[bool]string{true: "true", false: "false"}[same]}},
			Answers: qAnswers(verdict, map[string]float64{"same": p}, nil)}
	}
	// ranks: 0.1 -> 1, the tied 0.5s -> 2.5 each, 0.9 -> 4; positives 4 + 2.5;
	// U = 6.5 - 3 = 3.5; AUC = 3.5 / (2*2).
	items := []receipts.Item{mk(0.9, true, "same"), mk(0.5, true, "same"), mk(0.5, false, "same"), mk(0.1, false, "different")}
	q := quality.Compute(items, rules)
	require.InDelta(t, 0.875, q.NoulROCAUC["same"], 1e-15)
	// bins: 0.9 -> 9, 0.5 -> 5 (two), 0.1 -> 1: |0.9-1| + 2|0.5-0.5| + |0.1-0| over 4.
	require.InDelta(t, (0.1+0+0.1)/4, q.NoulECE["same"], 1e-15)
	require.Equal(t, map[string]float64{"same": 1, "different": 0.5}, q.NoulAcceptRateByGroup["same"])

	// 1.0 falls in the last bin with 0.95: |0.975-1|*2, plus 0.85 alone (gold false).
	items = []receipts.Item{mk(1.0, true, "same"), mk(0.95, true, "same"), mk(0.85, false, "same")}
	q = quality.Compute(items, rules)
	require.InDelta(t, (2*0.025+0.85)/3, q.NoulECE["same"], 1e-12)
	require.InDelta(t, 1.0, q.NoulROCAUC["same"], 1e-15)

	// one class only: no AUC.
	q = quality.Compute(items[:2], rules)
	_, ok := q.NoulROCAUC["same"]
	require.False(t, ok)

	// nothing scored: zero figures, no agreement.
	q = quality.Compute(nil, rules)
	require.Zero(t, q.Items)
	require.Nil(t, q.NoulChoiceAgreement)
}

// typevetQuality is a compact copy of a typevet receipt's items and
// metrics (see testdata/quality; made from the receipts in
// typevet evals/fixtures/*/receipts).
type typevetQuality struct {
	Source string `json:"source"`
	Items  []struct {
		ID      string              `json:"id"`
		Group   string              `json:"group"`
		Gold    map[string][]string `json:"gold"`
		Verdict string              `json:"verdict"`
		Nouls   map[string]float64  `json:"nouls"`
		Scores  map[string]float64  `json:"scores"`
	} `json:"items"`
	Metrics json.RawMessage `json:"metrics"`
}

func loadTypevet(t *testing.T, name string) ([]receipts.Item, typevetQuality) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	require.NoError(t, err)
	var tq typevetQuality
	require.NoError(t, json.Unmarshal(raw, &tq))
	items := make([]receipts.Item, len(tq.Items))
	for i, it := range tq.Items {
		items[i] = receipts.Item{ID: it.ID, Group: it.Group, Gold: it.Gold, Answers: qAnswers(it.Verdict, it.Nouls, it.Scores)}
	}
	return items, tq
}

func rulesOf(verdict, cannotTell string, agreement map[string]map[string]bool) quality.Rules {
	return quality.Rules{Verdict: verdict, CannotTell: cannotTell, Agreement: agreement}
}

// TestComputeReproducesTypevet feeds typevet's own H100 answers
// through Compute, with each set's rules from the fixtures
// packages, and requires typevet's published figures.
func TestComputeReproducesTypevet(t *testing.T) {
	const tol = 1e-12
	t.Run("faces", func(t *testing.T) {
		items, tq := loadTypevet(t, "faces")
		var m struct {
			Pairs          int     `json:"pairs"`
			Accuracy       float64 `json:"accuracy"`
			ROCAUC         float64 `json:"roc_auc"`
			ECE            float64 `json:"ece"`
			CannotTellRate float64 `json:"cannot_tell_rate"`
		}
		require.NoError(t, json.Unmarshal(tq.Metrics, &m))
		q := quality.Compute(items, rulesOf(faces.Verdict, faces.CannotTell, faces.Agreement()))
		require.Equal(t, m.Pairs, q.Items)
		require.InDelta(t, m.Accuracy, q.Accuracy, tol)
		require.InDelta(t, m.ROCAUC, q.NoulROCAUC[faces.SamePerson], tol)
		require.InDelta(t, m.ECE, q.NoulECE[faces.SamePerson], tol)
		require.InDelta(t, m.CannotTellRate, q.CannotTellRate, tol)

		// positive control: one wrong verdict more costs exactly 1/200
		for i := range items {
			if items[i].Answers[0].Label == items[i].Gold["verdict"][0] {
				items[i].Answers[0].Label = "cannot_tell"
				break
			}
		}
		q2 := quality.Compute(items, rulesOf(faces.Verdict, faces.CannotTell, faces.Agreement()))
		require.InDelta(t, m.Accuracy-1.0/200, q2.Accuracy, tol)
		require.InDelta(t, 1.0/200, q2.CannotTellRate, tol)
	})
	t.Run("signatures", func(t *testing.T) {
		items, tq := loadTypevet(t, "signatures")
		var m struct {
			Pairs        int     `json:"pairs"`
			Accuracy     float64 `json:"accuracy"`
			KindAccuracy float64 `json:"kind_accuracy"`
			ROCAUC       float64 `json:"roc_auc"`
			ECE          float64 `json:"ece"`
			CannotTell   float64 `json:"cannot_tell_rate"`
			Skilled      struct {
				NoulRate    float64 `json:"noul_rate"`
				VerdictRate float64 `json:"verdict_rate"`
			} `json:"skilled_false_accept"`
			Agreement struct {
				Decided int     `json:"decided"`
				Rate    float64 `json:"rate"`
			} `json:"noul_choice_agreement"`
			ByKind map[string]struct {
				Pairs          int            `json:"pairs"`
				Accuracy       float64        `json:"accuracy"`
				NoulAcceptRate float64        `json:"noul_accept_rate"`
				VerdictCounts  map[string]int `json:"verdict_counts"`
			} `json:"by_kind"`
		}
		require.NoError(t, json.Unmarshal(tq.Metrics, &m))
		q := quality.Compute(items, rulesOf(signatures.Verdict, signatures.CannotTell, signatures.Agreement()))
		require.Equal(t, m.Pairs, q.Items)
		require.InDelta(t, m.Accuracy, q.Accuracy, tol)
		require.InDelta(t, m.ROCAUC, q.NoulROCAUC[signatures.SameWriter], tol)
		require.InDelta(t, m.ECE, q.NoulECE[signatures.SameWriter], tol)
		require.InDelta(t, m.CannotTell, q.CannotTellRate, tol)
		require.Equal(t, m.Agreement.Decided, q.AgreementCounted)
		require.InDelta(t, m.Agreement.Rate, *q.NoulChoiceAgreement, tol)
		kindRight := 0
		for kind, want := range m.ByKind {
			require.InDelta(t, want.Accuracy, q.AccuracyByGroup[kind], tol, kind)
			require.InDelta(t, want.NoulAcceptRate, q.NoulAcceptRateByGroup[signatures.SameWriter][kind], tol, kind)
			for label, n := range want.VerdictCounts {
				require.Equal(t, n, q.VerdictCounts[kind][label], "%s %s", kind, label)
			}
			kindRight += q.VerdictCounts[kind][signatures.KindLabel(signatures.Kind(kind))]
		}
		require.InDelta(t, m.KindAccuracy, float64(kindRight)/float64(q.Items), tol)
		skilled := string(signatures.GenuineSkilled)
		require.InDelta(t, m.Skilled.NoulRate, q.NoulAcceptRateByGroup[signatures.SameWriter][skilled], tol)
		require.InDelta(t, m.Skilled.VerdictRate, float64(q.VerdictCounts[skilled][signatures.SameWriter])/60, tol)
	})
	t.Run("checks", func(t *testing.T) {
		items, tq := loadTypevet(t, "checks")
		var m struct {
			Cases      int                `json:"cases"`
			Accuracy   float64            `json:"accuracy"`
			ByVariant  map[string]float64 `json:"accuracy_by_variant"`
			CannotTell float64            `json:"cannot_tell_rate"`
			FalseClear float64            `json:"false_clear_rate"`
			Nouls      map[string]struct {
				ROCAUC float64 `json:"roc_auc"`
				ECE    float64 `json:"ece"`
			} `json:"nouls"`
			ScoreByVariant map[string]struct {
				Mean float64 `json:"mean"`
			} `json:"score_by_variant"`
			Agreement struct {
				Rate    float64 `json:"rate"`
				Counted int     `json:"counted"`
			} `json:"noul_choice_agreement"`
		}
		require.NoError(t, json.Unmarshal(tq.Metrics, &m))
		q := quality.Compute(items, rulesOf(checks.Verdict, checks.CannotTell, checks.Agreement()))
		require.Equal(t, m.Cases, q.Items)
		require.InDelta(t, m.Accuracy, q.Accuracy, tol)
		require.Len(t, q.AccuracyByGroup, len(m.ByVariant))
		for v, want := range m.ByVariant {
			require.InDelta(t, want, q.AccuracyByGroup[v], tol, v)
			require.InDelta(t, m.ScoreByVariant[v].Mean, q.ScoreMeanByGroup[v], tol, v)
		}
		require.InDelta(t, m.CannotTell, q.CannotTellRate, tol)
		for id, want := range m.Nouls {
			require.InDelta(t, want.ROCAUC, q.NoulROCAUC[id], tol, id)
			require.InDelta(t, want.ECE, q.NoulECE[id], tol, id)
		}
		require.Equal(t, m.Agreement.Counted, q.AgreementCounted)
		require.InDelta(t, m.Agreement.Rate, *q.NoulChoiceAgreement, tol)
		// false clear: "consistent" on the five mismatch/unsigned variants
		clears, n := 0, 0
		for _, v := range []string{"payee_changed", "written_amount_changed", "both_amounts_changed", "wrong_date", "unsigned"} {
			clears += q.VerdictCounts[v]["consistent"]
			for _, c := range q.VerdictCounts[v] {
				n += c
			}
		}
		require.Equal(t, 100, n)
		require.InDelta(t, m.FalseClear, float64(clears)/float64(n), tol)
	})
}
