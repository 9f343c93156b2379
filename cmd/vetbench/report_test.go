package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

// rd names a run of receipts/report's testdata.
func rd(name string) string { return "../../receipts/report/testdata/" + name }

func TestReportWritesPageAndCSV(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	page := filepath.Join(dir, "pair.html")
	stdout, stderr, code := run(t, "report", "-o", page, rd("base"), rd("cand"))
	require.Equal(t, exitPass, code, stderr)
	require.Equal(t, "wrote "+page+" and 13 CSV files in "+filepath.Join(dir, "pair_csv")+"\n"+
		"Verdict — answers: FAIL · speed: no verdict · failures: TROUBLE\n", stdout, "the page's verdict banner, on the console too")
	data, err := os.ReadFile(page)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(data), "<!DOCTYPE html>"))
	require.True(t, strings.Contains(string(data), "vetbench report: baseline vs candidate"))
	for _, name := range []string{"summary.csv", "speed_checks.csv", "checks_signatures.csv", "moved_checks.csv", "gate.csv", "warnings.csv"} {
		require.FileExists(t, filepath.Join(dir, "pair_csv", name))
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "no temporary file left behind")

	// Nothing is overwritten without -force, and a refused run writes
	// nothing at all.
	require.NoError(t, os.Remove(filepath.Join(dir, "pair_csv", "gate.csv")))
	require.NoError(t, os.WriteFile(page, []byte("mine"), 0o644))
	_, stderr, code = run(t, "report", "-o", page, rd("base"), rd("cand"))
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, page+" exists (use -force to overwrite")
	kept, err := os.ReadFile(page)
	require.NoError(t, err)
	require.Equal(t, "mine", string(kept))
	require.NoFileExists(t, filepath.Join(dir, "pair_csv", "gate.csv"))

	_, stderr, code = run(t, "report", "-force", "-o", page, rd("base"), rd("cand"))
	require.Equal(t, exitPass, code, stderr)
	again, err := os.ReadFile(page)
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, again), "the same inputs give the same page")
}

// TestReportDefaults: one run, the page in the run directory, -csv -
// writes no CSV, a plain receipt directory works.
func TestReportDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, err := os.ReadFile(rd("base/receipts/checks_c1.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "checks_c1.json"), src, 0o644))
	stdout, stderr, code := run(t, "report", "-csv", "-", dir)
	require.Equal(t, exitPass, code, stderr)
	require.Equal(t, "wrote "+filepath.Join(dir, "report.html")+"\n"+
		"Verdict — answers: nothing to compare · speed: not gated (no bench.txt pair) · failures: none\n", stdout)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2)
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(page), "vetbench report: run"))
}

func TestReportIdentityBannerOnStdout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, err := os.ReadFile(rd("base/receipts/checks_c1.json"))
	require.NoError(t, err)
	base, cand := filepath.Join(dir, "base"), filepath.Join(dir, "cand")
	require.NoError(t, os.MkdirAll(base, 0o755))
	require.NoError(t, os.MkdirAll(cand, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "checks_c1.json"), src, 0o644))
	// The candidate asked in top_logprobs mode: another experiment.
	rc, err := receipts.ReadFile(rd("base/receipts/checks_c1.json"))
	require.NoError(t, err)
	rc.Pins.ScoringMode, rc.Pins.TopLogprobs, rc.Identity.Digest = "top_logprobs", 20, ""
	require.NoError(t, receipts.WriteFile(filepath.Join(cand, "checks_c1.json"), rc))
	stdout, stderr, code := run(t, "report", "-o", filepath.Join(dir, "r.html"), base, cand)
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stdout, "Identity mismatch: the two runs are not the same experiment\n")
	page, err := os.ReadFile(filepath.Join(dir, "r.html"))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(page), "scoring_mode: token_ids → top_logprobs (top_logprobs 20) (every point)"))
}

func TestReportBadInput(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	bad := t.TempDir()
	src, err := os.ReadFile(rd("base/receipts/checks_c1.json"))
	require.NoError(t, err)
	broken := strings.Replace(string(src), `"concurrency": 1,`, `"concurrency": "one",`, 1)
	require.NotEqual(t, string(src), broken)
	require.NoError(t, os.WriteFile(filepath.Join(bad, "checks_c1.json"), []byte(broken), 0o644))
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"empty dir", []string{empty}, "no receipts (*.json) in it or in its receipts/ directory"},
		{"missing dir", []string{filepath.Join(empty, "nope")}, "no such file or directory"},
		{"malformed receipt", []string{bad}, "checks_c1.json"},
		{"bad candidate", []string{rd("base"), empty}, "no receipts"},
		{"no args", nil, "usage: vetbench report"},
		{"three args", []string{empty, empty, empty}, "usage: vetbench report"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "r.html")
			stdout, stderr, code := run(t, append([]string{"report", "-o", out}, c.args...)...)
			require.Equal(t, exitNoVerdict, code)
			require.Empty(t, stdout)
			require.Contains(t, stderr, c.want)
			require.NoFileExists(t, out)
		})
	}
	_, stderr, _ := run(t, "report", bad)
	require.Contains(t, stderr, "pins.concurrency", "a malformed receipt names its field")
}
