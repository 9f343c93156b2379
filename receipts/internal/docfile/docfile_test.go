package docfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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

func TestRead(t *testing.T) {
	t.Parallel()
	_, err := Read(strings.NewReader(strings.Repeat(" ", MaxBytes+1)))
	require.ErrorIs(t, err, ErrTooLarge)
	got, err := Read(strings.NewReader("{}"))
	require.NoError(t, err)
	require.Equal(t, "{}", string(got))
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
