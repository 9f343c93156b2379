package jsontree

import (
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Decode parses data as one JSON document. Objects become *Object,
// arrays []any, numbers json.Number, then string, bool or nil. A syntax
// error, a truncated document, a duplicate key, trailing data or nesting
// deeper than MaxDepth is an *Error at the path where parsing stopped,
// with the line and column of the byte that stopped it.
//
// It accepts exactly what encoding/json accepts (RFC 8259; invalid UTF-8
// and lone surrogates in strings become U+FFFD, as encoding/json makes
// them), in one pass, allocating each array and key list once at its
// final size.
func Decode(data []byte) (any, error) {
	p := parser{data: data}
	p.ws()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.pos < len(data) {
		return nil, p.errAt(p.pos, "trailing data after the document")
	}
	return v, nil
}

type parser struct {
	data  []byte
	pos   int
	path  Path
	depth int      // containers open around the value being read
	elems []any    // scratch stack of the open arrays' elements
	keys  []string // scratch stack of the open objects' keys
	// small holds the numbers of one or two bytes, boxed once: a file of
	// nothing but tiny numbers, the costliest tree a byte, then costs one
	// slot per number, not a slot and a box.
	small map[string]any
}

func (p *parser) errAt(off int, msg string) error {
	line, col := LineCol(p.data, int64(off))
	return &Error{Path: p.path.String(), Line: line, Column: col, Msg: msg}
}

// syntax reports the byte at pos as encoding/json words it, or the end of
// the document.
func (p *parser) syntax(context string) error {
	if p.pos >= len(p.data) {
		return p.errAt(len(p.data), "unexpected end of document (truncated?)")
	}
	return p.errAt(p.pos, "invalid character "+quoteChar(p.data[p.pos])+" "+context)
}

func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

func (p *parser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value parses the value at pos (whitespace already skipped).
func (p *parser) value() (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.syntax("")
	}
	switch c := p.data[p.pos]; {
	case c == '{' || c == '[':
		if p.depth == MaxDepth {
			e := DepthError(p.data, int64(p.pos))
			e.Path = p.path.String()
			return nil, e
		}
		p.depth++
		var v any
		var err error
		if c == '{' {
			v, err = p.object()
		} else {
			v, err = p.array()
		}
		p.depth--
		return v, err
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, p.syntax("looking for beginning of value")
}

func (p *parser) literal(lit string) error {
	for i := range len(lit) {
		if p.pos >= len(p.data) || p.data[p.pos] != lit[i] {
			if i == 0 {
				return p.syntax("looking for beginning of value")
			}
			return p.syntax("in literal " + lit + " (expecting " + quoteChar(lit[i]) + ")")
		}
		p.pos++
	}
	return nil
}

// object parses an object. Keys and values go on the scratch stacks and
// the object is made at its end, its map at its final size; duplicates
// are found by a scan while the object is small, by a map past that.
func (p *parser) object() (any, error) {
	p.pos++ // '{'
	kbase, vbase := len(p.keys), len(p.elems)
	var seen map[string]struct{}
	fail := func(err error) (any, error) {
		p.dropScratch(kbase, vbase)
		return nil, err
	}
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return &Object{}, nil
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return fail(p.syntax("looking for beginning of object key string"))
		}
		at := p.pos
		key, err := p.str()
		if err != nil {
			return fail(err)
		}
		p.path.Key(key)
		if duplicate(p.keys[kbase:], key, &seen) {
			return fail(p.errAt(at, "duplicate key"))
		}
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return fail(p.syntax("after object key"))
		}
		p.pos++
		p.ws()
		v, err := p.value()
		if err != nil {
			return fail(err)
		}
		p.path.Pop()
		p.keys = append(p.keys, key)
		p.elems = append(p.elems, v)
		p.ws()
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			p.ws()
			continue
		}
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			return p.makeObject(kbase, vbase), nil
		}
		return fail(p.syntax("after object key:value pair"))
	}
}

// duplicate says key is among keys (the object's so far): a scan while
// they are few, a map (*seen, made on first need and kept up to date
// from then on) past 16, so a wide object stays linear.
func duplicate(keys []string, key string, seen *map[string]struct{}) bool {
	if *seen == nil && len(keys) < 16 {
		for _, k := range keys {
			if k == key {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]struct{}, 2*len(keys))
		for _, k := range keys {
			(*seen)[k] = struct{}{}
		}
	}
	_, dup := (*seen)[key]
	(*seen)[key] = struct{}{}
	return dup
}

// makeObject makes the object whose keys and values are on the scratch
// stacks above kbase and vbase, and pops them.
func (p *parser) makeObject(kbase, vbase int) *Object {
	keys := p.keys[kbase:]
	obj := &Object{Keys: append([]string(nil), keys...), Values: make(map[string]any, len(keys))}
	for i, k := range keys {
		obj.Values[k] = p.elems[vbase+i]
	}
	p.dropScratch(kbase, vbase)
	return obj
}

// dropScratch pops the scratch stacks to kbase and vbase, clearing the
// values: the scratch must not keep the tree alive.
func (p *parser) dropScratch(kbase, vbase int) {
	p.keys = p.keys[:kbase]
	clear(p.elems[vbase:])
	p.elems = p.elems[:vbase]
}

func (p *parser) array() (any, error) {
	p.pos++ // '['
	base := len(p.elems)
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return []any{}, nil
	}
	for i := 0; ; i++ {
		p.path.Index(i)
		v, err := p.value()
		if err != nil {
			clear(p.elems[base:])
			p.elems = p.elems[:base]
			return nil, err
		}
		p.path.Pop()
		p.elems = append(p.elems, v)
		p.ws()
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			p.ws()
			continue
		}
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			arr := append([]any(nil), p.elems[base:]...)
			clear(p.elems[base:]) // the scratch must not keep the tree alive
			p.elems = p.elems[:base]
			return arr, nil
		}
		clear(p.elems[base:])
		p.elems = p.elems[:base]
		return nil, p.syntax("after array element")
	}
}

// number reads RFC 8259's number grammar and keeps its text.
func (p *parser) number() (any, error) {
	start := p.pos
	digits := func() bool {
		n := p.pos
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
		}
		return p.pos > n
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == '0':
		p.pos++
	case p.pos < len(p.data) && p.data[p.pos] >= '1' && p.data[p.pos] <= '9':
		digits()
	default:
		return nil, p.syntax("in numeric literal")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if !digits() {
			return nil, p.syntax("after decimal point in numeric literal")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if !digits() {
			return nil, p.syntax("in exponent of numeric literal")
		}
	}
	text := p.data[start:p.pos]
	if len(text) > 2 {
		return json.Number(text), nil
	}
	if v, ok := p.small[string(text)]; ok {
		return v, nil
	}
	if p.small == nil {
		p.small = map[string]any{}
	}
	var v any = json.Number(text)
	p.small[string(text)] = v
	return v, nil
}

// str reads a string at pos (at its '"') and unquotes it as
// encoding/json does.
func (p *parser) str() (string, error) {
	p.pos++ // '"'
	start := p.pos
	// Fast path: plain ASCII, no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := string(p.data[start:p.pos])
			p.pos++
			return s, nil
		}
		if c == '\\' || c < ' ' || c >= utf8.RuneSelf {
			break
		}
		p.pos++
	}
	b := make([]byte, p.pos-start, p.pos-start+16)
	copy(b, p.data[start:p.pos])
	return p.strSlow(b)
}

// strSlow reads the rest of a string that holds an escape, a control
// byte or a non-ASCII byte, appending its text to b.
func (p *parser) strSlow(b []byte) (string, error) {
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(b), nil
		case c < ' ':
			return "", p.syntax("in string literal")
		case c == '\\':
			p.pos++
			var err error
			if b, err = p.escape(b); err != nil {
				return "", err
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			b = utf8.AppendRune(b, r) // invalid bytes become U+FFFD
			p.pos += size
		}
	}
	return "", p.syntax("")
}

// escape appends what the escape at pos (just past its backslash) stands
// for, and moves past it.
func (p *parser) escape(b []byte) ([]byte, error) {
	if p.pos >= len(p.data) {
		return b, p.syntax("")
	}
	switch e := p.data[p.pos]; e {
	case '"', '\\', '/':
		b = append(b, e)
	case 'b':
		b = append(b, '\b')
	case 'f':
		b = append(b, '\f')
	case 'n':
		b = append(b, '\n')
	case 'r':
		b = append(b, '\r')
	case 't':
		b = append(b, '\t')
	case 'u':
		p.pos++
		return p.unicodeEscape(b)
	default:
		return b, p.syntax("in string escape code")
	}
	p.pos++
	return b, nil
}

// unicodeEscape appends the rune of a \u escape (pos at its hex digits):
// a surrogate pair makes one rune; a lone surrogate leaves U+FFFD and what
// follows it is read on its own, as encoding/json does.
func (p *parser) unicodeEscape(b []byte) ([]byte, error) {
	r, err := p.hex4()
	if err != nil {
		return b, err
	}
	if !utf16.IsSurrogate(r) {
		return utf8.AppendRune(b, r), nil
	}
	if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
		save := p.pos
		p.pos += 2
		r2, err := p.hex4()
		if err != nil {
			return b, err
		}
		if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
			return utf8.AppendRune(b, dec), nil
		}
		p.pos = save
	}
	return utf8.AppendRune(b, unicode.ReplacementChar), nil
}

// hex4 reads the four hex digits of a \u escape.
func (p *parser) hex4() (rune, error) {
	var r rune
	for range 4 {
		if p.pos >= len(p.data) {
			return 0, p.syntax("")
		}
		c := p.data[p.pos]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, p.syntax("in \\u hexadecimal character escape")
		}
		r = r<<4 | rune(c)
		p.pos++
	}
	return r, nil
}
