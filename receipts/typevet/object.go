package typevet

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/vetbench/vetbench/receipts/internal/jsontree"
)

// object reads typed fields of one JSON object and names the file and
// field path in every error.
type object struct {
	o    *jsontree.Object
	file string
	path string
}

func (o *object) at(key string) string { return jsontree.JoinKey(o.path, key) }

func (o *object) missing(key string) error {
	return fail(o.file, o.path, "missing field %q", key)
}

func (o *object) wrong(key, want string, v any) error {
	return fail(o.file, o.at(key), "want %s, got %s", want, jsontree.KindOf(v))
}

func (o *object) get(key string) (any, error) {
	v, ok := o.o.Get(key)
	if !ok {
		return nil, o.missing(key)
	}
	return v, nil
}

func (o *object) str(key string) (string, error) {
	v, err := o.get(key)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", o.wrong(key, "a string", v)
	}
	return s, nil
}

func (o *object) optStr(key string) (string, bool, error) {
	v, ok := o.o.Get(key)
	if !ok || v == nil {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, o.wrong(key, "a string", v)
	}
	return s, true, nil
}

func (o *object) boolean(key string) (bool, error) {
	v, err := o.get(key)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, o.wrong(key, "true or false", v)
	}
	return b, nil
}

func (o *object) num(key string) (float64, error) {
	v, err := o.get(key)
	if err != nil {
		return 0, err
	}
	return o.toNum(key, v)
}

func (o *object) toNum(key string, v any) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, o.wrong(key, "a number", v)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, fail(o.file, o.at(key), "number out of range: %s", n)
	}
	return f, nil
}

// optNum reads a number that may be absent or null (typevet writes None
// for figures it could not compute).
func (o *object) optNum(key string) (float64, bool, error) {
	v, ok := o.o.Get(key)
	if !ok || v == nil {
		return 0, false, nil
	}
	f, err := o.toNum(key, v)
	return f, err == nil, err
}

func (o *object) integer(key string) (int, error) {
	v, err := o.get(key)
	if err != nil {
		return 0, err
	}
	return o.toInt(key, v)
}

func (o *object) toInt(key string, v any) (int, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, o.wrong(key, "an integer", v)
	}
	i, err := strconv.Atoi(string(n))
	if err != nil {
		return 0, fail(o.file, o.at(key), "want an integer, got %s", n)
	}
	return i, nil
}

func (o *object) optInt(key string) (int, bool, error) {
	v, ok := o.o.Get(key)
	if !ok || v == nil {
		return 0, false, nil
	}
	i, err := o.toInt(key, v)
	return i, err == nil, err
}

func (o *object) obj(key string) (*object, error) {
	v, err := o.get(key)
	if err != nil {
		return nil, err
	}
	child, ok := v.(*jsontree.Object)
	if !ok {
		return nil, o.wrong(key, "an object", v)
	}
	return &object{o: child, file: o.file, path: o.at(key)}, nil
}

func (o *object) optObj(key string) (*object, bool, error) {
	v, ok := o.o.Get(key)
	if !ok || v == nil {
		return nil, false, nil
	}
	child, ok := v.(*jsontree.Object)
	if !ok {
		return nil, false, o.wrong(key, "an object", v)
	}
	return &object{o: child, file: o.file, path: o.at(key)}, true, nil
}

func (o *object) strings(key string) ([]string, error) {
	l, err := o.list(key)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(l.items))
	for i, v := range l.items {
		s, ok := v.(string)
		if !ok {
			return nil, fail(o.file, jsontree.JoinIndex(l.path, i), "want a string, got %s", jsontree.KindOf(v))
		}
		out[i] = s
	}
	return out, nil
}

// array is a JSON array with its path.
type array struct {
	items []any
	file  string
	path  string
}

func (o *object) list(key string) (*array, error) {
	v, err := o.get(key)
	if err != nil {
		return nil, err
	}
	l, ok := v.([]any)
	if !ok {
		return nil, o.wrong(key, "an array", v)
	}
	return &array{items: l, file: o.file, path: o.at(key)}, nil
}

func (a *array) obj(i int) (*object, error) {
	p := jsontree.JoinIndex(a.path, i)
	o, ok := a.items[i].(*jsontree.Object)
	if !ok {
		return nil, fail(a.file, p, "want an object, got %s", jsontree.KindOf(a.items[i]))
	}
	return &object{o: o, file: a.file, path: p}, nil
}

func (a *array) String() string { return fmt.Sprintf("%s (%d)", a.path, len(a.items)) }
