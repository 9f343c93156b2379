// Package docfile holds what every receipt-like document of vetbench needs
// around its own schema: a bounded read, a nesting-depth guard that runs
// before any recursive parser sees the bytes, a check that required fields
// are present, and an atomic write that never replaces a file unless asked.
//
// Every reader of a receipt, a replay file, a token or matrix receipt goes
// through Read or ReadFile, so one size cap holds on every path.
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

// MaxBytes bounds one document read from a file or a stream: 32 MiB.
// The biggest receipt in the repository (a 200-item faces golden) is
// 506 KB, the biggest typevet receipt 138 KB; the biggest set vetbench can
// run, LFW View 2's 6,000 pairs at ~2.5 KB an item, would make ~15 MB.
// The cap is for the wrong or hostile file: one over it is refused before
// it is read, and one under it costs at most what its tree costs. The
// worst case, a file of nothing but empty objects or tiny numbers, makes
// ~35 bytes of tree a byte: ~1.2 GB and ~2 s of CPU at the cap, measured.
const MaxBytes = 32 << 20

// MaxDepth bounds JSON nesting (jsontree.MaxDepth): the deepest schema
// nests 7 levels; a hostile file of a million '[' fails in linear time.
const MaxDepth = jsontree.MaxDepth

// ErrTooLarge and ErrTooDeep name the two limits.
var (
	ErrTooLarge = errors.New("document too large")
	ErrTooDeep  = jsontree.ErrTooDeep
)

// SizeError is a document over MaxBytes. Size is the file's size, or -1
// when a stream went past the limit (it was not read further).
type SizeError struct {
	Size  int64
	Limit int64
}

func (e *SizeError) Error() string {
	size := fmt.Sprintf("%d bytes", e.Size)
	if e.Size < 0 {
		size = fmt.Sprintf("more than %d bytes", e.Limit)
	}
	return fmt.Sprintf("receipt too large: %s, limit %d bytes (%d MiB, the cap on every receipt and replay file)", size, e.Limit, e.Limit>>20)
}

func (e *SizeError) Unwrap() error { return ErrTooLarge }

// Read reads at most MaxBytes from r; one byte more is a *SizeError, and
// nothing past that byte is read.
func Read(r io.Reader) ([]byte, error) {
	size := int64(-1)
	if l, ok := r.(interface{ Len() int }); ok { // bytes.Reader, strings.Reader
		size = int64(l.Len())
	}
	return read(r, size)
}

// ReadFile reads the file at path, refusing one over MaxBytes by its size
// before reading a byte of it (a sparse 300 MB file costs nothing). A file
// that grows while it is read, or one that is not a regular file (a pipe),
// is still cut at MaxBytes+1 bytes.
func ReadFile(path string) ([]byte, error) {
	f, size, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > MaxBytes {
		return nil, &SizeError{Size: size, Limit: MaxBytes}
	}
	return read(f, size)
}

// ErrNotRegular is an input path that is not a regular file: a named
// pipe (opening it would wait for a writer forever), a device (/dev/zero
// never ends) or a directory.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading only if it is a regular file (after
// following links), and returns its size. A named pipe or a device is
// refused from its Stat, before the open that would block on a pipe; the
// opened file is checked again, so one swapped in between is refused too.
// Every input file of vetbench goes through it.
func Open(path string) (*os.File, int64, error) {
	if err := regular(path, os.Stat); err != nil {
		return nil, 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

func regular(path string, stat func(string) (fs.FileInfo, error)) error {
	fi, err := stat(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Op = "open" // what the caller asked for
		}
		return err
	}
	if !fi.Mode().IsRegular() {
		return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	return nil
}

// kind names a mode that is not a regular file's for a message: "a
// directory", else its type letters (p---------: a named pipe).
func kind(m fs.FileMode) string {
	if m.IsDir() {
		return "a directory"
	}
	return m.Type().String()
}

// MaxDirBytes bounds the documents read from one directory together (a
// sweep's receipts): 64 MiB, twice the cap on one file. The biggest sweep
// in the repository (12 goldens) is 2.4 MB; twenty receipts at the
// per-file cap would otherwise hold ~1.8 GB of trees at once.
const MaxDirBytes = 64 << 20

// CheckDir refuses a set of input files (one directory's documents) when
// one is not a regular file, one is over MaxBytes, or their sizes add up
// past MaxDirBytes, before any of them is read. It returns the file at
// fault, or dir when it is the sum.
func CheckDir(dir string, paths []string) (string, error) {
	var total int64
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return p, err
		}
		if !fi.Mode().IsRegular() {
			return p, &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("%w (%s)", ErrNotRegular, fi.Mode().Type())}
		}
		if fi.Size() > MaxBytes {
			return p, &SizeError{Size: fi.Size(), Limit: MaxBytes}
		}
		total += fi.Size()
	}
	if total > MaxDirBytes {
		return dir, &DirSizeError{Dir: dir, Files: len(paths), Size: total, Limit: MaxDirBytes}
	}
	return "", nil
}

// DirSizeError is a directory whose documents add up past MaxDirBytes.
type DirSizeError struct {
	Dir         string
	Files       int
	Size, Limit int64
}

func (e *DirSizeError) Error() string {
	return fmt.Sprintf("%d documents of %d bytes together, limit %d bytes (%d MiB, the cap on one directory's documents)", e.Files, e.Size, e.Limit, e.Limit>>20)
}

func (e *DirSizeError) Unwrap() error { return ErrTooLarge }

// read reads r to its end or to MaxBytes+1 bytes; size, when known, sizes
// the buffer so a file is read in one allocation.
func read(r io.Reader, size int64) ([]byte, error) {
	buf := make([]byte, 0, min(max(size+1, 512), MaxBytes+1))
	lr := io.LimitReader(r, MaxBytes+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(buf) > MaxBytes {
		return nil, &SizeError{Size: -1, Limit: MaxBytes}
	}
	return buf, nil
}

// CheckDepth scans JSON bytes once and fails at the first bracket that
// nests deeper than MaxDepth, with its line and column. It does not
// validate syntax; the parser that runs after it does (and enforces the
// same limit itself).
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
				return jsontree.DepthError(data, int64(i))
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

// Parse parses data into a tree (under MaxDepth) and checks it against
// Go type t: exact shape (jsontree.CheckShape) and every required field
// present (RequireFields).
func Parse(data []byte, t reflect.Type) (any, error) {
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
// never read as 0). Like jsontree.CheckShape it is linear in the tree.
func RequireFields(v any, t reflect.Type, path string) error {
	r := requirer{path: jsontree.NewPath(path)}
	return r.check(v, t)
}

type requirer struct{ path jsontree.Path }

func (r *requirer) check(v any, t reflect.Type) error {
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
			if !has && optional {
				continue
			}
			r.path.Key(name)
			if !has {
				return &jsontree.Error{Path: r.path.String(), Msg: "missing"}
			}
			if err := r.check(child, f.Type); err != nil {
				return err
			}
			r.path.Pop()
		}
	case reflect.Slice:
		arr, _ := v.([]any)
		for i, e := range arr {
			r.path.Index(i)
			if err := r.check(e, t.Elem()); err != nil {
				return err
			}
			r.path.Pop()
		}
	case reflect.Map:
		if obj, ok := v.(*jsontree.Object); ok {
			for _, k := range obj.Keys {
				r.path.Key(k)
				if err := r.check(obj.Values[k], t.Elem()); err != nil {
					return err
				}
				r.path.Pop()
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
