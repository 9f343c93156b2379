package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/vetbench/vetbench/receipts/report"
)

const reportUsage = `usage: vetbench report [flags] DIR [CANDIDATE_DIR]

Writes one self-contained HTML page (inline SVG and CSS, no script, no
network) and CSV tables about one run, or a baseline run DIR and a
candidate run CANDIDATE_DIR: per set, judgments/s and p95 latency against
concurrency, cache hit rates, moved answers per level with the items
listed, Little's law and reconciliation checks, failures and stops; the
speed gate's table when both runs hold a bench.txt; an identity banner
when the two runs are not the same experiment.

A run directory is a make bench output (DIR/receipts/*.json and
DIR/bench.txt) or a directory of receipts (DIR/*.json). Existing outputs
are never overwritten unless -force.

Exit status: 0 written, 2 bad input or nothing written. The report shows
verdicts; it does not gate (use compare and gate for exit codes).

flags:
`

func runReport(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		io.WriteString(e.stderr, reportUsage)
		fs.PrintDefaults()
	}
	out := fs.String("o", "", "`file` for the HTML page (default: report.html in the last DIR)")
	csvDir := fs.String("csv", "", "`dir` for the CSV tables (default: the page's name without .html, plus _csv); \"-\" writes none")
	force := fs.Bool("force", false, "overwrite existing outputs")
	allowDrift := fs.Bool("allow-identity-drift", false, "compare answers and show the speed verdict of runs whose identities differ")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return exitNoVerdict
	}
	if len(pos) < 1 || len(pos) > 2 {
		fs.Usage()
		return exitNoVerdict
	}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(e.stderr, "vetbench report: "+format+"\n", args...)
		return exitNoVerdict
	}
	base, err := report.Load(pos[0], "baseline")
	if err != nil {
		return fail("%v", err)
	}
	var cand *report.Run
	if len(pos) == 2 {
		if cand, err = report.Load(pos[1], "candidate"); err != nil {
			return fail("%v", err)
		}
	} else {
		base.Label = "run"
	}
	opt := report.DefaultOptions()
	opt.Answers.AllowIdentityDrift = *allowDrift
	rep, err := report.Build(base, cand, opt)
	if err != nil {
		return fail("%v", err)
	}
	html := *out
	if html == "" {
		html = filepath.Join(pos[len(pos)-1], "report.html")
	}
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		return fail("%v", err)
	}
	outputs := []output{{path: html, data: page.Bytes()}}
	if *csvDir != "-" {
		dir := *csvDir
		if dir == "" {
			dir = strings.TrimSuffix(html, filepath.Ext(html)) + "_csv"
		}
		files, err := rep.CSVFiles()
		if err != nil {
			return fail("%v", err)
		}
		for _, f := range files {
			outputs = append(outputs, output{path: filepath.Join(dir, f.Name), data: f.Data})
		}
	}
	// Refuse before writing anything, so a refused run leaves no half set.
	if !*force {
		for _, o := range outputs {
			if _, err := os.Lstat(o.path); err == nil {
				return fail("%s exists (use -force to overwrite, or -o elsewhere)", o.path)
			}
		}
	}
	for _, o := range outputs {
		if err := os.MkdirAll(filepath.Dir(o.path), 0o755); err != nil {
			return fail("%v", err)
		}
		if err := writeFileAtomic(o.path, o.data, *force); err != nil {
			return fail("%v", err)
		}
	}
	fmt.Fprintf(e.stdout, "wrote %s", html)
	if len(outputs) > 1 {
		fmt.Fprintf(e.stdout, " and %d CSV files in %s", len(outputs)-1, filepath.Dir(outputs[1].path))
	}
	fmt.Fprintln(e.stdout)
	for _, b := range rep.Banners {
		fmt.Fprintf(e.stdout, "%s\n", b.Title)
	}
	return exitPass
}

type output struct {
	path string
	data []byte
}

// writeFileAtomic writes data to a temporary file beside path and moves
// it into place: a reader never sees half a file. Without overwrite it
// links the file into place, which fails when path appeared meanwhile.
func writeFileAtomic(path string, data []byte, overwrite bool) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if overwrite {
		return os.Rename(tmp.Name(), path)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists (use -force to overwrite)", path)
		}
		// A file system without hard links: check, then rename.
		if _, serr := os.Lstat(path); serr == nil {
			return fmt.Errorf("%s exists (use -force to overwrite)", path)
		}
		return os.Rename(tmp.Name(), path)
	}
	return nil
}
