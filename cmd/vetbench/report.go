package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/vetbench/vetbench/receipts/report"
)

const reportUsage = `usage: vetbench report [flags] DIR [CANDIDATE_DIR]

Writes one self-contained HTML page (inline SVG and CSS, no script, no
network) and CSV tables about one run, or a baseline run DIR and a
candidate run CANDIDATE_DIR: the verdict first (answers, speed,
failures), then per set judgments/s and p95 latency against concurrency
(the median of the -count passes, as the speed gate takes it, with their
min–max), cache hit rates, moved verdicts per level (confident vs
near-tie) with the items listed, Little's law and reconciliation checks,
failures and stops; the speed gate's table when both runs hold a
bench.txt; an identity banner when the two runs are not the same
experiment; token-throughput curves and speed matrices of a make tokens
run.

A run directory is a make bench output (DIR/receipts/*.json, later
passes in DIR/receipts/pass2 …, and DIR/bench.txt) or a directory of
receipts (DIR/*.json). Existing outputs are never overwritten unless
-force.

Exit status: 0 written, 2 bad input or nothing written. The report shows
verdicts; it does not gate (use compare and gate for exit codes).

flags:
`

// runReport parses the flags, has receipts/report make the report, and
// prints what it wrote and the verdict banner's title.
func runReport(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		io.WriteString(e.stderr, reportUsage)
		fs.PrintDefaults()
	}
	var out report.Outputs
	fs.StringVar(&out.HTML, "o", "", "`file` for the HTML page (default: report.html in the last DIR)")
	fs.StringVar(&out.CSVDir, "csv", "", "`dir` for the CSV tables (default: the page's name without .html, plus _csv); \"-\" writes none")
	fs.BoolVar(&out.Force, "force", false, "overwrite existing outputs")
	allowDrift := fs.Bool("allow-identity-drift", false, "compare answers and show the speed verdict of runs whose identities differ")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return exitNoVerdict
	}
	if len(pos) < 1 || len(pos) > 2 {
		fs.Usage()
		return exitNoVerdict
	}
	opt := report.DefaultOptions()
	opt.Answers.AllowIdentityDrift = *allowDrift
	w, err := report.Make(pos, opt, out)
	if err != nil {
		return failure(e, "report", false, exitNoVerdict, err.Error())
	}
	fmt.Fprintf(e.stdout, "wrote %s", w.HTML)
	if w.CSVFiles > 0 {
		fmt.Fprintf(e.stdout, " and %d CSV files in %s", w.CSVFiles, w.CSVDir)
	}
	fmt.Fprintln(e.stdout)
	for _, b := range w.Report.Banners {
		fmt.Fprintln(e.stdout, b.Title)
	}
	return exitPass
}
