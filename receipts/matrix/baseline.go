package matrix

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Tolerance is a relative error as a flag value: "15%" or "0.15".
type Tolerance float64

func (t *Tolerance) String() string { return strconv.FormatFloat(float64(*t)*100, 'f', -1, 64) + "%" }

// Set reads "15%" or "0.15".
func (t *Tolerance) Set(s string) error {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v < 0 || v != v || v > 1e6 {
		return errors.New("want an error such as 15% or 0.15")
	}
	if pct {
		v /= 100
	}
	*t = Tolerance(v)
	return nil
}

// Baseline is a comparison with a baseline matrix, as asked for: its file
// (a published CSV, the page's markdown table or a vetbench matrix JSON),
// a saved candidate to compare instead of a measured one, the tolerance,
// and whether only the cells measured count.
type Baseline struct {
	Path, Candidate string
	Tolerance       Tolerance
	Subset          bool
}

// NewBaseline is a comparison at DefaultTolerance.
func NewBaseline() *Baseline { return &Baseline{Tolerance: DefaultTolerance} }

// Load reads the baseline and, with a Candidate, the candidate (nil, nil
// with no Path): before anything is measured, so an unreadable file
// costs no run.
func (b *Baseline) Load() (base, cand *Matrix, err error) {
	if b.Path == "" {
		return nil, nil, nil
	}
	if base, err = ReadAnyFile(b.Path); err != nil {
		return nil, nil, fmt.Errorf("baseline: %w", err)
	}
	if b.Candidate != "" {
		if cand, err = ReadAnyFile(b.Candidate); err != nil {
			return nil, nil, fmt.Errorf("candidate: %w", err)
		}
	}
	return base, cand, nil
}

// Compare compares cand with base at the tolerance asked for; a
// tolerance of 0 is exact (Compare's own 0 is DefaultTolerance). The
// comparison's Incomplete is no verdict, its Worse a failure.
func (b *Baseline) Compare(base, cand *Matrix) (*Comparison, error) {
	tol := float64(b.Tolerance)
	if tol == 0 {
		tol = 1e-12
	}
	c, err := Compare(base, cand, CompareOptions{Tolerance: tol, Subset: b.Subset})
	if err != nil {
		return nil, fmt.Errorf("-baseline %s: %w", b.Path, err)
	}
	return c, nil
}

// Outputs are the files a measured matrix is written to: JSON and the
// published CSV layout ("" for none), replaced only with Force.
type Outputs struct {
	JSON, CSV string
	Force     bool
}

// Refuse refuses output files that exist, unless Force: called before
// anything is measured.
func (o Outputs) Refuse() error {
	for _, p := range []string{o.JSON, o.CSV} {
		if p == "" || o.Force {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("%s exists: give another file, or -force to replace it", p)
		}
	}
	return nil
}

// Write writes m to the files asked for, each atomically, each through
// guard (a signal handler's Write: a second Ctrl-C waits for the file).
func (o Outputs) Write(m *Matrix, guard func(func() error) error) error {
	write := func(path string, fresh, replace func(string, *Matrix) error) error {
		if path == "" {
			return nil
		}
		w := fresh
		if o.Force {
			w = replace
		}
		return guard(func() error { return w(path, m) })
	}
	return errors.Join(write(o.JSON, WriteFile, ReplaceFile), write(o.CSV, WriteCSVFile, ReplaceCSVFile))
}

// Measured counts the cells that were measured (Valid, Requests queued or
// Looped): a matrix with none measured nothing.
func (m *Matrix) Measured() int {
	n := m.Counts()
	return n[Valid] + n[RequestsQueued] + n[Looped]
}
