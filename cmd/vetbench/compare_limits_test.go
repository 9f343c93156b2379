package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// compare refuses hostile inputs at the readers' limits and exits 2: a
// 100,000-deep array at the bracket that opens level 33 (the column says
// the parser went no deeper), a 300 MB file by its size (a sparse file:
// nothing is written to disk, nothing read), in a file pair and in a
// sweep directory.
func TestCompareRefusesHostileReceipts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	deep := filepath.Join(dir, "deep.json")
	require.NoError(t, os.WriteFile(deep, []byte(strings.Repeat("[", 100_000)+strings.Repeat("]", 100_000)), 0o644))
	sweep := t.TempDir()
	big := filepath.Join(sweep, "padded.json")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(300<<20))
	require.NoError(t, f.Close())
	good := tv("signature_match_vllm_throughput_c1.json")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", deep, good}, "vetbench compare: baseline: " + deep + ":1:33: "},
		{[]string{"compare", good, deep}, "nested too deeply: nesting deeper than 32 levels (the depth limit)"},
		{[]string{"compare", good, big}, "vetbench compare: candidate: " + big + ": receipt too large: 314572800 bytes, limit 33554432 bytes (32 MiB"},
		{[]string{"compare", "-levels", sweep}, big + ": receipt too large: 314572800 bytes"},
	} {
		_, stderr, code := run(t, tc.args...)
		require.Equal(t, exitNoVerdict, code, stderr)
		require.Contains(t, stderr, tc.want)
	}
}
