package receipts_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

// ReadDir reads a sweep directory; one broken receipt fails the whole read.
func TestReadDir(t *testing.T) {
	t.Parallel()
	base := []*receipts.Receipt{sample(t), sample(t)}
	base[1].Pins.Concurrency, base[1].Throughput.Concurrency = 16, 16
	dir := t.TempDir()
	for _, r := range base {
		require.NoError(t, receipts.WriteFile(filepath.Join(dir, "toy_c"+strconv.Itoa(r.Pins.Concurrency)+".json"), r))
	}
	read, err := receipts.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, read, 2)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{"), 0o644))
	_, err = receipts.ReadDir(dir)
	require.ErrorContains(t, err, "broken.json")
}
