package typevet_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/typevet"
)

// zeros is an endless stream that counts what was read of it.
type zeros struct{ read int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.read += int64(len(p))
	return len(p), nil
}

// Every typevet reading path holds the same two limits as receipts: the
// size cap (refused by size, or one byte past it on a stream) and the
// depth limit (refused at the bracket that goes one level too deep).
func TestReadersHoldTheLimits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "padded.json")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(300<<20)) // sparse: no disk
	require.NoError(t, f.Close())
	deepDir := t.TempDir()
	deep := filepath.Join(deepDir, "deep.json")
	// Top-level keys of both formats: whichever reader sniffing picks, the
	// parser refuses first.
	doc := `{"backend": "vllm", "pins": {}, "pairs": ` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "}"
	require.NoError(t, os.WriteFile(deep, []byte(doc), 0o644))

	for name, read := range map[string]func(string) (*receipts.Receipt, error){
		"ReadAny":  typevet.ReadAny,
		"ReadFile": typevet.ReadFile,
		"ReadDir": func(p string) (*receipts.Receipt, error) {
			_, err := typevet.ReadDir(filepath.Dir(p))
			return nil, err
		},
	} {
		_, err := read(big)
		require.ErrorIs(t, err, receipts.ErrTooLarge, name)
		require.ErrorContains(t, err, big+": receipt too large: 314572800 bytes, limit 33554432 bytes (32 MiB", name)

		_, err = read(deep)
		require.ErrorIs(t, err, receipts.ErrTooDeep, name)
		require.ErrorContains(t, err, deep+":1:73: pairs"+strings.Repeat("[0]", receipts.MaxDepth-1)+": nested too deeply: nesting deeper than 32 levels", name)
	}

	src := &zeros{}
	_, err = typevet.Import(src, "stream.json")
	require.ErrorIs(t, err, receipts.ErrTooLarge)
	require.LessOrEqual(t, src.read, int64(receipts.MaxBytes+1))

	_, err = typevet.Sniff([]byte(doc))
	require.ErrorIs(t, err, receipts.ErrTooDeep, "sniffing parses under the same limit")
	_, err = typevet.Import(io.MultiReader(bytes.NewReader([]byte(doc))), "deep.json")
	require.ErrorIs(t, err, receipts.ErrTooDeep)
}
