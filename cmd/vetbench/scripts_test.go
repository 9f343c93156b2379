package main

import (
	"os"
	"os/exec"
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
