package matrix

import (
	"io"

	"github.com/vetbench/vetbench/receipts"
)

// codec is the file handling every receipt-like document shares
// (receipts.Codec): validate, atomic write, bounded exact-shape read.
var codec = receipts.Codec[Matrix]{
	Name: "matrix",
	Prepare: func(m *Matrix) {
		if m.Identity.Digest == "" {
			m.Identity.Digest = m.IdentityDigest()
		}
	},
	Validate: (*Matrix).validate,
}

// Marshal sets the identity digest when empty, validates m and returns
// its JSON (two-space indent, trailing newline, map keys sorted).
func Marshal(m *Matrix) ([]byte, error) { return codec.Marshal(m) }

// Write validates m and writes it as JSON to w.
func Write(w io.Writer, m *Matrix) error { return codec.Write(w, m) }

// WriteFile writes m to path atomically and refuses (an error wrapping
// fs.ErrExist) when path exists: a run never replaces a user's results.
// One that fails validation writes nothing.
func WriteFile(path string, m *Matrix) error { return codec.WriteFile(path, m) }

// ReplaceFile is WriteFile for a caller that was asked to overwrite.
func ReplaceFile(path string, m *Matrix) error { return codec.ReplaceFile(path, m) }

// Read reads and validates one matrix; name is the file name used in
// errors, which are *receipts.SchemaError naming the file and the field
// path (several joined with errors.Join).
func Read(r io.Reader, name string) (*Matrix, error) { return codec.Read(r, name) }

// ReadFile reads and validates the matrix at path.
func ReadFile(path string) (*Matrix, error) { return codec.ReadFile(path) }

// Decode parses and validates a matrix held in memory: exact shape (no
// unknown field, every required field present, integers where integers
// are due), then the figures against their recomputation.
func Decode(data []byte, name string) (*Matrix, error) { return codec.Decode(data, name) }
