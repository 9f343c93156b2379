package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The shell wrappers parse and are executable; what they run is tested
// through vetbench itself.
func TestScriptsParse(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"../../scripts/gate", "../../scripts/variance"} {
		st, err := os.Stat(s)
		require.NoError(t, err)
		require.NotZero(t, st.Mode()&0o111, "%s is executable", s)
		out, err := exec.Command("sh", "-n", s).CombinedOutput()
		require.NoError(t, err, "%s: %s", s, out)
	}
}

// make bench hands the suite an absolute run directory whether OUT is
// absolute or relative (it once put bench.txt in /abs/dir and the receipts
// in ./abs/dir/receipts), and says nothing of OUT, FORCE or CONFIG when
// they are unset, so the variables of the same names stand.
func TestMakeBenchPaths(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	dry := func(args ...string) string {
		out, err := exec.Command("make", append([]string{"-s", "-n", "-C", root, "bench"}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.TrimSpace(string(out))
	}
	require.True(t, strings.HasPrefix(dry(), "go test ./bench "), dry())
	require.Contains(t, dry("OUT=/abs/dir"), "VETBENCH_OUT=/abs/dir go test")
	require.Contains(t, dry("OUT=rel/dir", "FORCE=1", "CONFIG=run.toml"),
		"VETBENCH_OUT="+filepath.Join(root, "rel/dir")+" VETBENCH_FORCE=1 VETBENCH_CONFIG="+filepath.Join(root, "run.toml")+" go test")
}
