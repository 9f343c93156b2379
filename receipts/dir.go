package receipts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
