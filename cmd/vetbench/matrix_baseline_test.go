package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const publishedDeepSeek = "../../receipts/matrix/testdata/speed-matrix-deepseek-v4-flash-4xh200.csv"

func mx(name string) string { return filepath.Join("testdata", "matrix", name) }

// matrix -baseline, against saved candidates (no measuring): each exit
// status of the contract, with its output.
func TestGoldenMatrixBaseline(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		code int
	}{
		// The page's table against the CSV it was written from: the same.
		{"matrix_baseline_same", []string{"matrix", "-baseline", "../../receipts/matrix/testdata/speed-matrix-deepseek-v4-flash-4xh200.md", "-candidate", publishedDeepSeek}, exitPass},
		// A status changed and a cell 18% slower: exit 1.
		{"matrix_baseline_changed", []string{"matrix", "-baseline", publishedDeepSeek, "-candidate", mx("candidate-changed.csv")}, exitFail},
		// The status change fails whatever the tolerance.
		{"matrix_baseline_changed_tolerant", []string{"matrix", "-baseline", publishedDeepSeek, "-candidate", mx("candidate-changed.csv"), "-tolerance", "25%", "-quiet"}, exitFail},
		// A cell missing: no verdict, unless only the measured are asked for.
		{"matrix_baseline_missing", []string{"matrix", "-baseline", publishedDeepSeek, "-candidate", mx("candidate-missing.csv")}, exitNoVerdict},
		{"matrix_baseline_subset", []string{"matrix", "-baseline", publishedDeepSeek, "-candidate", mx("candidate-missing.csv"), "-baseline-subset"}, exitPass},
		// Unreadable baselines, and flags that need -baseline.
		{"matrix_baseline_malformed", []string{"matrix", "-baseline", mx("baseline-malformed.csv"), "-candidate", publishedDeepSeek}, exitNoVerdict},
		{"matrix_baseline_absent", []string{"matrix", "-baseline", mx("nope.csv"), "-candidate", publishedDeepSeek}, exitNoVerdict},
		{"matrix_baseline_bad_tolerance", []string{"matrix", "-baseline", publishedDeepSeek, "-tolerance", "lots"}, exitNoVerdict},
		{"matrix_candidate_alone", []string{"matrix", "-candidate", publishedDeepSeek}, exitNoVerdict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := run(t, c.args...)
			require.Equal(t, c.code, code, "stderr: %s", stderr)
			checkGolden(t, filepath.Join("testdata", c.name+".stdout"), stdout)
			checkGolden(t, filepath.Join("testdata", c.name+".stderr"), stderr)
		})
	}
}
