package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunFileDepthIsRefused: a 40 KB run file of nested arrays took the
// TOML parser 59 s and 3.9 GB (quadratic in the nesting). Nesting past
// maxFileDepth — arrays, inline tables, dotted keys, table headers — is
// refused at its line and column before the parser runs; the controls
// (strings and comments full of brackets, floats, a real run file's
// depth) are read.
func TestRunFileDepthIsRefused(t *testing.T) {
	t.Parallel()
	n := 20000
	for name, doc := range map[string]string{
		"arrays":        "levels = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n",
		"inline tables": "twin = " + strings.Repeat("{a = ", n) + "1" + strings.Repeat("}", n) + "\n",
		"dotted key":    strings.Repeat("a.", n) + "b = 1\n",
		"table header":  "[" + strings.Repeat("a.", n) + "b]\n",
	} {
		t.Run(name, func(t *testing.T) {
			err := checkDepth([]byte(doc))
			require.ErrorContains(t, err, "1:")
			path := filepath.Join(t.TempDir(), "run.toml")
			require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
			_, err = readFile(path)
			require.ErrorContains(t, err, "run.toml:1:", "%s", name)
			require.ErrorContains(t, err, "than 16", "%s", name)
		})
	}
	for _, ok := range []string{
		"levels = [1, 4, 16]\n[twin]\nprofile = \"fast\" # [[[[[[[[[[[[[[[[[[[[\n",
		"x = \"" + strings.Repeat("[{", 40) + "\"\ny = '" + strings.Repeat("a.", 40) + "'\n",
		"z = \"\"\"\n" + strings.Repeat("[", 40) + "\n\"\"\"\nrate = 1.5\nt = 12:00:00.25\n",
		"a = [[[[1]]]]\nb.c.d = 2\n",
	} {
		require.NoError(t, checkDepth([]byte(ok)), ok)
	}
}

// TestRunFileMustBeRegular: a named pipe as -config blocked forever.
func TestRunFileMustBeRegular(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "run.toml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	_, err := readFile(fifo)
	require.ErrorContains(t, err, "not a regular file")
}
