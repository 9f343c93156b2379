package main

import (
	"context"
	"fmt"

	"github.com/vetbench/vetbench/receipts/report"
)

// runReport parses the flags, has receipts/report make the report, and
// prints what it wrote and the verdict banner's title.
func runReport(ctx context.Context, e *env, args []string) int {
	fs := e.flagSet("report")
	var out report.Outputs
	fs.StringVar(&out.HTML, "o", "", "`file` for the HTML page (default: report.html in the last DIR)")
	fs.StringVar(&out.CSVDir, "csv", "", "`dir` for the CSV tables (default: the page's name without .html, plus _csv); \"-\" writes none")
	fs.BoolVar(&out.Force, "force", false, "overwrite existing outputs")
	allowDrift := fs.Bool("allow-identity-drift", false, "compare answers and show the speed verdict of runs whose identities differ")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		// Again after the usage it follows, where it is seen.
		return failure(e, "report", false, exitNoVerdict, err.Error())
	}
	if len(pos) < 1 || len(pos) > 2 {
		fs.Usage()
		return failure(e, "report", false, exitNoVerdict, fmt.Sprintf("want DIR or DIR CANDIDATE_DIR, got %d argument(s)", len(pos)))
	}
	if len(pos) == 2 {
		if w := sameRun(pos[0], pos[1]); w != "" {
			fmt.Fprintf(e.stderr, "vetbench report: %s\n", w)
		}
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
