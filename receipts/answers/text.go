package answers

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// maxListed bounds the failure lines the text report prints; the JSON
// form always holds them all.
const maxListed = 25

// WriteText renders the report for a person: identity, counts, a table
// per question, the moved answers with both sides' probabilities, and the
// verdict with every reason it failed.
func (r *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("set %s: baseline %s vs candidate %s\n", r.Set, describeSide(r.Baseline), describeSide(r.Candidate))
	switch {
	case r.Identity.Equal:
		ew.printf("identity: equal\n")
	default:
		ew.printf("identity: DIFFERS (allowed by policy)\n")
		for _, d := range r.Identity.Differences {
			ew.printf("  %s\n", d)
		}
	}
	if len(r.Identity.Unrecorded) > 0 {
		ew.printf("identity fields recorded by neither side: %s\n", strings.Join(r.Identity.Unrecorded, ", "))
	}
	if len(r.Identity.Unverified) > 0 {
		ew.printf("identity not verified (recorded on one side only):\n")
		for _, d := range r.Identity.Unverified {
			ew.printf("  %s\n", d)
		}
	}
	ew.printf("policy: noul tolerance %g, near-tie margin %g, fail near ties %v\n",
		r.Policy.NoulTolerance, r.Policy.NearTieMargin, r.Policy.FailNearTies)
	ew.printf("items compared %d, answers %d: %d verdicts equal, %d moved (%d near-tie, %d confident); %d Nouls beyond ±%g (max |ΔP(true)| %.6f)\n",
		r.ItemsCompared, r.AnswersCompared, r.VerdictsEqual, r.VerdictsMoved.Total(),
		r.VerdictsMoved.NearTie, r.VerdictsMoved.Confident, r.NoulBeyondTolerance,
		r.Policy.NoulTolerance, r.MaxNoulDelta)
	if o := r.OffFormat; o != nil {
		ew.printf("off-format answers (sampled token no candidate): baseline %s → candidate %s\n", &o.Baseline, &o.Candidate)
	}
	ew.printf("\n")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "question\tkind\tcompared\tequal\tnear-tie\tconfident\tnoul>tol\tmax|ΔP(true)|\tmax|Δp|\tmax TV\tmax|Δvalue|")
	for _, q := range r.Questions {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%.6f\n",
			q.Question, q.Kind, q.Compared, q.VerdictsEqual, q.VerdictsMoved.NearTie, q.VerdictsMoved.Confident,
			noulCount(q), fmtPtr(q.MaxNoulDelta), fmtPtr(q.MaxProbDelta), fmtPtr(q.MaxTotalVariation), q.MaxValueDelta)
	}
	tw.Flush()
	if len(r.Moved) > 0 {
		ew.printf("\nmoved verdicts (%d):\n", len(r.Moved))
		for _, c := range r.Moved {
			ew.printf("  %s  %s  %s  baseline margin %s\n", c.Item, c.Question, strings.ReplaceAll(c.Class, "_", "-"), fmtPtr(c.Baseline.Margin))
			writeView(ew, "baseline ", c.Baseline)
			writeView(ew, "candidate", c.Candidate)
		}
	}
	if len(r.NoulDrift) > 0 {
		ew.printf("\nNouls beyond ±%g (%d):\n", r.Policy.NoulTolerance, len(r.NoulDrift))
		for _, c := range r.NoulDrift {
			ew.printf("  %s  %s  P(true) %.6f → %.6f  (|Δ| %.6f)\n", c.Item, c.Question, c.Baseline.Value, c.Candidate.Value, *c.NoulDelta)
		}
	}
	if n := len(r.Missing.BaselineOnly) + len(r.Missing.CandidateOnly); n > 0 {
		ew.printf("\nmissing items: %d in the baseline only, %d in the candidate only\n", len(r.Missing.BaselineOnly), len(r.Missing.CandidateOnly))
	}
	if len(r.FailedItems) > 0 {
		ew.printf("\nfailed items (%d):\n", len(r.FailedItems))
		for _, f := range r.FailedItems {
			ew.printf("  %s (%s): %s\n", f.Item, f.Side, f.Error)
		}
	}
	ew.printf("\n")
	if r.Passed {
		ew.printf("PASS\n")
		return ew.err
	}
	ew.printf("FAIL (%d):\n", len(r.FailureLines))
	for i, f := range r.FailureLines {
		if i == maxListed {
			ew.printf("  … %d more (see -json)\n", len(r.FailureLines)-maxListed)
			break
		}
		ew.printf("  %s\n", f)
	}
	return ew.err
}

func describeSide(s Side) string {
	out := fmt.Sprintf("%s c=%d", s.Source, s.Concurrency)
	if s.File != "" {
		out += " (" + s.File + ")"
	}
	return out
}

func noulCount(q QuestionSummary) string {
	if q.MaxNoulDelta == nil {
		return "-"
	}
	return fmt.Sprint(q.NoulBeyondTolerance)
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.6f", *p)
}

func writeView(ew *errWriter, name string, v AnswerView) {
	ew.printf("    %s  %s", name, v.Label)
	if len(v.Probabilities) == 0 {
		ew.printf(" (value %.6f, no probabilities)\n", v.Value)
		return
	}
	ew.printf(":")
	for _, l := range v.Labels {
		ew.printf("  %s %.4f", l, v.Probabilities[l])
	}
	ew.printf("\n")
}

// errWriter keeps the first write error so rendering code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) {
	fmt.Fprintf(e, format, args...)
}
