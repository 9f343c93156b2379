// Package jsontree parses JSON into a generic tree that keeps object key
// order, and says where a document breaks: the field path where parsing
// stopped and its line:column. encoding/json reports neither the path of a
// syntax error nor the array index of a type error.
package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Object is a JSON object with its keys in document order.
type Object struct {
	Keys   []string
	Values map[string]any
}

// Get returns the value under key.
func (o *Object) Get(key string) (any, bool) {
	v, ok := o.Values[key]
	return v, ok
}

// Error is a problem at a field path; Line and Column (1-based) are set
// for syntax errors.
type Error struct {
	Path   string
	Line   int
	Column int
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:%d: ", e.Line, e.Column)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Decode parses data as one JSON document. Objects become *Object,
// arrays []any, numbers json.Number, then string, bool or nil. A syntax
// error, a truncated document, a duplicate key or trailing data is an
// *Error at the path where parsing stopped.
func Decode(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	w := walker{d: d, data: data}
	v, err := w.value("")
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, w.errAt("", d.InputOffset(), "trailing data after the document")
	}
	return v, nil
}

type walker struct {
	d    *json.Decoder
	data []byte
}

func (w *walker) value(path string) (any, error) {
	before := w.d.InputOffset()
	tok, err := w.d.Token()
	if err != nil {
		return nil, w.tokenErr(path, before, err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch delim {
	case '{':
		obj := &Object{Values: map[string]any{}}
		for w.d.More() {
			at := w.d.InputOffset()
			ktok, err := w.d.Token()
			if err != nil {
				return nil, w.tokenErr(path, at, err)
			}
			at = skipSep(w.data, at)
			key, ok := ktok.(string)
			if !ok {
				return nil, w.errAt(path, at, "object key is not a string")
			}
			kp := JoinKey(path, key)
			if _, dup := obj.Values[key]; dup {
				return nil, w.errAt(kp, at, "duplicate key")
			}
			v, err := w.value(kp)
			if err != nil {
				return nil, err
			}
			obj.Keys = append(obj.Keys, key)
			obj.Values[key] = v
		}
		before := w.d.InputOffset()
		if _, err := w.d.Token(); err != nil {
			return nil, w.tokenErr(path, before, err)
		}
		return obj, nil
	case '[':
		arr := []any{}
		for i := 0; w.d.More(); i++ {
			v, err := w.value(JoinIndex(path, i))
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		before := w.d.InputOffset()
		if _, err := w.d.Token(); err != nil {
			return nil, w.tokenErr(path, before, err)
		}
		return arr, nil
	}
	return nil, w.errAt(path, w.d.InputOffset(), fmt.Sprintf("unexpected %q", rune(delim)))
}

// tokenErr reports a failed Token call that started reading at offset
// before. The decoder's own SyntaxError.Offset is relative to its buffer,
// so the position reported is that of the token that failed: the first
// byte after whitespace and one separator.
func (w *walker) tokenErr(path string, before int64, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return w.errAt(path, int64(len(w.data)), "unexpected end of document (truncated?)")
	case errors.As(err, &se):
		return w.errAt(path, skipSep(w.data, before), se.Error())
	}
	return w.errAt(path, skipSep(w.data, before), err.Error())
}

// skipSep skips whitespace, at most one ':' or ',', and whitespace.
func skipSep(data []byte, off int64) int64 {
	ws := func() {
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n", data[off]) >= 0 {
			off++
		}
	}
	ws()
	if off < int64(len(data)) && (data[off] == ':' || data[off] == ',') {
		off++
		ws()
	}
	return off
}

func (w *walker) errAt(path string, offset int64, msg string) error {
	line, col := LineCol(w.data, offset)
	return &Error{Path: path, Line: line, Column: col, Msg: msg}
}

// LineCol turns a byte offset into a 1-based line and column.
func LineCol(data []byte, offset int64) (int, int) {
	offset = min(max(offset, 0), int64(len(data)))
	prefix := data[:offset]
	line := bytes.Count(prefix, []byte("\n")) + 1
	col := int(offset) - bytes.LastIndexByte(prefix, '\n')
	return line, col
}

// JoinIndex appends an array index to a path: items[3].
func JoinIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// JoinKey appends an object key to a path: a.b, or a["x y"] for keys that
// would be ambiguous.
func JoinKey(path, key string) string {
	if key == "" || strings.ContainsAny(key, ".[]\" ") {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

var timeType = reflect.TypeFor[time.Time]()

// CheckShape verifies that the tree v fits Go type t exactly as
// encoding/json would fill it, but stricter: no unknown or miscased
// fields, no null where a value is required, integers where integers are
// wanted, times in RFC 3339. The first misfit, in document order, is an
// *Error naming its path.
func CheckShape(v any, t reflect.Type, path string) error {
	bad := func(format string, args ...any) error {
		return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	if t.Kind() == reflect.Pointer {
		if v == nil {
			return nil
		}
		return CheckShape(v, t.Elem(), path)
	}
	if v == nil {
		switch t.Kind() {
		case reflect.Slice, reflect.Map:
			return nil
		}
		return bad("null where %s is required", describe(t))
	}
	if t == timeType {
		s, ok := v.(string)
		if !ok {
			return bad("want an RFC 3339 time string, got %s", KindOf(v))
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return bad("not an RFC 3339 time: %q", s)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(*Object)
		if !ok {
			return bad("want an object, got %s", KindOf(v))
		}
		fields := jsonFields(t)
		for _, key := range obj.Keys {
			f, ok := fields[key]
			if !ok {
				return &Error{Path: JoinKey(path, key), Msg: "unknown field"}
			}
			if err := CheckShape(obj.Values[key], f.Type, JoinKey(path, key)); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := v.(*Object)
		if !ok {
			return bad("want an object, got %s", KindOf(v))
		}
		for _, key := range obj.Keys {
			if err := CheckShape(obj.Values[key], t.Elem(), JoinKey(path, key)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return bad("want an array, got %s", KindOf(v))
		}
		for i, e := range arr {
			if err := CheckShape(e, t.Elem(), JoinIndex(path, i)); err != nil {
				return err
			}
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			return bad("want a string, got %s", KindOf(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return bad("want true or false, got %s", KindOf(v))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return bad("want an integer, got %s", KindOf(v))
		}
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			return bad("want an integer that fits %s, got %s", t.Kind(), n)
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return bad("want a number, got %s", KindOf(v))
		}
		if _, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
			return bad("number out of range: %s", n)
		}
	default:
		return bad("unsupported field type %s", t)
	}
	return nil
}

func describe(t reflect.Type) string {
	switch k := t.Kind(); {
	case t == timeType:
		return "a time"
	case k == reflect.Struct:
		return "an object"
	case k == reflect.String:
		return "a string"
	case k == reflect.Bool:
		return "true or false"
	case k == reflect.Float32 || k == reflect.Float64:
		return "a number"
	case k >= reflect.Int && k <= reflect.Int64:
		return "an integer"
	}
	return t.String()
}

// KindOf names what a tree value is, for error messages.
func KindOf(v any) string {
	switch v := v.(type) {
	case *Object:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "the number " + string(v)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// jsonFields maps a struct's JSON names to its fields (exported fields
// only, "-" skipped, untagged fields under their Go name).
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			n, _, _ := strings.Cut(tag, ",")
			if n == "-" {
				continue
			}
			if n != "" {
				name = n
			}
		}
		out[name] = f
	}
	return out
}
