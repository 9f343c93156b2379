package receipts

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vetbench/vetbench/receipts/internal/jsontree"
)

// SchemaError says which file and which field of a receipt is wrong.
// Path is a field path such as items[3].answers[1].probabilities.true
// ("" for the whole document). Line and Column are set for JSON syntax
// errors (1-based), zero otherwise.
type SchemaError struct {
	File   string
	Path   string
	Line   int
	Column int
	Msg    string
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

// maxReceiptBytes bounds what Read takes in, so a wrong file cannot
// exhaust memory.
const maxReceiptBytes = 256 << 20

// asSchemaError turns a jsontree error into a *SchemaError of file.
func asSchemaError(err error, file string) error {
	var je *jsontree.Error
	if errors.As(err, &je) {
		return &SchemaError{File: file, Path: je.Path, Line: je.Line, Column: je.Column, Msg: je.Msg}
	}
	return &SchemaError{File: file, Msg: err.Error()}
}

func joinKey(path, key string) string { return jsontree.JoinKey(path, key) }

func joinIndex(path string, i int) string { return jsontree.JoinIndex(path, i) }
