// Package quality scores a run's answers against the items' gold labels
// as typevet's metrics do: accuracy, the cannot-tell rate, Noul–Choice
// agreement and, per Noul, accuracy, ROC-AUC and calibration (ECE). The
// figures land in a receipt's quality block (receipts.Quality).
package quality

import (
	"math"
	"slices"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// Rules say how a set's answers are scored: the fixtures.Set fields
// Verdict, CannotTell and Agreement.
type Rules struct {
	// Verdict is the id of the Choice question scored for accuracy.
	Verdict string
	// CannotTell is the verdict's abstain label (counted in the rate; right
	// only where an item's gold lists it, as for blurred checks).
	CannotTell string
	// Agreement maps a verdict label to the Noul answers it implies
	// (question id -> P(true) >= 0.5). Labels absent here are not counted.
	Agreement map[string]map[string]bool
}

// NoulThreshold is where a Noul says "true": P(true) >= 0.5, as typevet's
// accept threshold (and its checks rule, below 0.5 is "mismatch").
const NoulThreshold = 0.5

// eceBins is typevet's number of equal-width calibration bins.
const eceBins = 10

// Compute scores items against their gold labels as typevet's
// metrics do:
//   - accuracy: the verdict label is one of the item's gold verdict labels
//     (so cannot_tell is wrong unless the gold lists it; signatures list
//     both "different" labels, which is typevet's same-writer-side score);
//   - cannot_tell rate: share of verdicts equal to rules.CannotTell;
//   - Noul–Choice agreement: among items whose verdict is a key of
//     rules.Agreement, the share whose Nouls all fall on the implied side;
//   - per Noul with a "true"/"false" gold: accuracy, ROC-AUC, ECE, and the
//     accept rate per group; the mean Score value per group.
//
// Items with Error or Discarded set are not counted; nor is an item with no
// verdict answer or no verdict gold (Unscored says how many).
func Compute(items []receipts.Item, rules Rules) receipts.Quality {
	q := receipts.Quality{}
	t := tallies{byGroup: map[string]*groupTally{}, nouls: map[string]*noulTally{}, scores: map[string]map[string][]float64{}}
	for _, it := range items {
		if it.Error != "" || it.Discarded {
			continue
		}
		v, ok := it.Answer(rules.Verdict)
		gold := it.Gold[rules.Verdict]
		if !ok || len(gold) == 0 {
			q.Unscored++
			continue
		}
		q.Items++
		t.verdict(&q, it, v, gold, rules)
		t.answers(it)
	}
	t.verdictFigures(&q)
	t.noulFigures(&q)
	t.scoreFigures(&q)
	return q
}

// tallies are Compute's counts over the scored items, turned into the
// quality figures once every item is read.
type tallies struct {
	byGroup                           map[string]*groupTally
	agree, counted, cannotTell, right int
	nouls                             map[string]*noulTally
	noulOrder                         []string                        // first-seen order of the Noul questions
	scores                            map[string]map[string][]float64 // question -> group -> values
}

type groupTally struct{ right, n int }

// verdict counts one item's verdict: right or wrong, cannot tell, by
// group (and into q's verdict counts), and its Noul–Choice agreement.
func (t *tallies) verdict(q *receipts.Quality, it receipts.Item, v judgments.Answer, gold []string, rules Rules) {
	correct := slices.Contains(gold, v.Label)
	if correct {
		t.right++
	}
	if v.Label == rules.CannotTell {
		t.cannotTell++
	}
	if it.Group != "" {
		g := t.byGroup[it.Group]
		if g == nil {
			g = &groupTally{}
			t.byGroup[it.Group] = g
		}
		g.n++
		if correct {
			g.right++
		}
		if q.VerdictCounts == nil {
			q.VerdictCounts = map[string]map[string]int{}
		}
		if q.VerdictCounts[it.Group] == nil {
			q.VerdictCounts[it.Group] = map[string]int{}
		}
		q.VerdictCounts[it.Group][v.Label]++
	}
	if implied, ok := rules.Agreement[v.Label]; ok {
		if agrees, known := agreement(it, implied); known {
			t.counted++
			if agrees {
				t.agree++
			}
		}
	}
}

// answers gathers one item's Nouls that have a true/false gold and a
// probability, and its finite Score values, by question.
func (t *tallies) answers(it receipts.Item) {
	for _, a := range it.Answers {
		switch a.Kind {
		case judgments.Noul:
			truth, ok := noulGold(it.Gold[a.Question])
			if !ok || !inUnit(a.Value) {
				continue
			}
			n := t.nouls[a.Question]
			if n == nil {
				n = &noulTally{accept: map[string][2]int{}}
				t.nouls[a.Question] = n
				t.noulOrder = append(t.noulOrder, a.Question)
			}
			n.add(a.Value, truth, it.Group)
		case judgments.Score:
			if math.IsNaN(a.Value) || math.IsInf(a.Value, 0) {
				continue
			}
			if t.scores[a.Question] == nil {
				t.scores[a.Question] = map[string][]float64{}
			}
			t.scores[a.Question][it.Group] = append(t.scores[a.Question][it.Group], a.Value)
		}
	}
}

// verdictFigures are accuracy, the cannot-tell rate, accuracy by group
// and the Noul–Choice agreement.
func (t *tallies) verdictFigures(q *receipts.Quality) {
	if q.Items > 0 {
		q.Accuracy = float64(t.right) / float64(q.Items)
		q.CannotTellRate = float64(t.cannotTell) / float64(q.Items)
	}
	if len(t.byGroup) > 0 {
		q.AccuracyByGroup = map[string]float64{}
		for g, gt := range t.byGroup {
			q.AccuracyByGroup[g] = float64(gt.right) / float64(gt.n)
		}
	}
	q.AgreementCounted = t.counted
	if t.counted > 0 {
		r := float64(t.agree) / float64(t.counted)
		q.NoulChoiceAgreement = &r
	}
}

// noulFigures are each Noul's accuracy, ECE, ROC-AUC (when both truths
// occur) and accept rate by group; maps stay nil when there is nothing.
func (t *tallies) noulFigures(q *receipts.Quality) {
	for _, id := range t.noulOrder {
		n := t.nouls[id]
		if q.NoulAccuracy == nil {
			q.NoulAccuracy = map[string]float64{}
			q.NoulECE = map[string]float64{}
		}
		q.NoulAccuracy[id] = float64(n.right) / float64(len(n.values))
		q.NoulECE[id] = ece(n.values, n.truth)
		if auc, ok := rocAUC(n.values, n.truth); ok {
			if q.NoulROCAUC == nil {
				q.NoulROCAUC = map[string]float64{}
			}
			q.NoulROCAUC[id] = auc
		}
		for g, c := range n.accept {
			if g == "" {
				continue
			}
			if q.NoulAcceptRateByGroup == nil {
				q.NoulAcceptRateByGroup = map[string]map[string]float64{}
			}
			if q.NoulAcceptRateByGroup[id] == nil {
				q.NoulAcceptRateByGroup[id] = map[string]float64{}
			}
			q.NoulAcceptRateByGroup[id][g] = float64(c[0]) / float64(c[1])
		}
	}
}

// scoreFigures are the mean Score value by group. One Score question
// (every set has one) is keyed by group alone; with several, keys are
// "<question>/<group>" so none mixes with another.
func (t *tallies) scoreFigures(q *receipts.Quality) {
	for id, groups := range t.scores {
		for g, vals := range groups {
			if g == "" {
				continue
			}
			if q.ScoreMeanByGroup == nil {
				q.ScoreMeanByGroup = map[string]float64{}
			}
			k := g
			if len(t.scores) > 1 {
				k = id + "/" + g
			}
			q.ScoreMeanByGroup[k] = mean(vals)
		}
	}
}

// agreement reports whether every implied Noul is on its side; known is
// false when the item lacks one of them.
func agreement(it receipts.Item, implied map[string]bool) (agrees, known bool) {
	agrees = true
	for qid, want := range implied {
		a, ok := it.Answer(qid)
		if !ok || !inUnit(a.Value) {
			return false, false
		}
		if (a.Value >= NoulThreshold) != want {
			agrees = false
		}
	}
	return agrees, len(implied) > 0
}

func noulGold(labels []string) (truth, ok bool) {
	if len(labels) != 1 {
		return false, false
	}
	switch labels[0] {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

func inUnit(p float64) bool { return p >= 0 && p <= 1 }

type noulTally struct {
	values []float64
	truth  []bool
	right  int
	accept map[string][2]int // group -> (accepted, n)
}

func (t *noulTally) add(p float64, truth bool, group string) {
	t.values = append(t.values, p)
	t.truth = append(t.truth, truth)
	said := p >= NoulThreshold
	if said == truth {
		t.right++
	}
	c := t.accept[group]
	if said {
		c[0]++
	}
	c[1]++
	t.accept[group] = c
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// rocAUC is the Mann–Whitney U statistic with average ranks for ties, over
// positives × negatives; ok is false when a class is empty.
func rocAUC(p []float64, truth []bool) (float64, bool) {
	pos := 0
	for _, y := range truth {
		if y {
			pos++
		}
	}
	neg := len(truth) - pos
	if pos == 0 || neg == 0 {
		return 0, false
	}
	order := make([]int, len(p))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case p[a] < p[b]:
			return -1
		case p[a] > p[b]:
			return 1
		}
		return 0
	})
	ranks := make([]float64, len(p))
	for start := 0; start < len(order); {
		end := start
		for end+1 < len(order) && p[order[end+1]] == p[order[start]] {
			end++
		}
		avg := float64(start+end)/2 + 1
		for k := start; k <= end; k++ {
			ranks[order[k]] = avg
		}
		start = end + 1
	}
	sum := 0.0
	for i, y := range truth {
		if y {
			sum += ranks[i]
		}
	}
	u := sum - float64(pos)*float64(pos+1)/2
	return u / (float64(pos) * float64(neg)), true
}

// ece is typevet's expected calibration error: bin i = min(floor(p*10), 9),
// then the count-weighted |mean p - share of true| over the bins.
func ece(p []float64, truth []bool) float64 {
	if len(p) == 0 {
		return 0
	}
	var sum [eceBins]float64
	var pos, n [eceBins]int
	for i, v := range p {
		b := min(int(v*eceBins), eceBins-1)
		sum[b] += v
		n[b]++
		if truth[i] {
			pos[b]++
		}
	}
	gap := 0.0
	for b := range n {
		if n[b] == 0 {
			continue
		}
		gap += float64(n[b]) * math.Abs(sum[b]/float64(n[b])-float64(pos[b])/float64(n[b]))
	}
	return gap / float64(len(p))
}
