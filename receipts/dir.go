package receipts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/vetbench/vetbench/receipts/internal/docfile"
)

// ReadDir reads every *.json receipt in dir (not recursive), in name
// order. One unreadable receipt fails the whole read: a sweep with a hole
// must not pass.
func ReadDir(dir string) ([]*Receipt, error) {
	return readDirWith(dir, ReadFile)
}

// ReadDirWith is ReadDir with another reader (typevet.ReadAny reads both
// formats).
func ReadDirWith(dir string, read func(path string) (*Receipt, error)) ([]*Receipt, error) {
	return readDirWith(dir, read)
}

func readDirWith(dir string, read func(string) (*Receipt, error)) ([]*Receipt, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("read sweep %s: %w", dir, err)
	}
	if len(paths) == 0 {
		if _, serr := os.Stat(dir); serr != nil {
			return nil, fmt.Errorf("read sweep: %w", serr)
		}
		return nil, fmt.Errorf("read sweep %s: no *.json receipts", dir)
	}
	// Every file regular and all of them under the directory cap, before
	// one is read: twenty receipts at the per-file cap would hold ~1.8 GB.
	if err := CheckDir(dir, paths); err != nil {
		return nil, err
	}
	var out []*Receipt
	var errs []error
	for _, p := range paths {
		r, err := read(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// CheckDir refuses one directory's documents before any is read: one
// that is not a regular file (a named pipe, a device), or all of them
// together over MaxDirBytes. The error is a *SchemaError naming dir.
func CheckDir(dir string, paths []string) error {
	if at, err := docfile.CheckDir(dir, paths); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return err // names the file
		}
		return &SchemaError{File: at, Msg: err.Error(), Err: err}
	}
	return nil
}
