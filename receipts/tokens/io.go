package tokens

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/internal/docfile"
)

// Marshal sets the identity digest when empty, validates r and returns
// its JSON (two-space indent, trailing newline, map keys sorted).
func Marshal(r *Receipt) ([]byte, error) {
	if r == nil {
		return nil, errors.New("tokens receipt: nil")
	}
	if r.Identity.Digest == "" {
		r.Identity.Digest = r.IdentityDigest()
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode tokens receipt: %w", err)
	}
	return append(data, '\n'), nil
}

// Write validates r and writes it as JSON to w.
func Write(w io.Writer, r *Receipt) error {
	data, err := Marshal(r)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("write tokens receipt: %w", err)
	}
	return nil
}

// WriteFile writes r to path atomically and refuses (an error wrapping
// fs.ErrExist) when path exists: a run never replaces a user's results.
// A receipt that fails validation writes nothing.
func WriteFile(path string, r *Receipt) error {
	data, err := Marshal(r)
	if err != nil {
		return err
	}
	return docfile.WriteNew(path, data)
}

// ReplaceFile is WriteFile for a caller that was asked to overwrite.
func ReplaceFile(path string, r *Receipt) error {
	data, err := Marshal(r)
	if err != nil {
		return err
	}
	return docfile.Replace(path, data)
}

// Read reads and validates one receipt; name is the file name used in
// errors. Every content error is a *receipts.SchemaError naming the file
// and the field path (several joined with errors.Join).
func Read(r io.Reader, name string) (*Receipt, error) {
	data, err := docfile.Read(r)
	if err != nil {
		if errors.Is(err, docfile.ErrTooLarge) {
			return nil, &receipts.SchemaError{File: name, Msg: err.Error()}
		}
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return Decode(data, name)
}

// ReadFile reads and validates the receipt at path.
func ReadFile(path string) (*Receipt, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open tokens receipt: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}

// Decode parses and validates a receipt held in memory: exact shape (no
// unknown field, every required field present, integers where integers
// are due), then the figures against their recomputation.
func Decode(data []byte, name string) (*Receipt, error) {
	if _, err := docfile.Parse(data, reflect.TypeFor[Receipt]()); err != nil {
		return nil, receipts.AsSchemaError(err, name)
	}
	var r Receipt
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, &receipts.SchemaError{File: name, Msg: err.Error()}
	}
	if err := r.validate(name); err != nil {
		return nil, err
	}
	return &r, nil
}

// ReadBaseline reads a token-throughput baseline at path in either format:
// one vetbench.tokens/v1 receipt, or a file of the published format (one
// receipt per record, see ReadPublished).
func ReadBaseline(path string) ([]*Receipt, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open baseline: %w", err)
	}
	defer f.Close()
	data, err := docfile.Read(f)
	if err != nil {
		return nil, &receipts.SchemaError{File: path, Msg: err.Error()}
	}
	probe := struct {
		Schema  *string         `json:"schema"`
		Records json.RawMessage `json:"records"`
	}{}
	// A cheap look at the top-level keys; the real read reports errors.
	_ = json.NewDecoder(bytes.NewReader(data)).Decode(&probe)
	switch {
	case probe.Schema != nil:
		r, err := Decode(data, path)
		if err != nil {
			return nil, err
		}
		return []*Receipt{r}, nil
	case probe.Records != nil:
		return DecodePublished(data, path)
	}
	return nil, &receipts.SchemaError{File: path, Msg: fmt.Sprintf("neither a %s receipt (no \"schema\") nor the published format (no \"records\")", Schema)}
}
