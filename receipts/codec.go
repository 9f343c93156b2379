package receipts

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/vetbench/vetbench/receipts/internal/docfile"
)

// Codec is the file handling a receipt-like document of its own schema
// (a token receipt, a speed matrix) shares with every other: validate
// before writing, write atomically and never over a file unless asked,
// read at most docfile.MaxBytes, parse to the exact shape of T (no unknown
// field, every required one present), then validate the figures. Errors
// about the content are *SchemaError naming the file and the field.
type Codec[T any] struct {
	// Name is the document's name in errors ("tokens receipt").
	Name string
	// Prepare runs before a document is marshalled (e.g. to set its
	// identity digest when empty); nil does nothing.
	Prepare func(*T)
	// Validate reports what makes a document unusable; file names it in
	// the errors ("" when it has no file yet).
	Validate func(v *T, file string) error
}

// Marshal prepares and validates v and returns its JSON (two-space
// indent, trailing newline, map keys sorted).
func (c Codec[T]) Marshal(v *T) ([]byte, error) {
	if v == nil {
		return nil, fmt.Errorf("%s: nil", c.Name)
	}
	if c.Prepare != nil {
		c.Prepare(v)
	}
	if err := c.Validate(v, ""); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", c.Name, err)
	}
	return append(data, '\n'), nil
}

// Write validates v and writes it as JSON to w.
func (c Codec[T]) Write(w io.Writer, v *T) error {
	data, err := c.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", c.Name, err)
	}
	return nil
}

// WriteFile writes v to path atomically and refuses (an error wrapping
// fs.ErrExist) when path exists: a run never replaces a user's results. A
// document that fails validation writes nothing.
func (c Codec[T]) WriteFile(path string, v *T) error {
	data, err := c.Marshal(v)
	if err != nil {
		return err
	}
	return docfile.WriteNew(path, data)
}

// ReplaceFile is WriteFile for a caller that was asked to overwrite.
func (c Codec[T]) ReplaceFile(path string, v *T) error {
	data, err := c.Marshal(v)
	if err != nil {
		return err
	}
	return docfile.Replace(path, data)
}

// Read reads and validates one document; name is the file name in errors.
func (c Codec[T]) Read(r io.Reader, name string) (*T, error) {
	data, err := docfile.Read(r)
	if err != nil {
		if errors.Is(err, docfile.ErrTooLarge) {
			return nil, &SchemaError{File: name, Msg: err.Error(), Err: err}
		}
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return c.Decode(data, name)
}

// ReadFile reads and validates the document at path.
func (c Codec[T]) ReadFile(path string) (*T, error) {
	f, _, err := docfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", c.Name, err)
	}
	defer f.Close()
	return c.Read(f, path)
}

// Decode parses and validates a document held in memory.
func (c Codec[T]) Decode(data []byte, name string) (*T, error) {
	if _, err := docfile.Parse(data, reflect.TypeFor[T]()); err != nil {
		return nil, AsSchemaError(err, name)
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		// The shape check should have caught every misfit; the backstop.
		return nil, &SchemaError{File: name, Msg: err.Error()}
	}
	if err := c.Validate(&v, name); err != nil {
		return nil, err
	}
	return &v, nil
}
