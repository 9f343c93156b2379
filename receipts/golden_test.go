package receipts_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

func TestGoldenFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "toy.golden.json")

	_, err := receipts.ReadGolden(path)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, "run the test with -update")

	// In CI nothing is written, not even a first golden.
	_, err = receipts.UpdateGolden(path, sample(t), true)
	require.ErrorIs(t, err, receipts.ErrGoldenUpdateInCI)
	require.NoFileExists(t, path)

	back, err := receipts.UpdateGolden(path, sample(t), false)
	require.NoError(t, err)
	require.Equal(t, receipts.Normalize(sample(t)), back, "what is read back is the normalized receipt")
	read, err := receipts.ReadGolden(path)
	require.NoError(t, err)
	require.Equal(t, back, read)

	side := filepath.Join(dir, "toy.got.json")
	require.NoError(t, receipts.KeepGot(path, sample(t), true))
	require.FileExists(t, side)
	require.NoError(t, receipts.KeepGot(path, sample(t), false))
	require.NoFileExists(t, side)
	require.NoError(t, receipts.KeepGot(path, sample(t), false), "nothing to remove is no error")

	// A name without .golden.json still gets a sidecar of its own.
	other := filepath.Join(dir, "plain.json")
	require.NoError(t, receipts.KeepGot(other, sample(t), true))
	_, err = os.Stat(filepath.Join(dir, "plain.got.json"))
	require.NoError(t, err)
}
