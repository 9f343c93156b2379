package tokens_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/tokens"
)

// TestReadPathRefusesABrokenReceiptInADirectory: a directory's tokens_*.json
// that does not read is an error naming it (it used to be skipped, so its
// point read as missing, or a comparison passed without it); other
// documents of a run are still left alone.
func TestReadPathRefusesABrokenReceiptInADirectory(t *testing.T) {
	for _, c := range []struct {
		name, file, body, want string
	}{
		{"truncated receipt", "tokens_text_c4.json", `{"schema":`, "tokens_text_c4.json"},
		{"receipt of another schema", "tokens_text_c4.json", `{"schema":"vetbench.matrix/v1"}`, `its schema is "vetbench.matrix/v1"`},
		{"not an object", "tokens_text_c4.json", `[1,2]`, "tokens_text_c4.json"},
		{"another document (control)", "matrix.json", `{"schema":`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, c.file), []byte(c.body), 0o644))
			_, err := tokens.ReadPath(dir)
			require.Error(t, err) // the directory holds no good receipt either way
			if c.want == "" {
				require.Contains(t, err.Error(), "no "+tokens.Schema+" receipt in the directory")
				return
			}
			require.Contains(t, err.Error(), c.want)
			require.NotContains(t, err.Error(), "no "+tokens.Schema+" receipt")
		})
	}
}
