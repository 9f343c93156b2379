package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/bench/sweep/rundir"
)

// URLs given as flags and as gate's arguments (one, or in a list) are
// never echoed with their user info or query, in text or in the -json
// error object; the refusal still names the host.
func TestURLArgumentsLeakNoSecrets(t *testing.T) {
	t.Parallel()
	const bad = "http://user:secret@127.0.0.1:1/v1?key=secret"
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", "-endpoint", bad, "-out", filepath.Join(dir, "a")},
		{"run", "-endpoint", "http://127.0.0.1:2," + bad, "-out", filepath.Join(dir, "b")},
		{"run", "-endpoint", "ftp://user:secret@x/?key=secret", "-out", filepath.Join(dir, "c")},
		{"gate", "-json", bad, "bench.txt"},
		{"gate", "bench.txt", bad},
		{"gate", "-json", "-run", bad + ",http://127.0.0.1:2", "inprocess"},
	} {
		stdout, stderr, code := runWith(t, nil, args...)
		all := stdout + stderr
		require.Equal(t, exitNoVerdict, code, all)
		require.Contains(t, strings.Join(args, " "), "secret", "the input carries the secret (control)")
		require.NotContains(t, all, "secret", "%v", args)
		require.Contains(t, all, "xxxxx@", "%v: the refusal shows where the secret was", args)
	}
}

// A second run into a run directory another live run holds is refused,
// naming the holder's pid, exit 2; a stale lock (its pid not running) is
// taken over with a note.
func TestSecondRunIntoOneDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lock := filepath.Join(dir, rundir.LockFile)
	environ := map[string]string{"VETBENCH_ENDPOINT": "http://127.0.0.1:1", "VETBENCH_CONTROL_TIMEOUT": "200ms", "VETBENCH_TIMEOUT": "200ms"}
	require.NoError(t, os.WriteFile(lock, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644))
	for _, force := range []string{"-force=false", "-force"} {
		_, stderr, code := runWith(t, environ, "run", force, "-out", dir)
		require.Equal(t, exitNoVerdict, code, stderr)
		require.Contains(t, stderr, "is in use by another run (pid "+strconv.Itoa(os.Getpid())+" holds .vetbench.lock)")
	}
	require.FileExists(t, lock, "a refusal leaves the holder's lock")

	// Control: a stale holder is taken over, the run goes on (to an
	// endpoint that does not answer), and releases the lock at its end.
	require.NoError(t, os.WriteFile(lock, []byte("0\n"), 0o644))
	_, stderr, code := runWith(t, environ, "run", "-out", dir)
	require.Equal(t, exitNoVerdict, code, stderr)
	require.Contains(t, stderr, "took over a stale lock")
	require.NotContains(t, stderr, "in use by another run")
	require.NoFileExists(t, lock)
}
