package tokens

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/internal/docfile"
)

// codec is the file handling every receipt-like document shares
// (receipts.Codec): validate, atomic write, bounded exact-shape read.
var codec = receipts.Codec[Receipt]{
	Name: "tokens receipt",
	Prepare: func(r *Receipt) {
		if r.Identity.Digest == "" {
			r.Identity.Digest = r.IdentityDigest()
		}
	},
	Validate: (*Receipt).validate,
}

// Marshal sets the identity digest when empty, validates r and returns
// its JSON (two-space indent, trailing newline, map keys sorted).
func Marshal(r *Receipt) ([]byte, error) { return codec.Marshal(r) }

// Write validates r and writes it as JSON to w.
func Write(w io.Writer, r *Receipt) error { return codec.Write(w, r) }

// WriteFile writes r to path atomically and refuses (an error wrapping
// fs.ErrExist) when path exists: a run never replaces a user's results.
// One that fails validation writes nothing.
func WriteFile(path string, r *Receipt) error { return codec.WriteFile(path, r) }

// ReplaceFile is WriteFile for a caller that was asked to overwrite.
func ReplaceFile(path string, r *Receipt) error { return codec.ReplaceFile(path, r) }

// Read reads and validates one tokens receipt; name is the file name used in
// errors, which are *receipts.SchemaError naming the file and the field
// path (several joined with errors.Join).
func Read(r io.Reader, name string) (*Receipt, error) { return codec.Read(r, name) }

// ReadFile reads and validates the tokens receipt at path.
func ReadFile(path string) (*Receipt, error) { return codec.ReadFile(path) }

// Decode parses and validates a tokens receipt held in memory: exact shape (no
// unknown field, every required field present, integers where integers
// are due), then the figures against their recomputation.
func Decode(data []byte, name string) (*Receipt, error) { return codec.Decode(data, name) }

// ReadBaseline reads a token-throughput baseline at path in either format:
// one vetbench.tokens/v1 receipt, or a file of the published format (one
// receipt per record, see ReadPublished).
func ReadBaseline(path string) ([]*Receipt, error) {
	f, _, err := docfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open baseline: %w", err)
	}
	defer f.Close()
	data, err := docfile.Read(f)
	if err != nil {
		return nil, &receipts.SchemaError{File: path, Msg: err.Error()}
	}
	probe := struct {
		Schema     *string         `json:"schema"`
		Records    json.RawMessage `json:"records"`
		NumPrompts json.RawMessage `json:"num_prompts"`
		Duration   json.RawMessage `json:"duration"`
	}{}
	// A cheap look at the top-level keys (of the first line, for a
	// --append-result file); the real read reports errors.
	_ = json.NewDecoder(bytes.NewReader(data)).Decode(&probe)
	switch {
	case probe.Schema != nil && *probe.Schema == SchemaV1:
		return nil, &receipts.SchemaError{File: path, Msg: fmt.Sprintf("a %s receipt: its mean_tpot_ms, tpot_ms and itl_ms follow other definitions than vllm bench serve's and it lacks the per-chunk record %s needs; re-measure the baseline", SchemaV1, Schema)}
	case probe.Schema != nil:
		r, err := Decode(data, path)
		if err != nil {
			return nil, err
		}
		return []*Receipt{r}, nil
	case probe.Records != nil:
		return DecodePublished(data, path)
	case probe.NumPrompts != nil && probe.Duration != nil:
		return DecodeServeResult(data, path)
	}
	return nil, &receipts.SchemaError{File: path, Msg: fmt.Sprintf("neither a %s receipt (no \"schema\"), the published format (no \"records\") nor a vllm bench serve --save-result file (no \"num_prompts\" and \"duration\")", Schema)}
}

// WriteServeResult writes the receipts as `vllm bench serve --save-result
// --save-detailed` files do (ServeResult), one JSON object per line as
// --append-result does (a single point is a plain result file), to path
// atomically, refusing an existing file.
func WriteServeResult(path string, recs []*Receipt) error {
	var buf bytes.Buffer
	for _, r := range recs {
		m, err := ServeResult(r)
		if err != nil {
			return err
		}
		line, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("save-result %s: %w", r.Key(), err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return docfile.WriteNew(path, buf.Bytes())
}
