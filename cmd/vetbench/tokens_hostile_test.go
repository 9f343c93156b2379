package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/decode/tokenstest"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// A tokens run whose points all fail (issue 24, items 4 and 16): a server
// that streams past -output forever. Each request fails as "long" while it
// is read, each point fails (exit 1), and bench.txt is not left empty: it
// has every point's line with its failed-requests, and ends FAIL; stderr
// says why per point. Before, the run never ended, and a run whose points
// failed otherwise left bench.txt empty.
func TestTokensEveryPointFailedWritesBenchTxt(t *testing.T) {
	t.Parallel()
	environ, _ := fakeEnv(t, tokenstest.Config{TokenDelay: time.Millisecond, Hostile: func(tokenstest.Request) string { return "endless" }})
	_, stderr, code := runEnv(t, environ, "tokens", "-workload", "text", "-levels", "1,2", "-output", "8", "-repeats", "1", "-warmup", "0")
	require.Equal(t, exitFail, code, stderr)
	require.Contains(t, stderr, "text c=1: ")
	require.Contains(t, stderr, "text c=2: ")
	require.Contains(t, stderr, "every request failed")

	out := environ["VETBENCH_OUT"]
	b, err := os.ReadFile(filepath.Join(out, "bench.txt"))
	require.NoError(t, err)
	txt := string(b)
	require.Equal(t, 2, strings.Count(txt, "\nBenchmarkTokens/workload=text/"), txt)
	require.Contains(t, txt, "failed-requests")
	require.True(t, strings.HasSuffix(txt, "\nFAIL\n"), txt)

	files, err := filepath.Glob(filepath.Join(out, "receipts", "tokens_*.json"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	rec, err := tokens.ReadFile(files[0])
	require.NoError(t, err)
	require.Equal(t, "long", rec.Runs[0].Requests[0].ErrorClass, "the point records the class")
}
