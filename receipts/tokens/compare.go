package tokens

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Delta is one figure of a baseline point against a candidate point.
type Delta struct {
	Base, Cand float64
	// Rel is (Cand − Base) ÷ Base; NaN when Base is 0.
	Rel float64
}

func delta(base, cand float64) Delta {
	d := Delta{Base: base, Cand: cand, Rel: math.NaN()}
	if base != 0 {
		d.Rel = (cand - base) / base
	}
	return d
}

// PointComparison is a baseline point against a candidate point of the
// same key. Higher tok/s is better; lower TPOT and TTFT are better.
type PointComparison struct {
	Key                  Key
	AggregateOutputTokS  Delta
	PerRequestOutputTokS Delta
	MeanTPOTMs           Delta
	// TTFTP50Ms is set when both points have request samples.
	TTFTP50Ms *Delta
	// IdentityDiff lists identity fields both record and that differ;
	// Unverified the ones only one side records.
	IdentityDiff []string
	Unverified   []string
	// Problems say why a side's figures are not clean (failed or short
	// requests, a stopped point), one sentence each.
	Problems []string
}

// ComparePoint compares two receipts of the same point key.
func ComparePoint(base, cand *Receipt) (*PointComparison, error) {
	if base == nil || cand == nil {
		return nil, fmt.Errorf("compare: nil receipt")
	}
	if base.Key() != cand.Key() {
		return nil, fmt.Errorf("compare: different points: %s vs %s", base.Key(), cand.Key())
	}
	bs, cs := base.Summary, cand.Summary
	pc := &PointComparison{
		Key:                  base.Key(),
		AggregateOutputTokS:  delta(bs.AggregateOutputTokS, cs.AggregateOutputTokS),
		PerRequestOutputTokS: delta(bs.PerRequestOutputTokS, cs.PerRequestOutputTokS),
		MeanTPOTMs:           delta(bs.MeanTPOTMs, cs.MeanTPOTMs),
		IdentityDiff:         IdentityDiff(base, cand),
		Unverified:           IdentityUnverified(base, cand),
	}
	if bs.TTFTMs != nil && cs.TTFTMs != nil {
		d := delta(bs.TTFTMs.P50, cs.TTFTMs.P50)
		pc.TTFTP50Ms = &d
	}
	for _, side := range []struct {
		name string
		r    *Receipt
	}{{"baseline", base}, {"candidate", cand}} {
		s := side.r.Summary
		if s.Failed > 0 || s.Short > 0 {
			pc.Problems = append(pc.Problems, fmt.Sprintf("%s: %d of %d requests failed, %d short", side.name, s.Failed, s.Requests, s.Short))
		}
		if st := side.r.Stopped; st != nil {
			pc.Problems = append(pc.Problems, fmt.Sprintf("%s: stopped after %d of %d repeats (%s: %s)", side.name, st.Runs, side.r.Point.Repeats, st.Reason, st.Message))
		}
	}
	return pc, nil
}

// Comparison is a baseline run against a candidate run, point by point.
type Comparison struct {
	Points []*PointComparison
	// OnlyBase and OnlyCand are points measured on one side only.
	OnlyBase, OnlyCand []Key
}

// Compare matches points by key and compares each pair. Two receipts of
// one key on the same side are an error: which one counts would be a
// guess.
func Compare(base, cand []*Receipt) (*Comparison, error) {
	index := func(side string, rs []*Receipt) (map[Key]*Receipt, error) {
		m := map[Key]*Receipt{}
		for _, r := range rs {
			if _, dup := m[r.Key()]; dup {
				return nil, fmt.Errorf("compare: %s has point %s twice", side, r.Key())
			}
			m[r.Key()] = r
		}
		return m, nil
	}
	bm, err := index("baseline", base)
	if err != nil {
		return nil, err
	}
	cm, err := index("candidate", cand)
	if err != nil {
		return nil, err
	}
	c := &Comparison{}
	for k, b := range bm {
		cr, ok := cm[k]
		if !ok {
			c.OnlyBase = append(c.OnlyBase, k)
			continue
		}
		pc, err := ComparePoint(b, cr)
		if err != nil {
			return nil, err
		}
		c.Points = append(c.Points, pc)
	}
	for k := range cm {
		if _, ok := bm[k]; !ok {
			c.OnlyCand = append(c.OnlyCand, k)
		}
	}
	slices.SortFunc(c.Points, func(a, b *PointComparison) int { return compareKeys(a.Key, b.Key) })
	slices.SortFunc(c.OnlyBase, compareKeys)
	slices.SortFunc(c.OnlyCand, compareKeys)
	return c, nil
}

func compareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Workload, b.Workload), cmp.Compare(a.OutputTokens, b.OutputTokens), cmp.Compare(a.Concurrency, b.Concurrency))
}

// WriteText prints the comparison, one line per point, then the identity
// differences (once when every point shares them) and the problems.
func (c *Comparison) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tc\toutput\taggregate tok/s\tper-request tok/s\tTPOT ms\tTTFT p50 ms")
	for _, p := range c.Points {
		ttft := "—"
		if p.TTFTP50Ms != nil {
			ttft = fmtDelta(*p.TTFTP50Ms, 1)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", p.Key.Workload, p.Key.Concurrency, p.Key.OutputTokens,
			fmtDelta(p.AggregateOutputTokS, 1), fmtDelta(p.PerRequestOutputTokS, 1), fmtDelta(p.MeanTPOTMs, 2), ttft)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	notes := func(label string, get func(*PointComparison) []string) {
		common := map[string]int{}
		for _, p := range c.Points {
			for _, s := range get(p) {
				common[s]++
			}
		}
		var all []string
		for s, n := range common {
			if n == len(c.Points) {
				all = append(all, s)
			}
		}
		slices.Sort(all)
		for _, s := range all {
			fmt.Fprintf(&b, "%s: %s\n", label, s)
		}
		for _, p := range c.Points {
			for _, s := range get(p) {
				if common[s] != len(c.Points) {
					fmt.Fprintf(&b, "%s (%s): %s\n", label, p.Key, s)
				}
			}
		}
	}
	notes("identity differs", func(p *PointComparison) []string { return p.IdentityDiff })
	notes("unverified (one side does not record it)", func(p *PointComparison) []string { return p.Unverified })
	for _, p := range c.Points {
		for _, s := range p.Problems {
			fmt.Fprintf(&b, "problem (%s): %s\n", p.Key, s)
		}
	}
	for _, k := range c.OnlyBase {
		fmt.Fprintf(&b, "only in baseline: %s\n", k)
	}
	for _, k := range c.OnlyCand {
		fmt.Fprintf(&b, "only in candidate: %s\n", k)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Text is WriteText into a string.
func (c *Comparison) Text() string {
	var b strings.Builder
	_ = c.WriteText(&b)
	return b.String()
}

func fmtDelta(d Delta, prec int) string {
	rel := "n/a"
	if !math.IsNaN(d.Rel) {
		rel = fmt.Sprintf("%+.1f%%", d.Rel*100)
	}
	return fmt.Sprintf("%.*f → %.*f (%s)", prec, d.Base, prec, d.Cand, rel)
}
