package receipts

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"

	"github.com/vetbench/vetbench/receipts/internal/jsontree"
)

// Read reads one receipt and validates it. name is the file name used in
// errors. Every error about the content is a *SchemaError (several are
// joined with errors.Join) naming the file and the field. It reads at
// most MaxBytes+1 bytes of r.
func Read(r io.Reader, name string) (*Receipt, error) {
	data, err := ReadLimitedFrom(r, name)
	if err != nil {
		return nil, err
	}
	return Decode(data, name)
}

// receiptShape is the Receipt type's field tables, made once (read only).
var receiptShape = jsontree.NewShape(reflect.TypeFor[Receipt]())

// Decode parses and validates a receipt held in memory.
func Decode(data []byte, name string) (*Receipt, error) {
	tree, err := jsontree.Decode(data)
	if err != nil {
		return nil, AsSchemaError(err, name)
	}
	if err := receiptShape.Check(tree, ""); err != nil {
		return nil, AsSchemaError(err, name)
	}
	var rc Receipt
	if err := json.Unmarshal(data, &rc); err != nil {
		// The shape check above should have caught every misfit; this is
		// the backstop.
		return nil, &SchemaError{File: name, Msg: err.Error()}
	}
	if err := rc.validate(name); err != nil {
		return nil, err
	}
	return &rc, nil
}

// ReadFile reads and validates the receipt at path. A file over MaxBytes
// is refused by its size, unread.
func ReadFile(path string) (*Receipt, error) {
	data, err := ReadLimited(path)
	if err != nil {
		return nil, err
	}
	return Decode(data, path)
}

// Marshal sets the identity digest when it is empty, validates the
// receipt and returns its JSON (two-space indent, trailing newline).
// Map keys come out sorted, so equal receipts give equal bytes.
func Marshal(r *Receipt) ([]byte, error) {
	if r == nil {
		return nil, errors.New("receipt: nil")
	}
	if r.Identity.Digest == "" {
		r.Identity.Digest = r.IdentityDigest()
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode receipt: %w", err)
	}
	return append(data, '\n'), nil
}

// Write validates r and writes it as JSON. It sets r.Identity.Digest when
// empty, so a written receipt always carries its digest.
func Write(w io.Writer, r *Receipt) error {
	data, err := Marshal(r)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("write receipt: %w", err)
	}
	return nil
}

// WriteFile writes r to path atomically: a temporary file in the same
// directory, fsync, rename, fsync of the directory. It never leaves a half
// written receipt at path, and refuses (writes nothing) a receipt that
// fails validation.
func WriteFile(path string, r *Receipt) error {
	data, err := Marshal(r)
	if err != nil {
		return err
	}
	return writeAtomic(path, data)
}

func writeAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
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
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	// The rename is durable only once the directory entry is.
	if d, derr := os.Open(dir); derr == nil {
		derr = d.Sync()
		d.Close()
		if derr != nil {
			return fmt.Errorf("sync directory of %s: %w", path, derr)
		}
	}
	return nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
