package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/receipts/matrix"
)

// baselineFlags are matrix -baseline's flags.
type baselineFlags struct {
	path, candidate string
	tolerance       tolerance
	subset          bool
}

func addBaselineFlags(fs *flag.FlagSet) *baselineFlags {
	b := &baselineFlags{tolerance: matrix.DefaultTolerance}
	fs.StringVar(&b.path, "baseline", "", "compare with the matrix in `file` (a published CSV, the page's markdown table or a vetbench matrix JSON), cell by cell")
	fs.StringVar(&b.candidate, "candidate", "", "with -baseline: compare the matrix in `file` instead of measuring one")
	fs.Var(&b.tolerance, "tolerance", "with -baseline: the `error` a figure may have (15% or 0.15)")
	fs.BoolVar(&b.subset, "baseline-subset", false, "with -baseline: compare only the cells measured, listing the baseline's others (default: a missing cell cannot pass, exit 2)")
	return b
}

// tolerance is a relative error as a flag: "15%" or "0.15".
type tolerance float64

func (t *tolerance) String() string { return strconv.FormatFloat(float64(*t)*100, 'f', -1, 64) + "%" }

func (t *tolerance) Set(s string) error {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v < 0 || v != v || v > 1e6 {
		return errors.New("want an error such as 15% or 0.15")
	}
	if pct {
		v /= 100
	}
	*t = tolerance(v)
	return nil
}

// check refuses flags that need -baseline without it.
func (b *baselineFlags) check(fs *flag.FlagSet) error {
	if b.path != "" {
		return nil
	}
	var set []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "candidate", "tolerance", "baseline-subset":
			set = append(set, "-"+f.Name)
		}
	})
	if len(set) > 0 {
		verb := "needs"
		if len(set) > 1 {
			verb = "need"
		}
		return fmt.Errorf("%s %s -baseline", strings.Join(set, ", "), verb)
	}
	return nil
}

// load reads the baseline and, with -candidate, the candidate: before
// anything is measured, so an unreadable file costs no run.
func (b *baselineFlags) load() (base, cand *matrix.Matrix, err error) {
	if b.path == "" {
		return nil, nil, nil
	}
	base, err = matrix.ReadAnyFile(b.path)
	if err != nil {
		return nil, nil, fmt.Errorf("baseline: %w", err)
	}
	if b.candidate != "" {
		cand, err = matrix.ReadAnyFile(b.candidate)
		if err != nil {
			return nil, nil, fmt.Errorf("candidate: %w", err)
		}
	}
	return base, cand, nil
}

// compare prints cand against base and returns the exit status: 0 every
// status equal and every figure within the tolerance, 1 a status changed
// or a figure beyond it, 2 a baseline cell or figure the candidate lacks,
// or no cell in common.
func (b *baselineFlags) compare(stdout, stderr io.Writer, base, cand *matrix.Matrix) int {
	tol := float64(b.tolerance)
	if tol == 0 {
		tol = 1e-12 // a user's 0 is exact; the library reads 0 as its default
	}
	c, err := matrix.Compare(base, cand, matrix.CompareOptions{Tolerance: tol, Subset: b.subset})
	if err != nil {
		fmt.Fprintf(stderr, "vetbench matrix: -baseline %s: %v\n", b.path, err)
		return exitNoVerdict
	}
	if err := c.WriteText(stdout); err != nil {
		fmt.Fprintf(stderr, "vetbench matrix: %v\n", err)
		return exitNoVerdict
	}
	n := c.Counts()
	switch {
	case c.Incomplete():
		fmt.Fprintf(stderr, "vetbench matrix: the candidate lacks %d of the baseline's cells and %d figures: no verdict (-baseline-subset compares the cells measured)\n", n.Missing, n.Absent)
		return exitNoVerdict
	case c.Worse():
		return exitFail
	}
	return exitPass
}
