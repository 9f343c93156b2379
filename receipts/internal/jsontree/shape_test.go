package jsontree

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every kind CheckShape knows, with what fits it and each misfit's
// message: pointers and containers may be null, nothing else; times are
// RFC 3339; numbers must fit their Go type; an unsupported type is named.
func TestCheckShapeEveryKind(t *testing.T) {
	t.Parallel()
	type leaf struct {
		S string `json:"s"`
	}
	type doc struct {
		S    string            `json:"s"`
		B    bool              `json:"b"`
		I8   int8              `json:"i8"`
		U    int               `json:"u"`
		F32  float32           `json:"f32"`
		T    time.Time         `json:"t"`
		PT   *time.Time        `json:"pt"`
		P    *leaf             `json:"p"`
		L    leaf              `json:"l"`
		M    map[string]leaf   `json:"m"`
		A    []*int            `json:"a"`
		Arr  [2]int            `json:"arr"`
		Chan chan int          `json:"-"`
		Any  any               `json:"any"`
		Skip int               `json:"-"`
		Bare int               // untagged: read under its Go name
		MM   map[string][]bool `json:"mm"`
	}
	for _, tc := range []struct{ doc, want string }{
		{`{"s": "x", "b": true, "i8": -128, "u": 1, "f32": 1e38, "t": "2026-01-02T03:04:05.5Z", "pt": null, "p": null,
			"l": {"s": ""}, "m": {"k": {"s": "v"}}, "a": [1, null], "mm": {"x": [true, false]}, "Bare": 3}`, ""},
		{`{"m": null, "a": null, "mm": {"x": null}}`, ""},
		{`{"s": null}`, "s: null where a string is required"},
		{`{"b": null}`, "b: null where true or false is required"},
		{`{"u": null}`, "u: null where an integer is required"},
		{`{"f32": null}`, "f32: null where a number is required"},
		{`{"t": null}`, "t: null where a time is required"},
		{`{"l": null}`, "l: null where an object is required"},
		{`{"arr": null}`, "arr: null where [2]int is required"},
		{`{"s": 1}`, "s: want a string, got the number 1"},
		{`{"b": "true"}`, "b: want true or false, got a string"},
		{`{"i8": 128}`, "i8: want an integer that fits int8, got 128"},
		{`{"u": "1"}`, "u: want an integer, got a string"},
		{`{"f32": 1e39}`, "f32: number out of range: 1e39"},
		{`{"f32": true}`, "f32: want a number, got a boolean"},
		{`{"t": 5}`, "t: want an RFC 3339 time string, got the number 5"},
		{`{"t": "yesterday"}`, `t: not an RFC 3339 time: "yesterday"`},
		{`{"pt": "2026-01-02"}`, `pt: not an RFC 3339 time: "2026-01-02"`},
		{`{"p": []}`, "p: want an object, got an array"},
		{`{"l": {"S": "x"}}`, "l.S: unknown field"},
		{`{"m": []}`, "m: want an object, got an array"},
		{`{"m": {"k": {"t": 1}}}`, "m.k.t: unknown field"},
		{`{"a": {}}`, "a: want an array, got an object"},
		{`{"a": [1, "2"]}`, "a[1]: want an integer, got a string"},
		{`{"mm": {"x": [true, null]}}`, "mm.x[1]: null where true or false is required"},
		{`{"arr": [1, 2]}`, "arr: unsupported field type [2]int"},
		{`{"any": 1}`, "any: unsupported field type interface {}"},
		{`{"Skip": 1}`, "Skip: unknown field"},
		{`{"bare": 1}`, "bare: unknown field"},
		{`[]`, "want an object, got an array"},
	} {
		tree, err := Decode([]byte(strings.ReplaceAll(tc.doc, "\n", " ")))
		require.NoError(t, err, tc.doc)
		err = CheckShape(tree, reflect.TypeFor[doc](), "")
		if tc.want == "" {
			require.NoError(t, err, tc.doc)
			continue
		}
		require.EqualError(t, err, tc.want, tc.doc)
	}
	tree, err := Decode([]byte(`{"l": {"s": 1}}`))
	require.NoError(t, err)
	require.EqualError(t, CheckShape(tree, reflect.TypeFor[doc](), "items[3]"), "items[3].l.s: want a string, got the number 1", "under a prefix")
}
