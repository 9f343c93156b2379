package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/vetbench/vetbench/receipts/matrix"
)

// baselineFlags defines matrix -baseline's flags (a matrix.Baseline).
func baselineFlags(fs *flag.FlagSet) *matrix.Baseline {
	b := matrix.NewBaseline()
	fs.StringVar(&b.Path, "baseline", "", "compare with the matrix in `file` (a published CSV, the page's markdown table or a vetbench matrix JSON), cell by cell")
	fs.StringVar(&b.Candidate, "candidate", "", "with -baseline: compare the matrix in `file` instead of measuring one")
	fs.Var(&b.Tolerance, "tolerance", "with -baseline: the `error` a figure may have (15% or 0.15)")
	fs.BoolVar(&b.Subset, "baseline-subset", false, "with -baseline: compare only the cells measured, listing the baseline's others (default: a missing cell cannot pass, exit 2)")
	return b
}

// checkBaseline refuses flags that need -baseline without it.
func checkBaseline(fs *flag.FlagSet, b *matrix.Baseline) error {
	var set []string
	for _, name := range []string{"baseline-subset", "candidate", "tolerance"} {
		if b.Path == "" && isSet(fs, name) {
			set = append(set, "-"+name)
		}
	}
	switch len(set) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s needs -baseline", set[0])
	}
	return fmt.Errorf("%s need -baseline", strings.Join(set, ", "))
}

// compareMatrix prints cand against base and returns the exit status: 0
// every status equal and every figure within the tolerance, 1 a status
// changed or a figure beyond it or a candidate that stopped early, 2 a
// baseline cell or figure the candidate lacks, a baseline that stopped
// early, or no cell in common.
func compareMatrix(stdout, stderr io.Writer, b *matrix.Baseline, base, cand *matrix.Matrix) int {
	c, err := b.Compare(base, cand)
	if err == nil {
		err = c.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vetbench matrix: %v\n", err)
		return exitNoVerdict
	}
	n := c.Counts()
	switch {
	case c.BaseStopped != "":
		fmt.Fprintf(stderr, "vetbench matrix: the baseline %s: no verdict\n", c.BaseStopped)
		return exitNoVerdict
	case c.Incomplete():
		fmt.Fprintf(stderr, "vetbench matrix: the candidate lacks %d of the baseline's cells and %d figures: no verdict (-baseline-subset compares the cells measured)\n", n.Missing, n.Absent)
		return exitNoVerdict
	case c.Worse():
		return exitFail
	}
	return exitPass
}
