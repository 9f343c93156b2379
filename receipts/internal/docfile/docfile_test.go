package docfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/internal/jsontree"
)

func TestWriteNewNeverOverwrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	require.NoError(t, WriteNew(path, []byte("one")))
	err := WriteNew(path, []byte("two"))
	require.ErrorIs(t, err, fs.ErrExist)
	got, _ := os.ReadFile(path)
	require.Equal(t, "one", string(got), "the first file is untouched")

	require.NoError(t, Replace(path, []byte("three")), "replacing is explicit")
	got, _ = os.ReadFile(path)
	require.Equal(t, "three", string(got))

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
	require.Error(t, WriteNew(filepath.Join(dir, "missing", "r.json"), []byte("x")))
}

func TestCheckDepth(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	err := CheckDepth([]byte(deep))
	var je *jsontree.Error
	require.ErrorAs(t, err, &je)
	require.Equal(t, 1, je.Line)
	require.Equal(t, MaxDepth+1, je.Column)
	require.NoError(t, CheckDepth([]byte(`{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"[[["}`)), "brackets in strings do not nest")
	require.NoError(t, CheckDepth([]byte(strings.Repeat("[", MaxDepth)+strings.Repeat("]", MaxDepth))))
	_, err = Parse([]byte(deep), reflect.TypeFor[[]any]())
	require.ErrorAs(t, err, &je, "Parse guards before it recurses")
}

// endless is a stream that never ends, counting what was read of it.
type endless struct {
	fill byte
	read int64
}

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.fill
	}
	e.read += int64(len(p))
	return len(p), nil
}

func TestRead(t *testing.T) {
	t.Parallel()
	got, err := Read(strings.NewReader("{}"))
	require.NoError(t, err)
	require.Equal(t, "{}", string(got))

	got, err = Read(strings.NewReader(strings.Repeat(" ", MaxBytes)))
	require.NoError(t, err, "exactly MaxBytes is allowed")
	require.Len(t, got, MaxBytes)

	// An endless stream is cut one byte past the cap: the limit is hit
	// before the work, whatever the stream holds.
	src := &endless{fill: '['}
	_, err = Read(src)
	require.ErrorIs(t, err, ErrTooLarge)
	var se *SizeError
	require.ErrorAs(t, err, &se)
	require.EqualValues(t, -1, se.Size)
	require.LessOrEqual(t, src.read, int64(MaxBytes+1), "read no more than the cap and one byte")
	require.EqualError(t, err, "receipt too large: more than 33554432 bytes, limit 33554432 bytes (32 MiB, the cap on every receipt and replay file)")
}

func TestReadFileRefusesByItsSize(t *testing.T) {
	t.Parallel()
	// A sparse 300 MB file: refused from its size, nothing of it read
	// (the size in the error is the file's, from Stat).
	path := filepath.Join(t.TempDir(), "padded.json")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(300<<20))
	require.NoError(t, f.Close())
	_, err = ReadFile(path)
	require.ErrorIs(t, err, ErrTooLarge)
	var se *SizeError
	require.ErrorAs(t, err, &se)
	require.EqualValues(t, 300<<20, se.Size)
	require.Contains(t, err.Error(), "receipt too large: 314572800 bytes, limit 33554432 bytes (32 MiB")

	small := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, os.WriteFile(small, []byte(`{"a": 1}`), 0o644))
	got, err := ReadFile(small)
	require.NoError(t, err)
	require.Equal(t, `{"a": 1}`, string(got))
	_, err = ReadFile(filepath.Join(t.TempDir(), "missing.json"))
	require.ErrorIs(t, err, fs.ErrNotExist)

	// A stream with no size is cut at the cap.
	_, err = Read(io.LimitReader(zeros{}, MaxBytes+10))
	require.ErrorAs(t, err, &se)
	require.EqualValues(t, -1, se.Size)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestOpenRefusesWhatIsNotARegularFile: a named pipe would block the open
// until a writer came (forever), a device (/dev/zero, also behind a
// *.json link) never ends, a directory is no document. Each is refused
// before a byte is read; a regular file and a link to one are read.
func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.json")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	zero := filepath.Join(dir, "zero.json")
	require.NoError(t, os.Symlink("/dev/zero", zero))
	good := filepath.Join(dir, "good.json")
	require.NoError(t, os.WriteFile(good, []byte(`{}`), 0o644))
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(good, link))
	for _, bad := range []string{fifo, zero, dir} {
		_, err := ReadFile(bad)
		require.ErrorIs(t, err, ErrNotRegular, bad)
		require.ErrorContains(t, err, bad)
		at, err := CheckDir(dir, []string{good, bad})
		require.ErrorIs(t, err, ErrNotRegular, bad)
		require.Equal(t, bad, at)
	}
	for _, ok := range []string{good, link} {
		data, err := ReadFile(ok)
		require.NoError(t, err)
		require.Equal(t, "{}", string(data))
	}
}

// TestCheckDirCapsTheSum: files each under MaxBytes are refused together
// past MaxDirBytes (sparse files: nothing is written or read).
func TestCheckDirCapsTheSum(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var paths []string
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("r%d.json", i))
		f, err := os.Create(p)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(MaxBytes))
		require.NoError(t, f.Close())
		paths = append(paths, p)
	}
	_, err := CheckDir(dir, paths[:2])
	require.NoError(t, err, "control: two at the cap are 64 MiB, the limit")
	at, err := CheckDir(dir, paths)
	require.ErrorIs(t, err, ErrTooLarge)
	require.Equal(t, dir, at)
	require.ErrorContains(t, err, "3 documents of 100663296 bytes together, limit 67108864 bytes")
}

type inner struct {
	N   int      `json:"n"`
	Opt *float64 `json:"opt"`
}

type outer struct {
	Name  string  `json:"name"`
	Items []inner `json:"items"`
	Note  string  `json:"note,omitempty"`
}

func TestRequireFields(t *testing.T) {
	t.Parallel()
	ty := reflect.TypeFor[outer]()
	_, err := Parse([]byte(`{"name": "x", "items": [{"n": 1}, {"opt": 2}]}`), ty)
	var je *jsontree.Error
	require.True(t, errors.As(err, &je))
	require.Equal(t, "items[1].n", je.Path)
	require.Equal(t, "missing", je.Msg)
	_, err = Parse([]byte(`{"items": []}`), ty)
	require.ErrorAs(t, err, &je)
	require.Equal(t, "name", je.Path)
	_, err = Parse([]byte(`{"name": "x", "items": [{"n": 1}]}`), ty)
	require.NoError(t, err, "optional fields may be absent")
}
