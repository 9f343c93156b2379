package main

import (
	"context"
	"io"
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
	require.Equal(t, "vetbench matrix: results in "+environ["VETBENCH_OUT"]+"\n", stderr, "-quiet says only where the results are")
}

// A measured matrix has a run directory of its own, as run and tokens
// do: the matrix (JSON and CSV), a bench.txt line per measured cell for
// vetbench gate, settings.toml; a second run into it is refused, and
// nothing in it changes, unless -force.
func TestMatrixCommandRunDirectory(t *testing.T) {
	t.Parallel()
	environ, _ := fakeEnv(t, tokenstest.Config{TokenDelay: time.Millisecond})
	environ = quickMatrix(environ)
	environ["VETBENCH_MATRIX_READY_TIMEOUT"] = "1m" // a slow machine queues no cell
	out := environ["VETBENCH_OUT"]
	args := []string{"matrix", "-contexts", "1000", "-levels", "1,2", "-output", "100000"}
	_, stderr, code := runEnv(t, environ, args...)
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stderr, "results in "+out)
	m, err := matrix.ReadFile(filepath.Join(out, "receipts", "matrix.json"))
	require.NoError(t, err)
	c, err := matrix.ReadCSVFile(filepath.Join(out, "receipts", "matrix.csv"))
	require.NoError(t, err)
	require.Len(t, c.Cells, len(m.Cells))
	require.FileExists(t, filepath.Join(out, "settings.toml"))
	bench, err := os.ReadFile(filepath.Join(out, "bench.txt"))
	require.NoError(t, err)
	for _, cell := range []string{"ctx=1000/c=1", "ctx=1000/c=2"} {
		require.Regexp(t, `(?m)^BenchmarkMatrix/`+cell+`\S*\s+1\s.* output-tok/s`, string(bench), "a line per measured cell")
	}
	require.True(t, strings.HasSuffix(string(bench), "PASS\n"))

	_, stderr, code = runEnv(t, environ, args...)
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, "holds results of an earlier run")
	again, err := os.ReadFile(filepath.Join(out, "bench.txt"))
	require.NoError(t, err)
	require.Equal(t, bench, again, "the refused run changed nothing")
	_, stderr, code = runEnv(t, environ, append(args, "-force")...)
	require.Equal(t, exitPass, code, stderr)
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
	require.Contains(t, stdout, "1000 c=8: Skipped: context + C × output = 1000 + 8 × 20000 = 161000 tokens (the prompt's cached blocks shared by the streams) exceeds the KV cache of 96000 tokens")

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

// The trim notice is the first line, before anything is measured, under
// -quiet too; then what will run and how long it takes.
func TestMatrixCommandSaysTheTrimFirst(t *testing.T) {
	t.Parallel()
	environ, srv := fakeEnv(t, tokenstest.Config{MaxModelLen: 8192})
	environ = quickMatrix(environ)
	var first string
	stderr := &firstLine{seen: func(line string) {
		first = line
		require.Empty(t, srv.Requests(), "said before a request is sent")
	}}
	code := runTo(t, context.Background(), environ, io.Discard, stderr, "matrix", "-levels", "1", "-output", "4096")
	require.Equal(t, exitPass, code, stderr.String())
	require.Equal(t, "vetbench matrix: NOTE: contexts 8K,16K,32K,64K,128K are over max_model_len 8192 − output 4096 − 64 = 4032 tokens and trimmed to it: "+
		"8K,16K,32K,64K,128K → 3K (4032 tokens); the grid that will run is 3K × c=1 (1 cell)", first)
	require.Contains(t, stderr.String(), "vetbench matrix: 3K × c=1 (1 cell); estimate 1 cell and 1 prefill row: at least ")
	require.Equal(t, 1, strings.Count(stderr.String(), "trimmed to it"), "said once, not again at the end")

	environ["VETBENCH_OUT"] = filepath.Join(t.TempDir(), "quiet")
	_, errText, code := runEnv(t, environ, "matrix", "-levels", "1", "-output", "4096", "-quiet")
	require.Equal(t, exitPass, code, errText)
	require.True(t, strings.HasPrefix(errText, "vetbench matrix: NOTE: contexts 8K,16K,32K,64K,128K are over"), errText)
}

// firstLine records what is written and calls seen with the first line.
type firstLine struct {
	strings.Builder
	seen func(string)
}

func (f *firstLine) Write(p []byte) (int, error) {
	if f.Len() == 0 && f.seen != nil {
		line, _, _ := strings.Cut(string(p), "\n")
		f.seen(line)
	}
	return f.Builder.Write(p)
}

// runTo is runEnv with its context and writers.
func runTo(t *testing.T, ctx context.Context, environ map[string]string, stdout, stderr io.Writer, args ...string) int {
	t.Helper()
	e := &env{stdout: stdout, stderr: stderr, getenv: func(k string) string { return environ[k] },
		exec: func(context.Context, []string, io.Writer, io.Writer, string, ...string) error { return os.ErrNotExist }}
	return vetbench(ctx, e, args)
}

// A matrix whose every cell failed fails (it exited 0).
func TestMatrixCommandEveryCellFailed(t *testing.T) {
	t.Parallel()
	environ, _ := fakeEnv(t, tokenstest.Config{Fail: func(q tokenstest.Request) int {
		if q.MaxTokens > 1 {
			return 500
		}
		return 0
	}})
	stdout, stderr, code := runEnv(t, quickMatrix(environ), "matrix", "-contexts", "1000", "-levels", "1,2", "-output", "100")
	require.Equal(t, exitFail, code, stderr)
	require.Contains(t, stdout, "Failed")
	require.Contains(t, stderr, "vetbench matrix: FAILED: no cell was measured (2 Failed, 0 Skipped of 2)")
}

// Ctrl-C: 130, and what was measured is written.
func TestMatrixCommandInterruptedExits130(t *testing.T) {
	t.Parallel()
	environ, _ := fakeEnv(t, tokenstest.Config{TokenDelay: time.Millisecond})
	environ = quickMatrix(environ)
	environ["VETBENCH_MATRIX_READY_TIMEOUT"] = "1m" // a slow machine queues no cell
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &firstLine{}
	w := writerFunc(func(p []byte) {
		stderr.Write(p)
		if strings.Contains(string(p), "1000 c=1: ") {
			cancel() // Ctrl-C after the first cell
		}
	})
	jsonPath := filepath.Join(t.TempDir(), "m.json")
	code := runTo(t, ctx, environ, io.Discard, w, "matrix", "-contexts", "1000", "-levels", "1,2,4", "-output", "100000", "-json", jsonPath)
	require.Equal(t, exitInterrupted, code, stderr.String())
	require.Contains(t, stderr.String(), "interrupted")
	m, err := matrix.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NotNil(t, m.Stopped)
	require.Equal(t, "canceled", m.Stopped.Reason)
	require.Equal(t, matrix.Valid, m.Cell("1000", 1).Status, "the cell measured before Ctrl-C is kept")
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// -baseline after a measured run: against an earlier run of the same
// grid; against the published matrix (none of its cells measured: exit 2).
func TestMatrixCommandBaseline(t *testing.T) {
	t.Parallel()
	environ, _ := fakeEnv(t, tokenstest.Config{TokenDelay: time.Millisecond})
	environ = quickMatrix(environ)
	environ["VETBENCH_MATRIX_READY_TIMEOUT"] = "1m" // a slow machine queues no cell
	first := filepath.Join(t.TempDir(), "first.json")
	args := []string{"matrix", "-contexts", "1000", "-levels", "1,2", "-output", "100000"}
	_, stderr, code := runEnv(t, environ, append(args, "-json", first)...)
	require.Equal(t, exitPass, code, stderr)
	// Figures of two runs on a shared machine may differ by any factor:
	// only the statuses and the cells are certain.
	environ["VETBENCH_OUT"] = filepath.Join(t.TempDir(), "second")
	stdout, stderr, code := runEnv(t, environ, append(args, "-baseline", first)...)
	require.Contains(t, []int{exitPass, exitFail}, code, stderr)
	require.Regexp(t, `3 cells compared: 0 with a status changed, [0-9]+ with a figure beyond ±15%, 0 missing from the candidate: (SAME|DIFFERENT)`, stdout)

	environ["VETBENCH_OUT"] = filepath.Join(t.TempDir(), "third")
	_, stderr, code = runEnv(t, environ, append(args, "-baseline", publishedDeepSeek, "-baseline-subset")...)
	require.Equal(t, exitNoVerdict, code, stderr)
	require.Contains(t, stderr, "the matrices have no cell in common")

	// An unreadable baseline is refused before anything is measured.
	_, stderr, code = runEnv(t, environ, append(args, "-baseline", mx("baseline-malformed.csv"))...)
	require.Equal(t, exitNoVerdict, code)
	require.Equal(t, "vetbench matrix: baseline: testdata/matrix/baseline-malformed.csv:29:24: status: unknown status \"Fast\"\n", stderr)
}

// The twin at ×10: model-time waits and figures, labelled.
func TestMatrixCommandTimeScale(t *testing.T) {
	t.Parallel()
	environ := map[string]string{"VETBENCH_STUB": "inprocess", "VETBENCH_STUB_TIME_SCALE": "10", "VETBENCH_OUT": filepath.Join(t.TempDir(), "run")}
	stdout, stderr, code := runEnv(t, environ, "matrix", "-contexts", "1K", "-levels", "1", "-output", "256", "-duration", "3s",
		"-hold", "300ms", "-pause", "0s", "-scrape-interval", "100ms", "-ready-timeout", "60s")
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stderr, "vetbench matrix: twin ×10 time scale: every wait (window, hold, timeouts, budget) and every figure is model time")
	require.Contains(t, stderr, "at least 3.3s (300ms wall at twin ×10)")
	require.Contains(t, stdout, "twin at ×10 time scale, every figure in model time")
}
