package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every file docs/matrix.md names is where it says, from the repository
// root (a user copies the commands from there), and the golden it quotes
// is the one the tests check.
func TestMatrixDocsNameFilesThatExist(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/matrix.md")
	require.NoError(t, err)
	paths := regexp.MustCompile(`(?:receipts|cmd|bench|stub|docs)/[A-Za-z0-9_./-]+\.(?:csv|md|json|txt|stdout)`).FindAllString(string(doc), -1)
	require.GreaterOrEqual(t, len(paths), 6)
	for _, p := range paths {
		require.FileExists(t, filepath.Join("..", "..", p), "docs/matrix.md names %s", p)
	}
	golden, err := os.ReadFile("testdata/matrix_baseline_changed.stdout")
	require.NoError(t, err)
	for _, line := range regexp.MustCompile(`(?m)^(?:8K c=64|16K c=1 |73 cells).*$`).FindAllString(string(golden), -1) {
		require.Contains(t, string(doc), line, "the quoted output is the golden's")
	}
}
