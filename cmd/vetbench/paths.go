package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/vetbench/vetbench/bench/sweep/rundir"
)

// sameRun is a warning when a baseline and a candidate name one file or
// directory (the same path, a link to it, a run directory and its own
// bench.txt): a run compared with itself passes and says nothing about a
// change, which is what a null control wants and a mistyped argument does
// not; the comparison goes on, and the warning says which it was. "" when
// they differ (two copies of one run are two files).
func sameRun(base, cand string) string {
	bs, err := os.Stat(base)
	if err != nil {
		return "" // the reader says why it cannot be read
	}
	cs, err := os.Stat(cand)
	if err != nil || !os.SameFile(bs, cs) {
		return ""
	}
	return fmt.Sprintf("warning: BASELINE and CANDIDATE are the same (%s): a run compared with itself passes and says nothing about a change", cand)
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
