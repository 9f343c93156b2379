package matrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/internal/docfile"
)

// Marshal sets the identity digest when empty, validates m and returns its
// JSON (two-space indent, trailing newline).
func Marshal(m *Matrix) ([]byte, error) {
	if m == nil {
		return nil, errors.New("matrix: nil")
	}
	if m.Identity.Digest == "" {
		m.Identity.Digest = m.IdentityDigest()
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode matrix: %w", err)
	}
	return append(data, '\n'), nil
}

// Write validates m and writes it as JSON to w.
func Write(w io.Writer, m *Matrix) error {
	data, err := Marshal(m)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("write matrix: %w", err)
	}
	return nil
}

// WriteFile writes m as JSON to path atomically; it refuses (an error
// wrapping fs.ErrExist) when path exists, and writes nothing for a matrix
// that fails validation.
func WriteFile(path string, m *Matrix) error {
	data, err := Marshal(m)
	if err != nil {
		return err
	}
	return docfile.WriteNew(path, data)
}

// ReplaceFile is WriteFile for a caller that was asked to overwrite.
func ReplaceFile(path string, m *Matrix) error {
	data, err := Marshal(m)
	if err != nil {
		return err
	}
	return docfile.Replace(path, data)
}

// Read reads and validates a JSON matrix; name is used in errors, which
// are *receipts.SchemaError naming the file and the field path.
func Read(r io.Reader, name string) (*Matrix, error) {
	data, err := docfile.Read(r)
	if err != nil {
		if errors.Is(err, docfile.ErrTooLarge) {
			return nil, &receipts.SchemaError{File: name, Msg: err.Error()}
		}
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return Decode(data, name)
}

// ReadFile reads and validates the JSON matrix at path.
func ReadFile(path string) (*Matrix, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open matrix: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}

// Decode parses and validates a JSON matrix held in memory.
func Decode(data []byte, name string) (*Matrix, error) {
	if _, err := docfile.Parse(data, reflect.TypeFor[Matrix]()); err != nil {
		return nil, receipts.AsSchemaError(err, name)
	}
	var m Matrix
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, &receipts.SchemaError{File: name, Msg: err.Error()}
	}
	if err := m.validate(name); err != nil {
		return nil, err
	}
	return &m, nil
}
