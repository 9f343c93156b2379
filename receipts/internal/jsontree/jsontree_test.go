package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// reference decodes data with encoding/json (numbers as json.Number), the
// behaviour Decode must match; ok is json.Valid.
func reference(data []byte) (v any, ok bool) {
	if !json.Valid(data) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// same compares a tree with encoding/json's value without reflection: the
// fuzzer calls it on every input.
func same(tree, ref any) bool {
	switch t := tree.(type) {
	case *Object:
		m, ok := ref.(map[string]any)
		if !ok || len(m) != len(t.Keys) || len(t.Values) != len(t.Keys) {
			return false
		}
		for _, k := range t.Keys {
			r, ok := m[k]
			if !ok || !same(t.Values[k], r) {
				return false
			}
		}
		return true
	case []any:
		a, ok := ref.([]any)
		if !ok || a == nil || len(a) != len(t) {
			return false
		}
		for i := range t {
			if !same(t[i], a[i]) {
				return false
			}
		}
		return true
	case json.Number:
		r, ok := ref.(json.Number)
		return ok && r == t
	case string:
		r, ok := ref.(string)
		return ok && r == t
	case bool:
		r, ok := ref.(bool)
		return ok && r == t
	case nil:
		return ref == nil
	}
	return false
}

// depthOf is the nesting depth of a value: 0 for a scalar.
func depthOf(v any) int {
	d := 0
	switch t := v.(type) {
	case map[string]any:
		for _, e := range t {
			d = max(d, depthOf(e))
		}
		return d + 1
	case []any:
		for _, e := range t {
			d = max(d, depthOf(e))
		}
		return d + 1
	}
	return 0
}

// agree checks Decode against encoding/json on one input. Decode refuses
// more than encoding/json in two ways only: a duplicate key and nesting
// deeper than MaxDepth.
func agree(t testing.TB, data []byte) {
	tree, err := Decode(data)
	ref, ok := reference(data)
	if err != nil {
		var je *Error
		if !errors.As(err, &je) {
			t.Fatalf("error %T is not an *Error: %v", err, err)
		}
		if ok && je.Msg != "duplicate key" && !errors.Is(err, ErrTooDeep) {
			t.Fatalf("encoding/json accepts %q, Decode refuses: %v", data, err)
		}
		if errors.Is(err, ErrTooDeep) && ok && depthOf(ref) <= MaxDepth {
			t.Fatalf("depth %d refused: %v", depthOf(ref), err)
		}
		return
	}
	if !ok {
		t.Fatalf("encoding/json refuses %q, Decode accepts it", data)
	}
	if !same(tree, ref) {
		t.Fatalf("%q: Decode and encoding/json disagree", data)
	}
}

func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		`{}`, `[]`, `""`, `0`, `-0`, `-0.5e+10`, `1E-2`, `true`, `false`, `null`,
		` {"a": [1, 2.5, "x", null, true, {"b": {}}], "c": []} `,
		`"\u00e9\ud83d\ude00\n\t\"\\\/\b\f\r"`, `"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`,
		"\"\xff\xfe\"", "\"caf\xc3\xa9\"", `{"":1}`, `{"a":1,"A":2}`,
		// Refused by both.
		``, ` `, `{`, `[1,]`, `{"a":1,}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`, `"\x"`,
		`"\u12"`, `"\u12zz"`, "\"a\x01\"", `{"a" 1}`, `{1:2}`, `[1 2]`, `{} {}`, `"abc`, `[`, `NaN`,
		// Refused by Decode only.
		`{"a":1,"a":2}`, strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
		// Accepted at the limit.
		strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
	} {
		agree(t, []byte(s))
	}
	for _, name := range []string{"../../golden/faces_c1.golden.json", "../../typevet/testdata/check_match_vllm_receipt.json"} {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		agree(t, data)
	}
}

// FuzzDecode checks Decode against encoding/json: the same documents
// accepted (bar duplicate keys and the depth limit), the same values.
// Seeds are in testdata/fuzz/FuzzDecode:
//
//	go test ./receipts/internal/jsontree -run '^$' -fuzz FuzzDecode -fuzztime 60s -fuzzminimizetime 200x
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"a": [1, -2.5e3, "x\u00e9", null, true, {"b": {}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			t.Skip("long inputs add no shapes")
		}
		agree(t, data)
	})
}

func TestDepthLimit(t *testing.T) {
	t.Parallel()
	const n = 100_000
	for _, tc := range []struct {
		name, open, close, path string
		col                     int
	}{
		{"arrays", "[", "]", strings.Repeat("[0]", MaxDepth), MaxDepth + 1},
		{"objects", `{"a":`, "}", strings.TrimSuffix(strings.Repeat("a.", MaxDepth), "."), 5*MaxDepth + 1},
		{"mixed", `[{"k":`, "}]", strings.Repeat("[0].k", MaxDepth/2), 6*MaxDepth/2 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(strings.Repeat(tc.open, n) + "0" + strings.Repeat(tc.close, n))
			_, err := Decode(data)
			require.ErrorIs(t, err, ErrTooDeep)
			var je *Error
			require.ErrorAs(t, err, &je)
			// The error is at the bracket that opens level MaxDepth+1: the
			// parser went no deeper, whatever n is.
			require.Equal(t, 1, je.Line)
			require.Equal(t, tc.col, je.Column)
			require.Equal(t, tc.path, je.Path)
			require.Contains(t, je.Msg, "nesting deeper than 32 levels")
		})
	}
	_, err := Decode([]byte(strings.Repeat(`{"a":`, MaxDepth) + "0" + strings.Repeat("}", MaxDepth)))
	require.NoError(t, err, "MaxDepth levels are allowed")
}

// A path is built only for an error. Built for every value, as it once
// was, a 64 KiB key over an 8,000-element array allocates 8,000 copies of
// the key (512 MB) for a 80 KB document; the allocations here are bounded
// by a small multiple of the document's size. Not parallel: it reads the
// process's allocation counter.
func TestLinearInKeyLengthTimesWidth(t *testing.T) {
	key := strings.Repeat("k", 64<<10)
	data := []byte(`{"` + key + `": [` + strings.TrimSuffix(strings.Repeat("0,", 8000), ",") + `]}`)
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	var tree any
	n := allocated(func() {
		var err error
		tree, err = Decode(data)
		require.NoError(t, err)
	})
	require.Less(t, n, uint64(16*len(data)), "Decode allocated %d bytes for %d", n, len(data))
	n = allocated(func() {
		require.NoError(t, CheckShape(tree, reflect.TypeFor[map[string][]int](), ""))
	})
	require.Less(t, n, uint64(16*len(data)), "CheckShape allocated %d bytes for %d", n, len(data))

	// The error still names the path, with the long key clipped.
	data[len(data)-3] = 'x'
	_, err := Decode(data)
	var je *Error
	require.ErrorAs(t, err, &je)
	require.Equal(t, `["`+strings.Repeat("k", 64)+`…(65536 bytes)"][7999]`, je.Path)
}

func TestErrorsNameThePath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		doc, path, msg string
		line, col      int
	}{
		{"{\n \"a\": [1, x]}", "a[1]", "invalid character 'x' looking for beginning of value", 2, 11},
		{`{"a": {"b": tru}}`, "a.b", "invalid character '}' in literal true (expecting 'e')", 1, 16},
		{`{"a": 1, "a": 2}`, "a", "duplicate key", 1, 10},
		{`{"a": [1, 2`, "a", "unexpected end of document (truncated?)", 1, 12},
		{`{"a": "x\qy"}`, "a", `invalid character 'q' in string escape code`, 1, 10},
		{`[1] 2`, "", "trailing data after the document", 1, 5},
		{`{"a" 1}`, "a", "invalid character '1' after object key", 1, 6},
	} {
		_, err := Decode([]byte(tc.doc))
		var je *Error
		require.ErrorAs(t, err, &je, tc.doc)
		require.Equal(t, tc.path, je.Path, tc.doc)
		require.Equal(t, tc.msg, je.Msg, tc.doc)
		require.Equal(t, [2]int{tc.line, tc.col}, [2]int{je.Line, je.Column}, tc.doc)
	}
}

func TestCheckShapeNamesTheMisfit(t *testing.T) {
	t.Parallel()
	type inner struct {
		N int `json:"n"`
	}
	type doc struct {
		Items []inner            `json:"items"`
		Probs map[string]float64 `json:"probs"`
	}
	for _, tc := range []struct{ doc, want string }{
		{`{"items": [{"n": 1}, {"n": 1.5}]}`, "items[1].n: want an integer that fits int, got 1.5"},
		{`{"items": [{"m": 1}]}`, "items[0].m: unknown field"},
		{`{"probs": {"a b": "x"}}`, `probs["a b"]: want a number, got a string`},
		{`{"items": null, "probs": {"a": ` + strings.Repeat("9", 400) + `}}`, "probs.a: number out of range: " + strings.Repeat("9", 64) + "…(400 bytes)"},
	} {
		tree, err := Decode([]byte(tc.doc))
		require.NoError(t, err)
		require.EqualError(t, CheckShape(tree, reflect.TypeFor[doc](), ""), tc.want)
	}
}

func TestClip(t *testing.T) {
	t.Parallel()
	require.Equal(t, "abc", Clip("abc", 3))
	require.Equal(t, "ab…(4 bytes)", Clip("abcd", 2))
	require.Equal(t, "a…(3 bytes)", Clip("aé", 2), "never cuts a character")
}

// BenchmarkDecode parses the biggest golden receipt: speed and
// allocations of the reader on a real file.
func BenchmarkDecode(b *testing.B) {
	data, err := os.ReadFile("../../golden/faces_c1.golden.json")
	require.NoError(b, err)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeEscaped parses strings the fast path leaves (escapes,
// surrogate pairs, non-ASCII text): the golden receipts hold none.
func BenchmarkDecodeEscaped(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("[")
	for i := range 2000 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"k%d":"line\none\t\"quoted\" \u00e9 \ud83d\ude00 caf\u00e9 — naïve %d"}`, i, i)
	}
	sb.WriteString("]")
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
