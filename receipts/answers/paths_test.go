package answers_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/answers"
)

func TestPolicyNamed(t *testing.T) {
	t.Parallel()
	p, err := answers.PolicyNamed("default")
	require.NoError(t, err)
	require.Equal(t, answers.DefaultPolicy(), p)
	p, err = answers.PolicyNamed("strict")
	require.NoError(t, err)
	require.Equal(t, answers.StrictPolicy(), p)
	_, err = answers.PolicyNamed("lenient")
	require.EqualError(t, err, `unknown policy "lenient" (want default or strict)`)
}

// TestComparePathsRefuses: a receipt against a directory, and unreadable
// sides, say which side is wrong.
func TestComparePathsRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "r.json")
	require.NoError(t, os.WriteFile(file, []byte("{}"), 0o644))
	_, err := answers.ComparePaths(file, dir, answers.DefaultPolicy())
	require.EqualError(t, err, "BASELINE and CANDIDATE must both be receipts or both be directories")
	_, err = answers.ComparePaths(filepath.Join(dir, "nope.json"), file, answers.DefaultPolicy())
	require.ErrorContains(t, err, "baseline: ")
	_, err = answers.ComparePaths(dir, t.TempDir(), answers.DefaultPolicy())
	require.ErrorContains(t, err, "baseline: ")
	// A missing candidate beside a baseline directory is the candidate's
	// error, not the directory read as a receipt.
	_, err = answers.ComparePaths(dir, filepath.Join(dir, "nope"), answers.DefaultPolicy())
	require.ErrorContains(t, err, "candidate: ")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NotContains(t, err.Error(), "a directory")
	_, err = answers.CompareLevelsDir(filepath.Join(dir, "nope"), answers.DefaultPolicy())
	require.Error(t, err)
}

// TestComparePathsPair: two receipts compare as Compare does, and the
// report names the files (a positive control for the refusals above).
func TestComparePathsPair(t *testing.T) {
	t.Parallel()
	base, cand := "../typevet/testdata/check_match_vllm_receipt.json", "../typevet/testdata/check_match_vllm_throughput_full_c16.json"
	j, err := answers.ComparePaths(base, cand, answers.DefaultPolicy())
	require.NoError(t, err)
	rep := j.(*answers.Report)
	require.Equal(t, base, rep.Baseline.File)
	require.Equal(t, cand, rep.Candidate.File)
	require.Positive(t, rep.ItemsCompared)
	require.True(t, rep.Failed(), "the golden compare_checks case fails too")
}
