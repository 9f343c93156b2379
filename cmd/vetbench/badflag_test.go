package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBadFlagSaidLast: a mistyped flag exits 2 with nothing measured, and
// every command says so on the last line, after its usage (which runs to
// 30–110 lines and would scroll the flag package's first line away).
func TestBadFlagSaidLast(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"compare", "gate", "matrix", "report", "roofline", "run", "tokens", "twin"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := run(t, name, "-levls", "1")
			require.Equal(t, exitNoVerdict, code)
			require.Empty(t, stdout)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			require.Greater(t, len(lines), 2, "the usage is shown")
			require.Equal(t, "vetbench "+name+": flag provided but not defined: -levls", lines[len(lines)-1])
		})
	}
}
