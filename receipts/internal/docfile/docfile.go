// Package docfile holds what every receipt-like document of vetbench needs
// around its own schema: a bounded read, a nesting-depth guard that runs
// before any recursive parser sees the bytes, a check that required fields
// are present, and an atomic write that never replaces a file unless asked.
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

	"github.com/vetbench/vetbench/receipts/internal/jsontree"
)

// MaxBytes bounds one document. Token and matrix receipts are tens of
// kilobytes; the bound is for the wrong file passed by mistake, and keeps
// the parsed tree of a hostile file of tiny values to a few hundred MB.
const MaxBytes = 16 << 20

// MaxDepth bounds JSON nesting. The deepest schema nests a handful of
// levels; a hostile file of a million '[' fails here in linear time.
const MaxDepth = 32

// ErrTooLarge and ErrTooDeep name the two limits.
var (
	ErrTooLarge = errors.New("document too large")
	ErrTooDeep  = errors.New("document nested too deeply")
)

// Read reads at most MaxBytes from r.
func Read(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrTooLarge, MaxBytes)
	}
	return data, nil
}

// CheckDepth scans JSON bytes once and fails at the first bracket that
// nests deeper than MaxDepth, with its line and column. It does not
// validate syntax; the parser that runs after it does.
func CheckDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for i, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > MaxDepth {
				line, col := jsontree.LineCol(data, int64(i))
				return &jsontree.Error{Line: line, Column: col, Msg: fmt.Sprintf("%v: more than %d levels", ErrTooDeep, MaxDepth)}
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

// Parse runs the depth guard, parses data into a tree and checks it
// against Go type t: exact shape (jsontree.CheckShape) and every required
// field present (RequireFields).
func Parse(data []byte, t reflect.Type) (any, error) {
	if err := CheckDepth(data); err != nil {
		return nil, err
	}
	tree, err := jsontree.Decode(data)
	if err != nil {
		return nil, err
	}
	if err := jsontree.CheckShape(tree, t, ""); err != nil {
		return nil, err
	}
	if err := RequireFields(tree, t, ""); err != nil {
		return nil, err
	}
	return tree, nil
}

// RequireFields reports the first struct field that the tree lacks. A
// field is optional when it is a pointer, or its JSON tag says omitempty
// or omitzero; every other field must be present (so a missing number is
// never read as 0).
func RequireFields(v any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(*jsontree.Object)
		if !ok {
			return nil // a time, or a misfit CheckShape reports
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, optional, skip := field(f)
			if skip {
				continue
			}
			child, has := obj.Get(name)
			if !has {
				if optional {
					continue
				}
				return &jsontree.Error{Path: jsontree.JoinKey(path, name), Msg: "missing"}
			}
			if err := RequireFields(child, f.Type, jsontree.JoinKey(path, name)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		arr, _ := v.([]any)
		for i, e := range arr {
			if err := RequireFields(e, t.Elem(), jsontree.JoinIndex(path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if obj, ok := v.(*jsontree.Object); ok {
			for _, k := range obj.Keys {
				if err := RequireFields(obj.Values[k], t.Elem(), jsontree.JoinKey(path, k)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func field(f reflect.StructField) (name string, optional, skip bool) {
	if !f.IsExported() {
		return "", false, true
	}
	name = f.Name
	tag, ok := f.Tag.Lookup("json")
	if ok {
		n, opts, _ := strings.Cut(tag, ",")
		if n == "-" {
			return "", false, true
		}
		if n != "" {
			name = n
		}
		for _, o := range strings.Split(opts, ",") {
			if o == "omitempty" || o == "omitzero" {
				optional = true
			}
		}
	}
	if f.Type.Kind() == reflect.Pointer {
		optional = true
	}
	return name, optional, false
}

// WriteNew writes data to path atomically and only if path does not exist
// yet: a temporary file in the same directory, fsync, then a hard link
// into place (which fails when path exists, with no window in between),
// and an fsync of the directory. The error wraps fs.ErrExist when path
// was there.
func WriteNew(path string, data []byte) error {
	return write(path, data, false)
}

// Replace writes data to path atomically, replacing what is there: for a
// caller that was asked to overwrite.
func Replace(path string, data []byte) error {
	return write(path, data, true)
}

func write(path string, data []byte, replace bool) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if !replace {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("write %s: %w (refusing to overwrite)", path, fs.ErrExist)
		}
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	defer func() {
		if tmp != nil {
			tmp.Close()
		}
		os.Remove(tmpName) // after a link or a rename this removes nothing that matters
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		tmp = nil
		return fmt.Errorf("close %s: %w", path, err)
	}
	tmp = nil
	if replace {
		if err = os.Rename(tmpName, path); err != nil {
			return fmt.Errorf("rename into %s: %w", path, err)
		}
	} else if err = os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("write %s: %w (refusing to overwrite)", path, fs.ErrExist)
		}
		return fmt.Errorf("link into %s: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		derr = d.Sync()
		d.Close()
		if derr != nil {
			return fmt.Errorf("sync directory of %s: %w", path, derr)
		}
	}
	return nil
}
