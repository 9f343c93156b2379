package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/vetbench/vetbench/bench/sweep/rundir"
)

// sameRun refuses a baseline and a candidate that name one file or
// directory (the same path, a link to it, a run directory and its own
// bench.txt): a run compared with itself always passes and says nothing
// about a change, so it is a mistaken argument, not a pass. Two copies of
// one run are two files and compare (an A/A on purpose).
func sameRun(base, cand string) error {
	bs, err := os.Stat(base)
	if err != nil {
		return nil // the reader says why it cannot be read
	}
	cs, err := os.Stat(cand)
	if err != nil || !os.SameFile(bs, cs) {
		return nil
	}
	return fmt.Errorf("BASELINE and CANDIDATE are the same (%s): a run compared with itself always passes; name the baseline's and the candidate's", cand)
}

// receiptsArg is where compare reads a sweep from: a run directory
// (make bench, vetbench run: its receipts in DIR/receipts) is taken as
// its receipts/, as gate takes its bench.txt and report the directory
// itself; any other path as given.
func receiptsArg(arg string) string {
	if st, err := os.Stat(arg); err != nil || !st.IsDir() {
		return arg
	}
	if json, _ := filepath.Glob(filepath.Join(arg, "*.json")); len(json) > 0 {
		return arg
	}
	sub := filepath.Join(arg, rundir.ReceiptsDir)
	if st, err := os.Stat(sub); err != nil || !st.IsDir() {
		return arg
	}
	return sub
}
