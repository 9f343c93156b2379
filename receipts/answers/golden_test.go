package answers_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/answers"
)

func TestGolden(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "toy.golden.json")
	p := answers.DefaultPolicy()
	const ci = false

	_, err := answers.Golden(path, sample(t), false, ci, p)
	require.ErrorContains(t, err, "-update")

	rep, err := answers.Golden(path, sample(t), true, ci, p)
	require.NoError(t, err)
	require.True(t, rep.Passed)
	written, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotContains(t, string(written), "run-1", "goldens hold no run id")
	require.NotContains(t, string(written), "127.0.0.1", "goldens hold no endpoint")

	// A fresh run that differs only in volatile fields matches, and an
	// update then rewrites nothing.
	again := sample(t)
	again.RunID, again.Items[0].LatencySeconds = "run-9", 5
	rep, err = answers.Golden(path, again, false, ci, p)
	require.NoError(t, err)
	require.True(t, rep.Passed)
	st1, _ := os.Stat(path)
	_, err = answers.Golden(path, again, true, ci, p)
	require.NoError(t, err)
	st2, _ := os.Stat(path)
	require.Equal(t, st1.ModTime(), st2.ModTime(), "no rewrite without a change")

	// A confident move fails and leaves the normalized got file beside
	// the golden.
	moved := sample(t)
	moved.Items[0].Answers[1] = choice(t, 0.1, 0.85, 0.05)
	rep, err = answers.Golden(path, moved, false, ci, p)
	require.NoError(t, err)
	require.True(t, rep.Failed())
	side := filepath.Join(dir, "toy.got.json")
	got, err := os.ReadFile(side)
	require.NoError(t, err)
	want, err := receipts.Marshal(receipts.Normalize(moved))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
	// Passing again removes the stale got file.
	_, err = answers.Golden(path, sample(t), false, ci, p)
	require.NoError(t, err)
	require.NoFileExists(t, side)

	// In CI an update is refused and the golden stays as it was.
	_, err = answers.Golden(path, moved, true, true, p)
	require.ErrorIs(t, err, receipts.ErrGoldenUpdateInCI)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, written, after, "the golden is untouched under CI")
}

// The caller decides what CI is: the environment is not read, so CI=true
// in it neither refuses an update the caller allows nor is needed to
// refuse one it does not.
func TestGoldenReadsNoEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toy.golden.json")
	p := answers.DefaultPolicy()
	t.Setenv("CI", "true")
	rep, err := answers.Golden(path, sample(t), true, false, p)
	require.NoError(t, err)
	require.True(t, rep.Passed)
	t.Setenv("CI", "")
	_, err = answers.Golden(path, sample(t), true, true, p)
	require.ErrorIs(t, err, receipts.ErrGoldenUpdateInCI)
}
