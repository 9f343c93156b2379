package speed

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

// TestFellBehind: the receipts beside each output are read; a side with
// the warning is named with how many of its receipts carry it and which;
// other warnings, unreadable files and a lone output say nothing. The
// note reaches the report's text and does not change its verdict.
func TestFellBehind(t *testing.T) {
	run := func(t *testing.T, receiptsJSON map[string]string) string {
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "receipts"), 0o755))
		for name, body := range receiptsJSON {
			path := filepath.Join(dir, "receipts", filepath.FromSlash(name))
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		}
		return filepath.Join(dir, "bench.txt")
	}
	behind := `{"warnings": ["` + receipts.TwinBehind + `: responses' first tokens left it 6.5 ms (model time) late on average"]}`
	base := run(t, map[string]string{"checks_c4.json": `{"warnings": ["little's law: idle"]}`, "broken.json": `{"warnings": [`})
	cand := run(t, map[string]string{"checks_c4.json": behind, "checks_c16.json": `{}`})
	notes := FellBehind([2]string{base, cand})
	require.Len(t, notes, 1)
	require.Equal(t, "candidate: the twin fell behind its model in 1 of 2 receipts (checks_c4.json): part of a difference may be the machine that ran it, not the software (docs/hygiene.md)", notes[0])
	require.Empty(t, FellBehind([2]string{base, filepath.Join(t.TempDir(), "bench.txt")}), "no receipts beside it")
	// A later pass's receipt counts too (the output holds its lines), and
	// a long list is cut.
	passes := map[string]string{"checks_c4.json": `{}`, "pass2/checks_c4.json": behind}
	for k := 3; k <= 9; k++ {
		passes[fmt.Sprintf("pass%d/checks_c4.json", k)] = behind
	}
	later := FellBehind([2]string{base, run(t, passes)})
	require.Equal(t, []string{"candidate: the twin fell behind its model in 8 of 9 receipts (pass2/checks_c4.json, pass3/checks_c4.json, pass4/checks_c4.json, pass5/checks_c4.json, pass6/checks_c4.json, pass7/checks_c4.json, … 2 more): part of a difference may be the machine that ran it, not the software (docs/hygiene.md)"}, later)
	both := FellBehind([2]string{cand, cand})
	require.Len(t, both, 2)
	require.True(t, strings.HasPrefix(both[0], "baseline: "))

	rep := Report{Passed: true, Notes: notes}
	var b strings.Builder
	require.NoError(t, rep.WriteText(&b))
	require.Contains(t, b.String(), "note: candidate: the twin fell behind its model in 1 of 2 receipts")
	require.True(t, rep.Passed)
}
