package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A checked example in README.md or docs/*.md is a fenced block whose info
// string is `sh check` (run by make test: seconds) or `sh check-slow` (run
// by make docs-check: a measurement). Each line is a command, run with bash
// from the module root with `vetbench` on PATH; `# exit N` at its end is
// the status it must give (0 when absent); a following
// `# output contains: TEXT` line is text its output (stdout and stderr)
// must hold. So a stated output or status cannot drift from what the
// command does. docs/development.md#checked-examples says the same to
// writers.
type docExample struct {
	file     string
	line     int
	command  string
	exit     int
	contains []string
	slow     bool
}

var exitComment = regexp.MustCompile(`\s+#\s*exit\s+(\d+)\s*$`)

// docExamples reads the checked examples of one Markdown file.
func docExamples(t *testing.T, path string) []docExample {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []docExample
	in, slow := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && (trimmed == "```sh check" || trimmed == "```sh check-slow"):
			in, slow = true, strings.HasSuffix(trimmed, "slow")
		case in && trimmed == "```":
			in = false
		case in && strings.HasPrefix(trimmed, "# output contains:"):
			require.NotEmpty(t, out, "%s:%d: output stated before any command", path, n)
			want := strings.TrimSpace(strings.TrimPrefix(trimmed, "# output contains:"))
			out[len(out)-1].contains = append(out[len(out)-1].contains, want)
		case in && (trimmed == "" || strings.HasPrefix(trimmed, "#")):
		case in:
			ex := docExample{file: path, line: n, command: trimmed, slow: slow}
			if m := exitComment.FindStringSubmatch(trimmed); m != nil {
				ex.exit, _ = strconv.Atoi(m[1])
				ex.command = strings.TrimSpace(trimmed[:len(trimmed)-len(m[0])])
			}
			out = append(out, ex)
		}
	}
	require.NoError(t, sc.Err())
	require.False(t, in, "%s: a checked block is not closed", path)
	return out
}

// TestDocExamples runs every checked example of README.md and docs/*.md.
// VETBENCH_DOCS_CHECK=slow (make docs-check) runs the slow ones too.
func TestDocExamples(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the documents' commands")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var examples []docExample
	for _, f := range files {
		examples = append(examples, docExamples(t, f)...)
	}
	require.NotEmpty(t, examples, "no checked examples found: the marker changed?")
	bin := vetbenchBinary(t, root)
	slow := os.Getenv("VETBENCH_DOCS_CHECK") == "slow"
	for _, ex := range examples {
		rel, _ := filepath.Rel(root, ex.file)
		t.Run(fmt.Sprintf("%s:%d", rel, ex.line), func(t *testing.T) {
			if ex.slow && !slow {
				t.Skip("slow example: make docs-check")
			}
			cmd := exec.Command("bash", "-o", "pipefail", "-c", ex.command)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			require.Equal(t, ex.exit, exitCode(t, err), "%s:%d: %s\n%s", rel, ex.line, ex.command, out)
			for _, want := range ex.contains {
				require.Contains(t, string(out), want, "%s:%d: %s: stated output", rel, ex.line, ex.command)
			}
		})
	}
}

// vetbenchBinary builds vetbench (the go command's tool cache) and returns
// a path named vetbench in a directory of its own, for PATH.
func vetbenchBinary(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command("go", "tool", "-n", "vetbench")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	link := filepath.Join(t.TempDir(), "vetbench")
	require.NoError(t, os.Symlink(strings.TrimSpace(string(out)), link))
	return link
}

// The reader finds commands, statuses and stated outputs, and a stated
// output that the command does not print fails (a positive control for
// the check itself).
func TestDocExamplesReader(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.md")
	require.NoError(t, os.WriteFile(path, []byte("text\n```sh\nnot checked\n```\n```sh check\necho hi   # exit 0\n# output contains: hi\nfalse # exit 1\n```\n"), 0o644))
	ex := docExamples(t, path)
	require.Equal(t, []docExample{
		{file: path, line: 6, command: "echo hi", contains: []string{"hi"}},
		{file: path, line: 8, command: "false", exit: 1},
	}, ex)
	out, _ := exec.Command("bash", "-c", "echo ho").CombinedOutput()
	require.NotContains(t, string(out), ex[0].contains[0], "a drifted output would fail the check")
}
