package receipts_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

// counting counts the bytes read through it.
type counting struct {
	r    io.Reader
	read int64
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// repeated is an endless stream of s after head.
type repeated struct {
	head []byte
	s    []byte
	off  int
}

func (r *repeated) Read(p []byte) (int, error) {
	if len(r.s) < 4096 {
		r.s = bytes.Repeat(r.s, 4096/len(r.s)+1) // whole copies of s, fewer calls
	}
	n := 0
	for n < len(p) {
		if len(r.head) > 0 {
			k := copy(p[n:], r.head)
			r.head = r.head[k:]
			n += k
			continue
		}
		k := copy(p[n:], r.s[r.off:])
		r.off = (r.off + k) % len(r.s)
		n += k
	}
	return n, nil
}

// Hostile receipts are refused at a limit, before the work: the depth
// limit at the bracket that goes one level too deep (its column proves
// the parser went no further), the size cap one byte past the cap (the
// counting reader proves nothing more was read). No clock is asserted.
func TestReadRefusesHostileInput(t *testing.T) {
	t.Parallel()
	const deep = 100_000
	for _, tc := range []struct {
		name  string
		data  []byte
		col   int
		error string
	}{
		{"deep arrays", []byte(strings.Repeat("[", deep) + strings.Repeat("]", deep)), receipts.MaxDepth + 1,
			"hostile.json:1:33: " + strings.Repeat("[0]", receipts.MaxDepth) + ": nested too deeply: nesting deeper than 32 levels (the depth limit)"},
		{"deep objects", []byte(strings.Repeat(`{"a":`, deep) + "1" + strings.Repeat("}", deep)), 5*receipts.MaxDepth + 1, ""},
		{"deep inside a receipt", []byte(`{"schema": "vetbench.receipt/v1", "items": ` + strings.Repeat("[", deep)), 44 + receipts.MaxDepth - 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := receipts.Read(bytes.NewReader(tc.data), "hostile.json")
			require.ErrorIs(t, err, receipts.ErrTooDeep)
			var se *receipts.SchemaError
			require.ErrorAs(t, err, &se)
			require.Equal(t, "hostile.json", se.File)
			require.Equal(t, [2]int{1, tc.col}, [2]int{se.Line, se.Column}, "%v", err)
			if tc.error != "" {
				require.EqualError(t, err, tc.error)
			}
		})
	}

	for _, tc := range []struct {
		name string
		src  *repeated
	}{
		{"padding", &repeated{s: []byte(" ")}},
		{"padding after a receipt", &repeated{head: encode(t, sample(t)), s: []byte("\n")}},
		{"endless string", &repeated{head: []byte(`{"schema": "`), s: []byte("a")}},
		{"endless array", &repeated{head: []byte(`{"items": [`), s: []byte("0,")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := &counting{r: tc.src}
			_, err := receipts.Read(src, "big.json")
			require.ErrorIs(t, err, receipts.ErrTooLarge)
			require.LessOrEqual(t, src.read, int64(receipts.MaxBytes+1))
			require.EqualError(t, err, "big.json: receipt too large: more than 33554432 bytes, limit 33554432 bytes (32 MiB, the cap on every receipt and replay file)")
		})
	}
}

// A long string under the cap is read and refused with a short message:
// the value it quotes is clipped.
func TestLongStringsStayOutOfMessages(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 1<<20)
	for _, doc := range []string{
		`{"schema": "` + long + `"}`,
		`{"` + long + `": 1}`,
		`{"started_utc": "` + long + `"}`,
	} {
		_, err := receipts.Read(strings.NewReader(doc), "long.json")
		require.Error(t, err)
		require.Less(t, len(err.Error()), 8<<10, "the message quotes the value clipped")
		require.Contains(t, err.Error(), "…(1048576 bytes)")
	}
}

// sparse makes a 300 MB file that takes no disk: Truncate extends it with
// a hole.
func sparse(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(300<<20))
	require.NoError(t, f.Close())
}

func TestReadFileAndDirRefuseOversizedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "padded.json")
	sparse(t, big)
	want := big + ": receipt too large: 314572800 bytes, limit 33554432 bytes (32 MiB, the cap on every receipt and replay file)"
	_, err := receipts.ReadFile(big)
	require.ErrorIs(t, err, receipts.ErrTooLarge)
	require.EqualError(t, err, want)

	require.NoError(t, receipts.WriteFile(filepath.Join(dir, "good.json"), sample(t)))
	_, err = receipts.ReadDir(dir)
	require.ErrorIs(t, err, receipts.ErrTooLarge, "one oversized receipt fails the sweep")
	require.EqualError(t, err, want)
}
