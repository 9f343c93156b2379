package tokens

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vetbench/vetbench/receipts"
)

// ReceiptPrefix begins the file name of every token receipt a run writes
// (tokens_<workload>_c<N>.json): in a directory such a file must be one.
const ReceiptPrefix = "tokens_"

// ReadPath reads a baseline or candidate: a file (ReadBaseline: a receipt,
// the published format or a vllm bench serve result) or a directory of
// receipts (*.json of schema vetbench.tokens/v2, sorted by key; a v1
// receipt is refused with why, other files are left alone, a malformed
// receipt (or a tokens_*.json that is none) is an error, more than receipts.MaxDirBytes together is
// refused).
func ReadPath(path string) ([]*Receipt, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return ReadBaseline(path)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []*Receipt
	var total int64
	for _, en := range entries {
		if en.IsDir() || filepath.Ext(en.Name()) != ".json" {
			continue
		}
		file := filepath.Join(path, en.Name())
		data, err := receipts.ReadLimited(file) // regular files, under the cap
		if err != nil {
			return nil, err
		}
		if total += int64(len(data)); total > receipts.MaxDirBytes {
			return nil, fmt.Errorf("%s: receipts of more than %d bytes together (%d MiB, the cap on one directory)", path, receipts.MaxDirBytes, receipts.MaxDirBytes>>20)
		}
		var probe struct {
			Schema string `json:"schema"`
		}
		if json.Unmarshal(data, &probe) == nil && probe.Schema == SchemaV1 {
			// Never skipped in silence: ReadBaseline says why it is refused.
			return ReadBaseline(file)
		}
		if json.Unmarshal(data, &probe) != nil || probe.Schema != Schema {
			if !strings.HasPrefix(en.Name(), ReceiptPrefix) {
				continue // another document of the run (matrix.json, …)
			}
			// Named as a receipt but unreadable: never skipped in silence,
			// or its point reads as missing instead of broken.
			if json.Unmarshal(data, &probe) != nil || probe.Schema == "" {
				if _, err := Decode(data, file); err != nil {
					return nil, err // the syntax error, at its line and column
				}
			}
			return nil, fmt.Errorf("%s: named as a token receipt but its schema is %q, not %s", file, probe.Schema, Schema)
		}
		r, err := Decode(data, file)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no %s receipt in the directory", path, Schema)
	}
	slices.SortFunc(out, func(a, b *Receipt) int { return strings.Compare(a.Key().String(), b.Key().String()) })
	return out, nil
}
