// Package jsontree parses JSON into a generic tree that keeps object key
// order, and says where a document breaks: the field path where parsing
// stopped and its line:column. encoding/json reports neither the path of a
// syntax error nor the array index of a type error.
//
// Both the parse and the shape check are linear in the document: nesting
// is bounded by MaxDepth before any recursion goes deeper, and a field
// path is kept as a stack of steps that is rendered only for an error
// (building every path eagerly is quadratic in depth, and in key length
// times width: a 1 MB key over a wide array).
package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxDepth bounds how deeply arrays and objects may nest. The deepest
// document vetbench reads (a typevet throughput receipt) nests 7 levels;
// a hostile "[[[[…" fails at level MaxDepth+1, before the parser goes
// deeper.
const MaxDepth = 32

// ErrTooDeep is the error under a document that nests deeper than
// MaxDepth.
var ErrTooDeep = errors.New("nested too deeply")

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
// for syntax errors and for the depth limit. Err, when set, is the
// sentinel it matches (ErrTooDeep).
type Error struct {
	Path   string
	Line   int
	Column int
	Msg    string
	Err    error
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

func (e *Error) Unwrap() error { return e.Err }

// DepthError is the error of the bracket at offset that opens level
// MaxDepth+1; its line:column is where the reader stopped.
func DepthError(data []byte, offset int64) *Error {
	line, col := LineCol(data, offset)
	return &Error{Line: line, Column: col, Err: ErrTooDeep,
		Msg: fmt.Sprintf("%v: nesting deeper than %d levels (the depth limit)", ErrTooDeep, MaxDepth)}
}

// Path is a field path kept as a stack of steps under a fixed prefix,
// rendered by String only when an error needs it. The zero value is the
// empty path.
type Path struct {
	prefix string
	steps  []step
}

type step struct {
	key   string
	index int // -1 for a key step
}

// NewPath returns a path under prefix ("" for the document root).
func NewPath(prefix string) Path { return Path{prefix: prefix} }

// Key pushes an object key.
func (p *Path) Key(k string) { p.steps = append(p.steps, step{key: k, index: -1}) }

// Index pushes an array index.
func (p *Path) Index(i int) { p.steps = append(p.steps, step{index: i}) }

// Pop removes the last step.
func (p *Path) Pop() { p.steps = p.steps[:len(p.steps)-1] }

// String renders the path as JoinKey and JoinIndex would have built it,
// except that a key longer than 64 bytes is clipped (see Clip): the path
// of a hostile megabyte key stays readable.
func (p *Path) String() string {
	s := p.prefix
	for _, st := range p.steps {
		if st.index < 0 {
			s = JoinKey(s, Clip(st.key, 64))
		} else {
			s = JoinIndex(s, st.index)
		}
	}
	return s
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
// *Error naming its path under the prefix path. It is linear in the tree:
// paths are rendered only for the error. A reader that checks many
// documents of one type makes its Shape once instead.
func CheckShape(v any, t reflect.Type, path string) error {
	return NewShape(t).Check(v, path)
}

// Shape is a Go type ready for CheckShape: the JSON field tables of every
// struct type reachable from it, made once. It is read-only, so one Shape
// may check documents concurrently.
type Shape struct {
	t      reflect.Type
	fields map[reflect.Type]map[string]reflect.StructField
}

// NewShape walks t and the types it holds.
func NewShape(t reflect.Type) *Shape {
	s := &Shape{t: t, fields: map[reflect.Type]map[string]reflect.StructField{}}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(t.Elem())
		case reflect.Struct:
			if _, done := s.fields[t]; done || t == timeType {
				return
			}
			f := jsonFields(t)
			s.fields[t] = f
			for _, sf := range f {
				walk(sf.Type)
			}
		}
	}
	walk(t)
	return s
}

// Check is CheckShape of v against the shape's type.
func (s *Shape) Check(v any, path string) error {
	c := shapeChecker{path: NewPath(path), fields: s.fields}
	return c.check(v, s.t)
}

type shapeChecker struct {
	path   Path
	fields map[reflect.Type]map[string]reflect.StructField // read only
}

func (c *shapeChecker) bad(format string, args ...any) error {
	return &Error{Path: c.path.String(), Msg: fmt.Sprintf(format, args...)}
}

// check checks v against t: pointers may be null, slices and maps may
// be null, nothing else may; containers are walked, scalars compared.
func (c *shapeChecker) check(v any, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		if v == nil {
			return nil
		}
		t = t.Elem()
	}
	if v == nil {
		switch t.Kind() {
		case reflect.Slice, reflect.Map:
			return nil
		}
		return c.bad("null where %s is required", describe(t))
	}
	if t == timeType {
		return c.checkTime(v)
	}
	switch t.Kind() {
	case reflect.Struct:
		return c.checkStruct(v, t)
	case reflect.Map:
		return c.checkMap(v, t)
	case reflect.Slice:
		return c.checkSlice(v, t)
	}
	return c.checkScalar(v, t)
}

// checkTime wants an RFC 3339 string, as time.Time unmarshals.
func (c *shapeChecker) checkTime(v any) error {
	s, ok := v.(string)
	if !ok {
		return c.bad("want an RFC 3339 time string, got %s", KindOf(v))
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		return c.bad("not an RFC 3339 time: %q", Clip(s, 64))
	}
	return nil
}

// checkStruct wants an object whose every key is one of t's JSON fields
// (exactly cased: encoding/json would take a miscased one silently).
func (c *shapeChecker) checkStruct(v any, t reflect.Type) error {
	obj, ok := v.(*Object)
	if !ok {
		return c.bad("want an object, got %s", KindOf(v))
	}
	fields, ok := c.fields[t]
	if !ok {
		fields = jsonFields(t) // not reachable when the Shape was made
	}
	for _, key := range obj.Keys {
		c.path.Key(key)
		f, ok := fields[key]
		if !ok {
			return c.bad("unknown field")
		}
		if err := c.check(obj.Values[key], f.Type); err != nil {
			return err
		}
		c.path.Pop()
	}
	return nil
}

// checkMap wants an object whose every value fits t's element type.
func (c *shapeChecker) checkMap(v any, t reflect.Type) error {
	obj, ok := v.(*Object)
	if !ok {
		return c.bad("want an object, got %s", KindOf(v))
	}
	for _, key := range obj.Keys {
		c.path.Key(key)
		if err := c.check(obj.Values[key], t.Elem()); err != nil {
			return err
		}
		c.path.Pop()
	}
	return nil
}

// checkSlice wants an array whose every element fits t's element type.
func (c *shapeChecker) checkSlice(v any, t reflect.Type) error {
	arr, ok := v.([]any)
	if !ok {
		return c.bad("want an array, got %s", KindOf(v))
	}
	for i, e := range arr {
		c.path.Index(i)
		if err := c.check(e, t.Elem()); err != nil {
			return err
		}
		c.path.Pop()
	}
	return nil
}

// checkScalar wants the JSON kind of a string, bool or number type, and
// a number that fits it (an integer for an integer type).
func (c *shapeChecker) checkScalar(v any, t reflect.Type) error {
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			return c.bad("want a string, got %s", KindOf(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return c.bad("want true or false, got %s", KindOf(v))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return c.bad("want an integer, got %s", KindOf(v))
		}
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			return c.bad("want an integer that fits %s, got %s", t.Kind(), Clip(string(n), 64))
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return c.bad("want a number, got %s", KindOf(v))
		}
		if _, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
			return c.bad("number out of range: %s", Clip(string(n), 64))
		}
	default:
		return c.bad("unsupported field type %s", t)
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

// Clip returns s when it is at most n bytes, else its first n bytes (cut
// at a character boundary) and how long s was: error messages quote
// values from the file, and a file may hold a 60 MB string.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}

// ClipArgs clips, in place, every string argument of a message (a
// string kind without a String method) to n bytes, and returns args.
func ClipArgs(n int, args []any) []any {
	for i, a := range args {
		if _, ok := a.(fmt.Stringer); ok {
			continue
		}
		if v := reflect.ValueOf(a); v.Kind() == reflect.String && v.Len() > n {
			args[i] = Clip(v.String(), n)
		}
	}
	return args
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
		return "the number " + Clip(string(v), 64)
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
