package report

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

// A run directory is read under the receipts' size cap: a 300 MB file (a
// sparse one: no disk) is refused by its size, unread, with the cap named.
// "Unread" is checked on the allocation counter (reading it would take
// 300 MB), so the test is not parallel.
func TestLoadHoldsTheSizeCap(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "padded.json"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(300<<20))
	require.NoError(t, f.Close())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Load(dir, "base")
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, receipts.ErrTooLarge)
	require.ErrorContains(t, err, "receipt too large: 314572800 bytes, limit 33554432 bytes")
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "the file was read")
}
