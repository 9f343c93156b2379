package answers

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/vetbench/vetbench/receipts"
)

// SweepEntry is one comparison of a sweep: a set at one level against its
// reference. Err is set (and Report nil) when the two could not be
// compared: no reference, or identities differ.
type SweepEntry struct {
	Set                  string  `json:"set"`
	BaselineConcurrency  int     `json:"baseline_concurrency"`
	CandidateConcurrency int     `json:"candidate_concurrency"`
	Report               *Report `json:"report"`
	Err                  string  `json:"error,omitempty"`
}

// SweepReport holds every comparison of a sweep, sets and levels in
// order.
type SweepReport struct {
	Entries []SweepEntry `json:"entries"`
	Passed  bool         `json:"passed"`
}

// Failed reports whether any entry failed or could not be compared.
func (s *SweepReport) Failed() bool { return !s.Passed }

// Incomparable reports whether some entry could not be compared at all.
func (s *SweepReport) Incomparable() bool {
	for _, e := range s.Entries {
		if e.Err != "" {
			return true
		}
	}
	return false
}

type levelKey struct {
	set string
	c   int
}

func indexSweep(rs []*receipts.Receipt) (map[levelKey]*receipts.Receipt, []levelKey, error) {
	m := map[levelKey]*receipts.Receipt{}
	var keys []levelKey
	for _, r := range rs {
		k := levelKey{r.Set, r.Pins.Concurrency}
		if _, dup := m[k]; dup {
			return nil, nil, fmt.Errorf("sweep: two receipts for set %s at c=%d", k.set, k.c)
		}
		m[k] = r
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b levelKey) int {
		return cmp.Or(cmp.Compare(a.set, b.set), cmp.Compare(a.c, b.c))
	})
	return m, keys, nil
}

// CompareLevels compares, for every set of one sweep, the receipt at each
// level with the set's c=1 receipt: batching must not move answers. A set
// without a c=1 receipt gets an entry with an error (it fails).
func CompareLevels(sweep []*receipts.Receipt, p Policy) (*SweepReport, error) {
	m, keys, err := indexSweep(sweep)
	if err != nil {
		return nil, err
	}
	out := &SweepReport{Entries: []SweepEntry{}}
	for _, k := range keys {
		if k.c == 1 {
			continue
		}
		ref, ok := m[levelKey{k.set, 1}]
		e := SweepEntry{Set: k.set, BaselineConcurrency: 1, CandidateConcurrency: k.c}
		if !ok {
			e.Err = fmt.Sprintf("set %s has no c=1 receipt to compare c=%d with", k.set, k.c)
		} else {
			e.Report, e.Err = compareEntry(ref, m[k], p)
		}
		out.Entries = append(out.Entries, e)
	}
	out.Passed = passed(out.Entries)
	return out, nil
}

// CompareSweep compares a candidate sweep with a baseline sweep from an
// earlier run, set by set and level by level. A level present on one
// side only gets an entry with an error (it fails).
func CompareSweep(base, cand []*receipts.Receipt, p Policy) (*SweepReport, error) {
	bm, bkeys, err := indexSweep(base)
	if err != nil {
		return nil, fmt.Errorf("baseline %w", err)
	}
	cm, ckeys, err := indexSweep(cand)
	if err != nil {
		return nil, fmt.Errorf("candidate %w", err)
	}
	keys := slices.Clone(bkeys)
	for _, k := range ckeys {
		if _, ok := bm[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b levelKey) int {
		return cmp.Or(cmp.Compare(a.set, b.set), cmp.Compare(a.c, b.c))
	})
	out := &SweepReport{Entries: []SweepEntry{}}
	for _, k := range keys {
		e := SweepEntry{Set: k.set, BaselineConcurrency: k.c, CandidateConcurrency: k.c}
		b, okb := bm[k]
		c, okc := cm[k]
		switch {
		case !okb:
			e.Err = fmt.Sprintf("set %s c=%d: no baseline receipt", k.set, k.c)
		case !okc:
			e.Err = fmt.Sprintf("set %s c=%d: no candidate receipt", k.set, k.c)
		default:
			e.Report, e.Err = compareEntry(b, c, p)
		}
		out.Entries = append(out.Entries, e)
	}
	out.Passed = passed(out.Entries)
	return out, nil
}

func compareEntry(b, c *receipts.Receipt, p Policy) (*Report, string) {
	rep, err := Compare(b, c, p)
	if err != nil {
		return nil, err.Error()
	}
	return rep, ""
}

func passed(es []SweepEntry) bool {
	if len(es) == 0 {
		return false
	}
	for _, e := range es {
		if e.Err != "" || e.Report == nil || e.Report.Failed() {
			return false
		}
	}
	return true
}

// WriteText renders one summary line per entry, then each failed entry's
// failures.
func (s *SweepReport) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, e := range s.Entries {
		head := fmt.Sprintf("%-12s c=%-3d vs c=%-3d", e.Set, e.CandidateConcurrency, e.BaselineConcurrency)
		switch {
		case e.Err != "":
			ew.printf("%s  NOT COMPARED: %s\n", head, e.Err)
		default:
			r := e.Report
			verdict := "PASS"
			if r.Failed() {
				verdict = "FAIL"
			}
			ew.printf("%s  %s  items %d, moved %d (%d near-tie, %d confident), Nouls beyond ±%g: %d (max %.6f)\n",
				head, verdict, r.ItemsCompared, r.VerdictsMoved.Total(), r.VerdictsMoved.NearTie,
				r.VerdictsMoved.Confident, r.Policy.NoulTolerance, r.NoulBeyondTolerance, r.MaxNoulDelta)
			for i, f := range r.FailureLines {
				if i == 5 {
					ew.printf("    … %d more\n", len(r.FailureLines)-5)
					break
				}
				ew.printf("    %s\n", f)
			}
		}
	}
	switch {
	case s.Incomparable():
		// vetbench compare exits 2 then (could not compare), not 1.
		n := 0
		for _, e := range s.Entries {
			if e.Err != "" {
				n++
			}
		}
		ew.printf("NOT COMPARED: %d of %d point(s)\n", n, len(s.Entries))
	case s.Passed:
		ew.printf("PASS\n")
	default:
		ew.printf("FAIL\n")
	}
	return ew.err
}
