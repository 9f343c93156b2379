package receipts_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	r := sample(t)
	data := encode(t, r)
	require.NotEmpty(t, r.Identity.Digest, "Write sets the identity digest")
	got, err := receipts.Read(bytes.NewReader(data), "r.json")
	require.NoError(t, err)
	require.Equal(t, r, got)

	path := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, receipts.WriteFile(path, r))
	got, err = receipts.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, r, got)
	// Equal receipts give equal bytes (sorted map keys).
	require.Equal(t, data, encode(t, got))
}

func TestWriteFileRefusesInvalidAndLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	good := sample(t)
	require.NoError(t, receipts.WriteFile(path, good))
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	bad := sample(t)
	bad.Pins.Concurrency = 0
	err = receipts.WriteFile(path, bad)
	var se *receipts.SchemaError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "pins.concurrency", se.Path)

	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after, "a refused receipt leaves the old file untouched")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")

	err = receipts.WriteFile(filepath.Join(dir, "missing", "r.json"), good)
	require.Error(t, err)
}

// broken is one way to break a receipt and where the error must point.
type broken struct {
	name   string
	break_ func(t *testing.T, data []byte) []byte
	path   string
	msg    string
	line   bool // a syntax error carries line:column
}

func viaTree(f func(m map[string]any)) func(t *testing.T, data []byte) []byte {
	return func(t *testing.T, data []byte) []byte {
		m := tree(t, data)
		f(m)
		return untree(t, m)
	}
}

// textAt puts raw text in place of the value at path: a syntax error
// exactly there.
func textAt(raw string, path ...any) func(t *testing.T, data []byte) []byte {
	return func(t *testing.T, data []byte) []byte {
		m := tree(t, data)
		parent := at(m, path[:len(path)-1]...)
		switch k := path[len(path)-1].(type) {
		case string:
			parent.(map[string]any)[k] = "@@HERE@@"
		case int:
			parent.([]any)[k] = "@@HERE@@"
		}
		return bytes.Replace(untree(t, m), []byte(`"@@HERE@@"`), []byte(raw), 1)
	}
}

func TestReadNamesFileAndField(t *testing.T) {
	t.Parallel()
	cases := []broken{
		// sad: JSON syntax
		{"bad literal", textAt("tru", "items", 3, "answers", 1, "probabilities", "b"), "items[3].answers[1].probabilities.b", "invalid character", true},
		{"truncated", func(t *testing.T, data []byte) []byte { return data[:len(data)*2/3] }, "items[", "unexpected end", true},
		{"trailing garbage", func(t *testing.T, data []byte) []byte { return append(data, []byte("{}")...) }, "", "trailing data", true},
		{"duplicate key", func(t *testing.T, data []byte) []byte {
			return bytes.Replace(data, []byte(`"set": "toy"`), []byte(`"set": "toy", "set": "other"`), 1)
		}, "set", "duplicate key", true},
		// sad: types
		{"string for number", viaTree(func(m map[string]any) { at(m, "items", 2).(map[string]any)["latency_seconds"] = "fast" }), "items[2].latency_seconds", "want a number", false},
		{"fraction for integer", viaTree(func(m map[string]any) { at(m, "pins").(map[string]any)["concurrency"] = 1.5 }), "pins.concurrency", "want an integer", false},
		{"unknown field", viaTree(func(m map[string]any) { at(m, "items", 0, "answers", 0).(map[string]any)["bogus"] = 1 }), "items[0].answers[0].bogus", "unknown field", false},
		{"null label", viaTree(func(m map[string]any) { at(m, "items", 1, "answers", 2).(map[string]any)["label"] = nil }), "items[1].answers[2].label", "null", false},
		// sad: semantics
		{"schema", viaTree(func(m map[string]any) { m["schema"] = "vetbench.receipt/v0" }), "schema", "is not", false},
		{"source", viaTree(func(m map[string]any) { m["source"] = "pytorch" }), "source", "unknown source", false},
		{"empty set", viaTree(func(m map[string]any) { m["set"] = "" }), "set", "empty", false},
		{"concurrency", viaTree(func(m map[string]any) {
			at(m, "pins").(map[string]any)["concurrency"] = 0
			at(m, "throughput").(map[string]any)["concurrency"] = 0
		}), "pins.concurrency", "below 1", false},
		{"gold not a label", viaTree(func(m map[string]any) {
			at(m, "items", 2).(map[string]any)["gold"] = map[string]any{"verdict": []any{"nonexistent"}}
		}), "items[2].gold.verdict", `"nonexistent" is not one of the labels [a b c]`, false},
		{"duplicate item", viaTree(func(m map[string]any) { at(m, "items", 1).(map[string]any)["id"] = "i0" }), "items[1].id", "duplicate item id", false},
		{"probability above 1", viaTree(func(m map[string]any) { at(m, "items", 3, "answers", 1, "probabilities").(map[string]any)["b"] = 1.5 }), "items[3].answers[1].probabilities.b", "not a probability", false},
		{"sum not 1", viaTree(func(m map[string]any) {
			p := at(m, "items", 0, "answers", 0, "probabilities").(map[string]any)
			p["false"] = p["false"].(float64) + 0.001
			delete(at(m, "items", 0, "answers", 0).(map[string]any), "logprobs")
		}), "items[0].answers[0].probabilities", "sum to", false},
		{"label not argmax", viaTree(func(m map[string]any) { at(m, "items", 0, "answers", 1).(map[string]any)["label"] = "b" }), "items[0].answers[1].label", "not the argmax", false},
		{"labels disagree", viaTree(func(m map[string]any) {
			a := at(m, "items", 0, "answers", 1).(map[string]any)
			a["labels"] = append(a["labels"].([]any), "d")
		}), "items[0].answers[1].probabilities", `no entry for label "d"`, false},
		{"noul labels", viaTree(func(m map[string]any) {
			at(m, "items", 2, "answers", 0).(map[string]any)["labels"] = []any{"true", "false"}
		}), "items[2].answers[0].labels", "a noul has labels", false},
		{"negative latency", viaTree(func(m map[string]any) { at(m, "items", 0).(map[string]any)["latency_seconds"] = -0.5 }), "items[0].latency_seconds", "finite number >= 0", false},
		{"stopped inconsistent", viaTree(func(m map[string]any) {
			m["stopped"] = map[string]any{"index": 2, "item": "i2", "reason": "error", "message": "boom", "discarded": 2}
			at(m, "throughput").(map[string]any)["discarded"] = 2
		}), "stopped.discarded", "marked discarded", false},
		{"edited identity", viaTree(func(m map[string]any) { at(m, "pins").(map[string]any)["model"] = "google/gemma-4-31B-it-FP8" }), "identity.digest", "was edited", false},
		{"value disagrees", viaTree(func(m map[string]any) { at(m, "items", 1, "answers", 2).(map[string]any)["value"] = 3.5 }), "items[1].answers[2].value", "expected level", false},
		{"credentials in endpoint", viaTree(func(m map[string]any) { at(m, "target").(map[string]any)["endpoint"] = "http://user:secret@host:8000" }), "target.endpoint", "credentials", false},
	}
	good := encode(t, sample(t))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			data := c.break_(t, bytes.Clone(good))
			_, err := receipts.Read(bytes.NewReader(data), "broken.json")
			require.Error(t, err)
			var se *receipts.SchemaError
			require.ErrorAs(t, err, &se)
			require.Equal(t, "broken.json", se.File)
			if strings.HasSuffix(c.path, "[") {
				require.True(t, strings.HasPrefix(se.Path, c.path), "path %q", se.Path)
			} else {
				require.Equal(t, c.path, se.Path, "error: %v", err)
			}
			require.Contains(t, err.Error(), c.msg)
			require.Contains(t, err.Error(), "broken.json")
			if c.line {
				require.Positive(t, se.Line)
				require.Positive(t, se.Column)
			}
		})
	}
}

func TestValidateNonFinite(t *testing.T) {
	t.Parallel()
	r := sample(t)
	r.Items[0].Answers[1].Probabilities["a"] = math.NaN()
	err := r.Validate()
	var se *receipts.SchemaError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "items[0].answers[1].probabilities.a", se.Path)
	// Write refuses it, so no NaN reaches a file.
	require.Error(t, receipts.Write(&bytes.Buffer{}, r))
}

func TestReadFileMissing(t *testing.T) {
	t.Parallel()
	_, err := receipts.ReadFile(filepath.Join(t.TempDir(), "nope.json"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestSyntaxErrorLineColumn(t *testing.T) {
	t.Parallel()
	data := []byte("{\n  \"schema\": \"vetbench.receipt/v1\",\n  \"set\": x\n}")
	_, err := receipts.Read(bytes.NewReader(data), "f.json")
	var se *receipts.SchemaError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "set", se.Path)
	require.Equal(t, 3, se.Line)
	require.Equal(t, 10, se.Column)
	require.True(t, strings.HasPrefix(err.Error(), "f.json:3:10: set: "), err.Error())
}

// FuzzRead feeds arbitrary bytes to Read: it must refuse with a
// *SchemaError or read a receipt that writes, reads back and writes the
// same bytes. Seeds are small receipts in testdata/fuzz/FuzzRead (a
// minimal valid one, a stopped one, broken ones); the body does no
// reflection-based comparison, so the fuzzer spends its time on inputs:
//
//	go test ./receipts -run '^$' -fuzz '^FuzzRead$' -fuzztime 60s -fuzzminimizetime 200x
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"schema":"vetbench.receipt/v1","items":[{"answers":[{}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 8<<10 {
			t.Skip("long inputs add no shapes")
		}
		r, err := receipts.Read(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			var se *receipts.SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("error is not a SchemaError: %v", err)
			}
			return
		}
		// Whatever reads back must write, read back and write the same.
		first, err := receipts.Marshal(r)
		if err != nil {
			t.Fatalf("read a receipt that does not write: %v", err)
		}
		again, err := receipts.Read(bytes.NewReader(first), "again.json")
		if err != nil {
			t.Fatalf("written receipt does not read back: %v", err)
		}
		second, err := receipts.Marshal(again)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("write, read, write changed the receipt (%v):\n%s\n%s", err, first, second)
		}
	})
}
