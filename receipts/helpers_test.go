package receipts_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/internal/receipttest"
)

// The test set and its receipt live in internal/receipttest, shared with
// the packages below receipts.
var (
	noul   = receipttest.Noul
	choice = receipttest.Choice
	sample = receipttest.Sample
)

// encode writes r with Write and returns the bytes.
func encode(t testing.TB, r *receipts.Receipt) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, receipts.Write(&b, r))
	return b.Bytes()
}

// tree turns receipt bytes into a generic map to break on purpose.
func tree(t testing.TB, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

func untree(t testing.TB, m map[string]any) []byte {
	t.Helper()
	data, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	return data
}

// at walks a generic tree by keys and indexes.
func at(m any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m = m.(map[string]any)[k]
		case int:
			m = m.([]any)[k]
		}
	}
	return m
}
