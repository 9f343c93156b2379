package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBaselineAndCandidatePaths: the user's mistakes with the two
// arguments of compare, gate and report. A run compared with itself is
// compared, with a warning (a null control, or a mistyped argument); a missing candidate is named as
// the candidate; compare takes a run directory for its receipts/, as gate
// takes its bench.txt and report the directory.
func TestBaselineAndCandidatePaths(t *testing.T) {
	t.Parallel()
	base := rd("base")
	again := t.TempDir() // a copy of the run: two runs that agree
	require.NoError(t, os.CopyFS(again, os.DirFS(base)))
	missing := filepath.Join(t.TempDir(), "nope")
	page := filepath.Join(t.TempDir(), "r.html")
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"compare a run with itself", []string{"compare", base, base}, exitPass, "warning: BASELINE and CANDIDATE are the same"},
		{"compare a run with its receipts", []string{"compare", base, filepath.Join(base, "receipts")}, exitPass, "warning: BASELINE and CANDIDATE are the same"},
		{"compare two run directories", []string{"compare", base, again}, exitPass, ""},
		{"compare -levels of a run directory", []string{"compare", "-levels", base}, exitPass, ""},
		{"compare a missing candidate sweep", []string{"compare", filepath.Join(base, "receipts"), missing}, exitNoVerdict, "candidate: read receipt: open " + missing + ": no such file or directory"},
		{"gate a run with itself", []string{"gate", "-benchstat=false", base, filepath.Join(base, "bench.txt")}, -1, "warning: BASELINE and CANDIDATE are the same"},
		{"report a run with itself", []string{"report", "-o", page, base, base}, exitPass, "warning: BASELINE and CANDIDATE are the same"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, stderr, code := run(t, c.args...)
			if c.code >= 0 { // -1: whatever the gate decides of the run's own lines
				require.Equal(t, c.code, code, stderr)
			}
			if c.stderr == "" {
				require.Empty(t, stderr)
			}
			require.Contains(t, stderr, c.stderr)
			if c.args[0] == "report" {
				require.FileExists(t, page, "a run reported against itself is reported")
			}
		})
	}
}
