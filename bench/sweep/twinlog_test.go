package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The twin's log holds its lines until the run has a directory, then
// appends to twin.log, what it held first; beyond maxPendingLog held it
// drops the rest and says so; once closed it takes nothing.
func TestPendingLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "twin.log")
	var l pendingLog
	_, _ = l.Write([]byte("serving\n"))
	require.NoFileExists(t, path)
	require.NoError(t, l.attach(path))
	_, _ = l.Write([]byte("fell behind\n"))
	require.NoError(t, l.close())
	_, _ = l.Write([]byte("after close\n"))
	require.Error(t, l.attach(path), "closed")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "serving\nfell behind\n", string(b))

	var big pendingLog
	line := strings.Repeat("x", 1023) + "\n"
	for range maxPendingLog/len(line) + 5 {
		_, _ = big.Write([]byte(line))
	}
	cut := filepath.Join(t.TempDir(), "twin.log")
	require.NoError(t, big.attach(cut))
	require.NoError(t, big.close())
	b, err = os.ReadFile(cut)
	require.NoError(t, err)
	require.Equal(t, maxPendingLog/len(line), strings.Count(string(b), line))
	require.True(t, strings.HasSuffix(string(b), "were cut at 64 KiB\n"), "the cut is said")
}
