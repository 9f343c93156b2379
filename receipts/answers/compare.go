// Package answers decides whether a candidate's answers moved from a
// baseline's: item by item and question by question, under a Policy, for
// one pair of receipts (Compare), two sweeps (CompareSweep) or the levels
// of one sweep against its c=1 receipt (CompareLevels), and against a
// golden receipt (Golden). Its Report renders as text for a person and as
// JSON under the stable contract "vetbench.compare/v1".
package answers

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// ReportSchema names the JSON form of a comparison Report.
const ReportSchema = "vetbench.compare/v1"

// Policy says which answer movements fail a comparison.
type Policy struct {
	// NoulTolerance is the largest |ΔP(true)| of a Noul that passes.
	NoulTolerance float64 `json:"noul_tolerance"`
	// NearTieMargin: a moved verdict whose baseline top-1 minus top-2
	// probability is below it is a near tie, else confident.
	NearTieMargin float64 `json:"near_tie_margin"`
	// FailNearTies fails near-tie moves too (the strict policy).
	FailNearTies bool `json:"fail_near_ties"`
	// AllowIdentityDrift compares receipts whose identities differ and
	// lists the differences in the report instead of refusing.
	AllowIdentityDrift bool `json:"allow_identity_drift"`
}

// Policy defaults. DefaultNearTieMargin is measured, not picked: between
// typevet's own runs of one vLLM 0.30.0 launch on an H100 (bf16) at
// concurrency 1, 16 and 32, verdicts moved whose baseline margin was as
// large as 0.303, and the gap between the two leading logprobs moved in
// steps of 0.125 nat by up to 1.25 nat, which flips a two-way answer of
// margin up to tanh(0.625) ≈ 0.55. A margin of 0.5 keeps those batch
// effects out of the failures while any move of an answer the baseline
// held at 3:1 or firmer fails.
const (
	DefaultNoulTolerance = 0.001
	DefaultNearTieMargin = 0.5
)

// DefaultPolicy fails confident verdict moves and Nouls moved by more
// than 0.001; near-tie moves are reported, not failed.
func DefaultPolicy() Policy {
	return Policy{NoulTolerance: DefaultNoulTolerance, NearTieMargin: DefaultNearTieMargin}
}

// StrictPolicy is DefaultPolicy that also fails near-tie moves.
func StrictPolicy() Policy {
	p := DefaultPolicy()
	p.FailNearTies = true
	return p
}

// Validate reports a policy that cannot be applied.
func (p Policy) Validate() error {
	if bad(p.NoulTolerance) || p.NoulTolerance < 0 || p.NoulTolerance >= 1 {
		return fmt.Errorf("policy: noul tolerance %v outside [0,1)", p.NoulTolerance)
	}
	if bad(p.NearTieMargin) || p.NearTieMargin < 0 || p.NearTieMargin > 1 {
		return fmt.Errorf("policy: near-tie margin %v outside [0,1]", p.NearTieMargin)
	}
	return nil
}

// Move classes.
const (
	NearTie   = "near_tie"
	Confident = "confident"
)

// Report is the outcome of Compare. Its JSON form is a stable contract
// (schema "vetbench.compare/v1"); see the README for each field.
type Report struct {
	Schema    string         `json:"schema"`
	Set       string         `json:"set"`
	Baseline  Side           `json:"baseline"`
	Candidate Side           `json:"candidate"`
	Policy    Policy         `json:"policy"`
	Identity  IdentityReport `json:"identity"`

	ItemsCompared       int     `json:"items_compared"`
	AnswersCompared     int     `json:"answers_compared"`
	VerdictsEqual       int     `json:"verdicts_equal"`
	VerdictsMoved       Moves   `json:"verdicts_moved"`
	NoulBeyondTolerance int     `json:"noul_beyond_tolerance"`
	MaxNoulDelta        float64 `json:"max_noul_delta"`

	Questions []QuestionSummary `json:"questions"`
	// Moved lists every answer whose verdict changed, baseline order.
	Moved []Change `json:"moved"`
	// NoulDrift lists every Noul moved beyond the tolerance.
	NoulDrift    []Change       `json:"noul_drift"`
	Missing      Missing        `json:"missing"`
	FailedItems  []FailedItem   `json:"failed_items"`
	Incomparable []Incomparable `json:"incomparable"`
	// OffFormat are both sides' off-format answers (the sampled token was
	// no candidate), when both record sampled tokens: shown, not failed.
	OffFormat *OffFormatChange `json:"off_format,omitempty"`

	// FailureLines say why the comparison failed; empty when it passed.
	FailureLines []string `json:"failures"`
	Passed       bool     `json:"passed"`
}

// Side describes one of the two receipts.
type Side struct {
	File        string            `json:"file,omitempty"`
	Source      string            `json:"source"`
	RunID       string            `json:"run_id,omitempty"`
	Model       string            `json:"model"`
	Concurrency int               `json:"concurrency"`
	Target      string            `json:"target"`
	Finished    time.Time         `json:"finished_utc"`
	Items       int               `json:"items"`
	Stopped     *receipts.Stopped `json:"stopped"`
}

// IdentityReport says whether the two receipts are the same experiment.
type IdentityReport struct {
	Equal           bool     `json:"equal"`
	BaselineDigest  string   `json:"baseline_digest"`
	CandidateDigest string   `json:"candidate_digest"`
	Differences     []string `json:"differences"`
	// Unverified are fields only one side records; Unrecorded fields
	// neither records. Neither counts as a difference.
	Unverified []string `json:"unverified"`
	Unrecorded []string `json:"unrecorded"`
}

// Moves counts moved verdicts by class.
type Moves struct {
	NearTie   int `json:"near_tie"`
	Confident int `json:"confident"`
}

// Total is near-tie plus confident moves.
func (m Moves) Total() int { return m.NearTie + m.Confident }

// QuestionSummary are one question's figures.
type QuestionSummary struct {
	Question            string `json:"question"`
	Kind                string `json:"kind"`
	Compared            int    `json:"compared"`
	VerdictsEqual       int    `json:"verdicts_equal"`
	VerdictsMoved       Moves  `json:"verdicts_moved"`
	NoulBeyondTolerance int    `json:"noul_beyond_tolerance"`
	// MaxNoulDelta is max |ΔP(true)|; null unless the question is a Noul.
	MaxNoulDelta *float64 `json:"max_noul_delta"`
	// MaxProbDelta is max over items and labels of |Δp|; MaxTotalVariation
	// max of ½Σ|Δp|. Null when no pair of answers had probabilities
	// (value-only scores).
	MaxProbDelta      *float64 `json:"max_prob_delta"`
	MaxTotalVariation *float64 `json:"max_total_variation"`
	// MaxValueDelta is max |Δvalue|: P(true), the winner's probability or
	// the expected level.
	MaxValueDelta float64 `json:"max_value_delta"`
}

// Change is one answer that moved, with both sides side by side.
type Change struct {
	Item     string `json:"item"`
	Question string `json:"question"`
	Kind     string `json:"kind"`
	// Class is near_tie or confident (moved verdicts only; empty in
	// noul_drift when the verdict held).
	Class     string     `json:"class,omitempty"`
	Baseline  AnswerView `json:"baseline"`
	Candidate AnswerView `json:"candidate"`
	// NoulDelta is |ΔP(true)| (Nouls only).
	NoulDelta *float64 `json:"noul_delta,omitempty"`
	// MaxProbDelta and TotalVariation are null for value-only answers.
	MaxProbDelta   *float64 `json:"max_prob_delta"`
	TotalVariation *float64 `json:"total_variation"`
	ValueDelta     float64  `json:"value_delta"`
}

// AnswerView is one side of a Change.
type AnswerView struct {
	Label string  `json:"label"`
	Value float64 `json:"value"`
	// Margin is top-1 minus top-2 probability; null for value-only.
	Margin        *float64           `json:"margin"`
	Labels        []string           `json:"labels"`
	Probabilities map[string]float64 `json:"probabilities"`
}

// Missing lists item ids held by one side only.
type Missing struct {
	BaselineOnly  []string `json:"baseline_only"`
	CandidateOnly []string `json:"candidate_only"`
}

// FailedItem is an item whose judgment failed on one side.
type FailedItem struct {
	Item  string `json:"item"`
	Side  string `json:"side"` // baseline | candidate
	Error string `json:"error"`
}

// Incomparable is an answer pair that could not be compared.
type Incomparable struct {
	Item     string `json:"item"`
	Question string `json:"question"`
	Reason   string `json:"reason"`
}

// OffFormatChange is both sides' off-format counts.
type OffFormatChange struct {
	Baseline  receipts.OffFormat `json:"baseline"`
	Candidate receipts.OffFormat `json:"candidate"`
}

// Failed reports whether the candidate failed the comparison.
func (r *Report) Failed() bool { return !r.Passed }

// Failures lists why the comparison failed, each naming the item and the
// question where there is one.
func (r *Report) Failures() []string { return r.FailureLines }

// Compare compares candidate answers with baseline answers, item by item
// and question by question, under policy p. It refuses receipts of
// different experiments (receipts.ErrIdentityMismatch, as
// *receipts.IdentityError) unless p.AllowIdentityDrift is set; then the
// report lists the differences.
func Compare(base, cand *receipts.Receipt, p Policy) (*Report, error) {
	if base == nil || cand == nil {
		return nil, errors.New("compare: nil receipt")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	id := receipts.CompareIdentity(base, cand)
	if len(id.Differences) > 0 && !p.AllowIdentityDrift {
		return nil, &receipts.IdentityError{Differences: id.Differences}
	}
	rep := newReport(base, cand, p, id)
	baseIDs := rep.compareItems(base, cand)
	rep.missing(cand, baseIDs)
	if rep.ItemsCompared == 0 {
		rep.fail("no item was compared")
	}
	if bo, co := receipts.OffFormatOf(base.Items), receipts.OffFormatOf(cand.Items); bo != nil && co != nil {
		rep.OffFormat = &OffFormatChange{Baseline: *bo, Candidate: *co}
	}
	rep.Passed = len(rep.FailureLines) == 0
	return rep, nil
}

// newReport is an empty report of the two receipts (every list non-nil,
// so the JSON contract holds [] rather than null), failed already for a
// side that stopped early.
func newReport(base, cand *receipts.Receipt, p Policy, id receipts.IdentityComparison) *Report {
	rep := &Report{
		Schema:    ReportSchema,
		Set:       base.Set,
		Baseline:  sideOf(base),
		Candidate: sideOf(cand),
		Policy:    p,
		Identity: IdentityReport{
			Equal:           len(id.Differences) == 0,
			BaselineDigest:  base.IdentityDigest(),
			CandidateDigest: cand.IdentityDigest(),
			Differences:     nonNil(id.Differences),
			Unverified:      nonNil(id.Unverified),
			Unrecorded:      nonNil(id.Unrecorded),
		},
		Questions:    []QuestionSummary{},
		Moved:        []Change{},
		NoulDrift:    []Change{},
		Missing:      Missing{BaselineOnly: []string{}, CandidateOnly: []string{}},
		FailedItems:  []FailedItem{},
		Incomparable: []Incomparable{},
		FailureLines: []string{},
	}
	for _, s := range []struct {
		name string
		st   *receipts.Stopped
	}{{"baseline", base.Stopped}, {"candidate", cand.Stopped}} {
		if s.st != nil {
			rep.fail("%s stopped at item %s (%s): %s", s.name, s.st.Item, s.st.Reason, s.st.Message)
		}
	}
	return rep
}

// summaries are the per-question figures, in the order the baseline
// first answers each question.
type summaries struct {
	by    map[string]*QuestionSummary
	order []string
}

// of is a's question's summary, begun on first sight.
func (s *summaries) of(a judgments.Answer) *QuestionSummary {
	q, ok := s.by[a.Question]
	if !ok {
		q = &QuestionSummary{Question: a.Question, Kind: string(a.Kind)}
		s.by[a.Question] = q
		s.order = append(s.order, a.Question)
	}
	return q
}

// compareItems compares every kept baseline item with the candidate's of
// the same id, in baseline order, noting the ones the candidate lacks; it
// returns the baseline's kept ids.
func (r *Report) compareItems(base, cand *receipts.Receipt) (baseIDs map[string]bool) {
	candItems := map[string]receipts.Item{}
	for _, it := range cand.Items {
		if !it.Discarded {
			candItems[it.ID] = it
		}
	}
	baseIDs = map[string]bool{}
	qs := &summaries{by: map[string]*QuestionSummary{}}
	for _, bi := range base.Items {
		if bi.Discarded {
			continue
		}
		baseIDs[bi.ID] = true
		ci, ok := candItems[bi.ID]
		if !ok {
			r.Missing.BaselineOnly = append(r.Missing.BaselineOnly, bi.ID)
			continue
		}
		r.compareItem(qs, bi, ci)
	}
	for _, q := range qs.order {
		r.Questions = append(r.Questions, *qs.by[q])
	}
	return baseIDs
}

// compareItem compares one item's answers question by question; an item
// that failed on either side fails the comparison and is not compared.
func (r *Report) compareItem(qs *summaries, bi, ci receipts.Item) {
	if bi.Error != "" || ci.Error != "" {
		if bi.Error != "" {
			r.FailedItems = append(r.FailedItems, FailedItem{Item: bi.ID, Side: "baseline", Error: bi.Error})
			r.fail("item %s: failed in the baseline: %s", bi.ID, bi.Error)
		}
		if ci.Error != "" {
			r.FailedItems = append(r.FailedItems, FailedItem{Item: ci.ID, Side: "candidate", Error: ci.Error})
			r.fail("item %s: failed in the candidate: %s", ci.ID, ci.Error)
		}
		return
	}
	r.ItemsCompared++
	for _, ba := range bi.Answers {
		ca, ok := ci.Answer(ba.Question)
		if !ok {
			r.incomparable(bi.ID, ba.Question, "no answer in the candidate")
			continue
		}
		if ca.Kind != ba.Kind || !equalStrings(ca.Labels, ba.Labels) {
			r.incomparable(bi.ID, ba.Question, fmt.Sprintf("baseline is a %s over %v, candidate a %s over %v", ba.Kind, ba.Labels, ca.Kind, ca.Labels))
			continue
		}
		r.compareAnswer(qs.of(ba), bi.ID, ba, ca)
	}
	for _, ca := range ci.Answers {
		if _, ok := bi.Answer(ca.Question); !ok {
			r.incomparable(bi.ID, ca.Question, "no answer in the baseline")
		}
	}
}

// missing notes the candidate's items the baseline lacks, and fails the
// comparison for items held by one side only.
func (r *Report) missing(cand *receipts.Receipt, baseIDs map[string]bool) {
	for _, ci := range cand.Items {
		if !ci.Discarded && !baseIDs[ci.ID] {
			r.Missing.CandidateOnly = append(r.Missing.CandidateOnly, ci.ID)
		}
	}
	if n := len(r.Missing.BaselineOnly); n > 0 {
		r.fail("%d baseline items missing from the candidate (%s)", n, listSome(r.Missing.BaselineOnly))
	}
	if n := len(r.Missing.CandidateOnly); n > 0 {
		r.fail("%d candidate items missing from the baseline (%s)", n, listSome(r.Missing.CandidateOnly))
	}
}

// fail adds a failure line, made printable (judgments.Printable): it
// quotes receipts written by others (a stopped message, an item's error)
// and is printed on the terminal.
func (r *Report) fail(format string, args ...any) {
	r.FailureLines = append(r.FailureLines, judgments.Printable(fmt.Sprintf(format, args...)))
}

func (r *Report) incomparable(item, q, reason string) {
	r.Incomparable = append(r.Incomparable, Incomparable{Item: item, Question: q, Reason: reason})
	r.fail("item %s, question %s: not comparable: %s", item, q, reason)
}

func (r *Report) compareAnswer(qs *QuestionSummary, item string, ba, ca judgments.Answer) {
	p := r.Policy
	r.AnswersCompared++
	qs.Compared++
	ch := Change{
		Item:       item,
		Question:   ba.Question,
		Kind:       string(ba.Kind),
		Baseline:   view(ba),
		Candidate:  view(ca),
		ValueDelta: math.Abs(ca.Value - ba.Value),
	}
	qs.MaxValueDelta = max(qs.MaxValueDelta, ch.ValueDelta)
	if !receipts.ValueOnly(ba) && !receipts.ValueOnly(ca) {
		maxd, tv := 0.0, 0.0
		for _, l := range ba.Labels {
			d := math.Abs(ca.Probabilities[l] - ba.Probabilities[l])
			maxd = max(maxd, d)
			tv += d / 2
		}
		ch.MaxProbDelta, ch.TotalVariation = &maxd, &tv
		qs.MaxProbDelta = maxPtr(qs.MaxProbDelta, maxd)
		qs.MaxTotalVariation = maxPtr(qs.MaxTotalVariation, tv)
	}
	noulBeyond := false
	if ba.Kind == judgments.Noul {
		d := math.Abs(ca.Value - ba.Value)
		ch.NoulDelta = &d
		qs.MaxNoulDelta = maxPtr(qs.MaxNoulDelta, d)
		r.MaxNoulDelta = max(r.MaxNoulDelta, d)
		noulBeyond = d > p.NoulTolerance
	}
	if ba.Label == ca.Label {
		r.VerdictsEqual++
		qs.VerdictsEqual++
	} else {
		// A value-only answer has no margin: fail closed, count it
		// confident.
		ch.Class = Confident
		if ch.Baseline.Margin != nil && *ch.Baseline.Margin < p.NearTieMargin {
			ch.Class = NearTie
		}
		margin := "unknown (value only)"
		if ch.Baseline.Margin != nil {
			margin = fmt.Sprintf("%.4f", *ch.Baseline.Margin)
		}
		if ch.Class == NearTie {
			r.VerdictsMoved.NearTie++
			qs.VerdictsMoved.NearTie++
			if p.FailNearTies {
				r.fail("item %s, question %s: near-tie verdict moved %s → %s (baseline margin %s; strict policy)", item, ba.Question, ba.Label, ca.Label, margin)
			}
		} else {
			r.VerdictsMoved.Confident++
			qs.VerdictsMoved.Confident++
			r.fail("item %s, question %s: confident verdict moved %s → %s (baseline margin %s)", item, ba.Question, ba.Label, ca.Label, margin)
		}
		r.Moved = append(r.Moved, ch)
	}
	if noulBeyond {
		r.NoulBeyondTolerance++
		qs.NoulBeyondTolerance++
		nd := ch
		r.NoulDrift = append(r.NoulDrift, nd)
		r.fail("item %s, question %s: P(true) moved by %.6f (%.6f → %.6f), beyond %g", item, ba.Question, *ch.NoulDelta, ba.Value, ca.Value, p.NoulTolerance)
	}
}

func view(a judgments.Answer) AnswerView {
	v := AnswerView{Label: a.Label, Value: a.Value, Labels: a.Labels, Probabilities: a.Probabilities}
	if !receipts.ValueOnly(a) {
		m := a.Margin()
		v.Margin = &m
	}
	if v.Labels == nil {
		v.Labels = []string{}
	}
	if v.Probabilities == nil {
		v.Probabilities = map[string]float64{}
	}
	return v
}

func sideOf(r *receipts.Receipt) Side {
	n := 0
	for _, it := range r.Items {
		if !it.Discarded {
			n++
		}
	}
	return Side{
		Source:      r.Source,
		RunID:       r.RunID,
		Model:       r.Pins.Model,
		Concurrency: r.Pins.Concurrency,
		Target:      string(r.Target.Kind),
		Finished:    r.Finished,
		Items:       n,
		Stopped:     r.Stopped,
	}
}

func maxPtr(p *float64, v float64) *float64 {
	if p == nil || v > *p {
		return &v
	}
	return p
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func listSome(ids []string) string {
	if len(ids) <= 5 {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:5], ", ") + fmt.Sprintf(", … %d more", len(ids)-5)
}

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
