package receipts

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/vetbench/vetbench/receipts/internal/docfile"
	"github.com/vetbench/vetbench/receipts/internal/jsontree"
)

// SchemaError says which file and which field of a receipt is wrong.
// Path is a field path such as items[3].answers[1].probabilities.true
// ("" for the whole document). Line and Column are set for JSON syntax
// errors and the depth limit (1-based), zero otherwise. Err, when set, is
// what the error matches with errors.Is (ErrTooLarge, ErrTooDeep).
type SchemaError struct {
	File   string
	Path   string
	Line   int
	Column int
	Msg    string
	Err    error
}

func (e *SchemaError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "%d:%d: ", e.Line, e.Column)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *SchemaError) Unwrap() error { return e.Err }

// The limits every reader of a receipt or replay file holds to (vetbench
// and typevet receipts, token and matrix receipts, the twin's replay): a
// file over MaxBytes is refused before it is read; nesting deeper than
// MaxDepth is refused at the bracket that goes deeper, before the parser
// does. The errors are *SchemaError naming the file and the limit, and
// match ErrTooLarge and ErrTooDeep.
const (
	MaxBytes = docfile.MaxBytes
	MaxDepth = docfile.MaxDepth
	// MaxDirBytes bounds one directory's documents together.
	MaxDirBytes = docfile.MaxDirBytes
)

// Errors of the two limits.
var (
	ErrTooLarge = docfile.ErrTooLarge
	ErrTooDeep  = docfile.ErrTooDeep
)

// ReadLimited reads a receipt-like file at path under MaxBytes. The
// readers below receipts (typevet, the twin's replay) use it, so the cap
// lives in one place. An error names the file: a *SchemaError for the cap,
// the open or read error otherwise.
func ReadLimited(path string) ([]byte, error) {
	data, err := docfile.ReadFile(path)
	if err != nil {
		if errors.Is(err, docfile.ErrTooLarge) {
			return nil, &SchemaError{File: path, Msg: err.Error(), Err: err}
		}
		return nil, fmt.Errorf("read receipt: %w", err) // the error names path
	}
	return data, nil
}

// ReadLimitedFrom is ReadLimited for a stream; name is the file name used
// in errors.
func ReadLimitedFrom(r io.Reader, name string) ([]byte, error) {
	data, err := docfile.Read(r)
	if err != nil {
		if errors.Is(err, docfile.ErrTooLarge) {
			return nil, &SchemaError{File: name, Msg: err.Error(), Err: err}
		}
		return nil, fmt.Errorf("read receipt %s: %w", name, err)
	}
	return data, nil
}

// AsSchemaError turns a parse error of a document's reader into a
// *SchemaError of file (with the field path, line and column when the
// parser gave them).
func AsSchemaError(err error, file string) error {
	var je *jsontree.Error
	if errors.As(err, &je) {
		return &SchemaError{File: file, Path: je.Path, Line: je.Line, Column: je.Column, Msg: je.Msg, Err: je.Err}
	}
	return &SchemaError{File: file, Msg: err.Error()}
}

func joinKey(path, key string) string { return jsontree.JoinKey(path, key) }

func joinIndex(path string, i int) string { return jsontree.JoinIndex(path, i) }
