package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/receipts"
)

// runWith runs a command line with the environment given (nothing else).
func runWith(t *testing.T, environ map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return environ[k] }}
	code = vetbench(t.Context(), e, args)
	return out.String(), errb.String(), code
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	// The variables say one thing, the flags another: the flags win, the
	// variables stand where no flag is given (VETBENCH_FIXTURE_SIZE).
	environ := map[string]string{"VETBENCH_STUB": "inprocess", "VETBENCH_FIXTURE_SIZE": "2",
		"VETBENCH_SETS": "faces", "VETBENCH_LEVELS": "32", "VETBENCH_OUT": filepath.Join(dir, "not-here")}
	stdout, stderr, code := runWith(t, environ, "run", "-sets", "checks,signatures", "-levels", "1,4", "-out", dir)
	require.Equal(t, exitPass, code, stderr)
	require.Contains(t, stdout, "target: inprocess")
	for _, name := range []string{"checks_c1", "checks_c4", "signatures_c1", "signatures_c4"} {
		rec, err := receipts.ReadFile(filepath.Join(dir, name+".json"))
		require.NoError(t, err)
		require.Nil(t, rec.Stopped)
		require.Positive(t, rec.Throughput.Judgments)
		require.Contains(t, stdout, filepath.Join(dir, name+".json"))
	}
	require.NoFileExists(t, filepath.Join(dir, "checks_c32.json"))
	require.NoDirExists(t, filepath.Join(dir, "not-here"))
	delete(environ, "VETBENCH_SETS")
	delete(environ, "VETBENCH_LEVELS")
	delete(environ, "VETBENCH_OUT")

	// A fault stops the point: exit 1, and the receipt says why.
	environ["VETBENCH_STUB_FAULTS"] = "missing-candidate:match=|r01:clean|"
	stdout, stderr, code = runWith(t, environ, "run", "-sets", "checks", "-levels", "1", "-out", dir)
	require.Equal(t, exitFail, code, stdout)
	require.Contains(t, stdout, "STOPPED at r01:clean (error)")
	require.Contains(t, stderr, "missing scores for requested candidates")
	rec, err := receipts.ReadFile(filepath.Join(dir, "checks_c1.json"))
	require.NoError(t, err)
	require.Equal(t, "r01:clean", rec.Stopped.Item)
	require.Equal(t, 7, rec.Throughput.Judgments)

	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"run", "-sets", "cats"}, nil, `unknown set "cats"`},
		{[]string{"run", "-levels", "0"}, nil, `-levels "0": "0" is not a concurrency level`},
		{[]string{"run"}, map[string]string{"VETBENCH_LEVELS": "x"}, `VETBENCH_LEVELS="x"`},
		{[]string{"run"}, map[string]string{"VETBENCH_ENDPOINT": "gpu-box"}, `VETBENCH_ENDPOINT="gpu-box": want a base URL`},
		{[]string{"run", "-sets", "checks"}, map[string]string{"VETBENCH_STUB": "inprocess", "VETBENCH_STUB_FAULTS": "boom"}, `VETBENCH_STUB_FAULTS: fault "boom"`},
		{[]string{"run", "extra"}, nil, `unexpected argument "extra"`},
		{[]string{"run", "-sets", "checks", "-out", dir}, map[string]string{"VETBENCH_ENDPOINT": "http://127.0.0.1:1"}, "connection refused"},
	} {
		_, stderr, code := runWith(t, tc.env, tc.args...)
		require.Equal(t, exitNoVerdict, code, stderr)
		require.Contains(t, stderr, tc.want)
	}
}
