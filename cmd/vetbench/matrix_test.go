package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/decode/tokenstest"
	"github.com/vetbench/vetbench/receipts/matrix"
)

// quickMatrix is the environment of a matrix small enough for a test.
func quickMatrix(environ map[string]string) map[string]string {
	for k, v := range map[string]string{
		"VETBENCH_MATRIX_DURATION": "150ms", "VETBENCH_MATRIX_OUTPUT": "100000", "VETBENCH_MATRIX_SCRAPE_INTERVAL": "10ms",
		"VETBENCH_MATRIX_HOLD": "20ms", "VETBENCH_MATRIX_PAUSE": "0s", "VETBENCH_MATRIX_READY_TIMEOUT": "300ms",
	} {
		environ[k] = v
	}
	return environ
}

func TestMatrixCommand(t *testing.T) {
	t.Parallel()
	// Room (KV and decode slots) for both cells.
	environ, _ := fakeEnv(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond, GPUBlocks: 7000, BlockSize: 16, MaxRunning: 2})
	environ = quickMatrix(environ)
	environ["VETBENCH_MATRIX_READY_TIMEOUT"] = "1m"
	dir := t.TempDir()
	jsonPath, csvPath := filepath.Join(dir, "m.json"), filepath.Join(dir, "m.csv")
	args := []string{"matrix", "-contexts", "1000", "-levels", "1,2", "-output", "4000", "-json", jsonPath, "-csv", csvPath}
	stdout, stderr, code := runEnv(t, environ, args...)
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stdout, "Prefill\ncontext")
	require.Contains(t, stdout, "Sustained decode")
	require.Regexp(t, `(?m)^1000 +[0-9.,K]+ · [0-9]+ ms +[0-9.,K]+ · [0-9]+ ms`, stdout)
	require.Contains(t, stderr, "1000 c=2: ", "a progress line per cell")

	m, err := matrix.ReadFile(jsonPath)
	require.NoError(t, err)
	require.Len(t, m.Cells, 2)
	c, err := matrix.ReadCSVFile(csvPath)
	require.NoError(t, err)
	require.Len(t, c.Cells, 2)

	// Nothing is overwritten unless asked.
	before, _ := os.ReadFile(jsonPath)
	_, stderr, code = runEnv(t, environ, args...)
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, "m.json exists: give another file, or -force")
	after, _ := os.ReadFile(jsonPath)
	require.Equal(t, before, after)
	_, stderr, code = runEnv(t, environ, append(args, "-force", "-quiet")...)
	require.Equal(t, exitPass, code, stderr)
	require.Empty(t, stderr)
}

func TestMatrixCommandStatuses(t *testing.T) {
	t.Parallel()
	// 2 decode slots: c=4 queues. KV of 6000 × 16 = 96000 tokens: c=8
	// × (1000 + 20000) does not fit.
	environ, _ := fakeEnv(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond, GPUBlocks: 6000, BlockSize: 16, MaxRunning: 2})
	stdout, stderr, code := runEnv(t, quickMatrix(environ), "matrix", "-contexts", "1000", "-levels", "1,4,8", "-output", "20000")
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stdout, "Requests queued")
	require.Contains(t, stdout, "Skipped")
	require.Contains(t, stdout, "1000 c=4: Requests queued: never ready")
	require.Contains(t, stdout, "1000 c=8: Skipped: C × (context + output) = 8 × (1000 + 20000) = 168000 tokens exceeds the KV cache of 96000 tokens")

	// A looping model: the cell says Looped.
	environ, _ = fakeEnv(t, tokenstest.Config{Loop: func(q tokenstest.Request) bool { return q.MaxTokens > 1 }})
	stdout, stderr, code = runEnv(t, quickMatrix(environ), "matrix", "-contexts", "1000", "-levels", "2", "-output", "5000", "-duration", "1m")
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stdout, "1000 c=2: Looped: loop detected in content")

	_, stderr, code = runEnv(t, nil, "matrix", "-contexts", "8Q")
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, `-contexts "8Q"`)
	require.True(t, strings.HasPrefix(stderr, "vetbench matrix: bad configuration"))
}
