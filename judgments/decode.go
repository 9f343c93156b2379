package judgments

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeChat fills resp from a chat completion body the way json.Unmarshal
// would, in one pass and without reflection, and says whether it could: it
// takes only bodies it is sure of — valid JSON whose keys are plain ASCII
// (json.Unmarshal also matches keys in any case: such a key is not taken),
// the fields scoring reads each given once, with the expected types, and
// their strings valid UTF-8 without surrogate escapes — and leaves every
// other body (an error, an odd one) to json.Unmarshal, whose result and
// errors stand. FuzzDecodeChat
// holds it to json.Unmarshal's result on every body it takes.
func decodeChat(data []byte, resp *chatResponse) bool {
	d := decoder{data: data}
	d.space()
	ok := d.object(0, func(key []byte) bool {
		switch string(key) {
		case "choices":
			return d.array(1, func() bool {
				resp.Choices = append(resp.Choices, chatChoice{})
				return d.choice(&resp.Choices[len(resp.Choices)-1].Logprobs)
			}, func() { resp.Choices = nil }, func() { resp.Choices = make([]chatChoice, 0, 1) })
		case "usage":
			return d.usage(resp)
		}
		return d.unknown(key, "choices", "usage")
	})
	if !ok {
		return false
	}
	d.space()
	return d.i == len(d.data)
}

// maxDecodeDepth bounds the nesting the fast path follows; deeper bodies go
// to json.Unmarshal.
const maxDecodeDepth = 64

type decoder struct {
	data []byte
	i    int
}

func (d *decoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) peek() byte {
	d.space()
	if d.i < len(d.data) {
		return d.data[d.i]
	}
	return 0
}

// null consumes a null, if one comes next.
func (d *decoder) null() bool {
	if d.peek() == 'n' && len(d.data)-d.i >= 4 && string(d.data[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// object reads an object (null: nothing happens, as json.Unmarshal does
// for a struct), calling field for each key; a key given twice fails.
func (d *decoder) object(depth int, field func(key []byte) bool) bool {
	if depth > maxDecodeDepth {
		return false
	}
	if d.null() {
		return true
	}
	if d.peek() != '{' {
		return false
	}
	d.i++
	var seen [32][]byte
	nseen := 0
	if d.peek() == '}' {
		d.i++
		return true
	}
	for {
		if d.peek() != '"' {
			return false
		}
		key, ok := d.plainString()
		if !ok {
			return false
		}
		for _, k := range seen[:nseen] {
			if bytes.Equal(k, key) {
				return false
			}
		}
		if nseen == len(seen) {
			return false // more keys than any answer holds
		}
		seen[nseen] = key
		nseen++
		if d.peek() != ':' {
			return false
		}
		d.i++
		if !field(key) {
			return false
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// array reads an array, calling start at its opening (an empty, non-nil
// slice, as json.Unmarshal makes) and elem for each element; null calls
// isNull (a slice set to nil).
func (d *decoder) array(depth int, elem func() bool, isNull, start func()) bool {
	if depth > maxDecodeDepth {
		return false
	}
	if d.null() {
		isNull()
		return true
	}
	if d.peek() != '[' {
		return false
	}
	d.i++
	start()
	if d.peek() == ']' {
		d.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return true
		default:
			return false
		}
	}
}

// unknown skips the value of a key the struct does not hold; a key that
// only differs in case from one it holds (json.Unmarshal would take it)
// fails.
func (d *decoder) unknown(key []byte, known ...string) bool {
	for _, k := range known {
		if len(key) == len(k) && asciiEqualFold(key, k) {
			return false
		}
	}
	return d.skip(1)
}

// asciiEqualFold is strings.EqualFold for ASCII (keys here are ASCII).
func asciiEqualFold(b []byte, s string) bool {
	for i := range b {
		x, y := b[i]|0x20, s[i]|0x20
		if x != y || (b[i] != s[i] && (x < 'a' || x > 'z')) {
			return false
		}
	}
	return true
}

func (d *decoder) choice(lp **chatLogprobs) bool {
	return d.object(2, func(key []byte) bool {
		if string(key) != "logprobs" {
			return d.unknown(key, "logprobs")
		}
		if d.null() {
			*lp = nil
			return true
		}
		*lp = new(chatLogprobs)
		l := *lp
		return d.object(3, func(key []byte) bool {
			if string(key) != "content" {
				return d.unknown(key, "content")
			}
			return d.array(4, func() bool {
				l.Content = append(l.Content, chatPosition{})
				pos := &l.Content[len(l.Content)-1]
				var vals []float64 // the entries' logprobs, one allocation
				return d.object(5, func(key []byte) bool {
					switch string(key) {
					case "token":
						return d.stringValue(&pos.Token)
					case "top_logprobs":
						return d.array(6, func() bool {
							pos.TopLogprobs = append(pos.TopLogprobs, TokenLogprob{})
							e := &pos.TopLogprobs[len(pos.TopLogprobs)-1]
							return d.object(7, func(key []byte) bool {
								switch string(key) {
								case "token":
									return d.stringValue(&e.Token)
								case "logprob":
									return d.floatPtr(&e.Logprob, &vals)
								}
								return d.unknown(key, "token", "logprob")
							})
						}, func() { pos.TopLogprobs = nil }, func() { pos.TopLogprobs = make([]TokenLogprob, 0, 8) })
					}
					return d.unknown(key, "token", "top_logprobs")
				})
			}, func() { l.Content = nil }, func() { l.Content = make([]chatPosition, 0, 1) })
		})
	})
}

func (d *decoder) usage(resp *chatResponse) bool {
	u := &resp.Usage
	return d.object(1, func(key []byte) bool {
		switch string(key) {
		case "prompt_tokens":
			return d.intValue(&u.PromptTokens)
		case "prompt_tokens_details":
			if d.null() {
				u.PromptTokensDetails = nil
				return true
			}
			u.PromptTokensDetails = new(chatTokenDetails)
			det := u.PromptTokensDetails
			return d.object(2, func(key []byte) bool {
				if string(key) != "cached_tokens" {
					return d.unknown(key, "cached_tokens")
				}
				if d.null() {
					det.CachedTokens = nil
					return true
				}
				n := 0
				if !d.intValue(&n) {
					return false
				}
				det.CachedTokens = &n
				return true
			})
		}
		return d.unknown(key, "prompt_tokens", "prompt_tokens_details")
	})
}

// plainString reads a string of printable ASCII without escapes; anything
// else fails (json.Unmarshal decodes escapes and replaces bad UTF-8).
func (d *decoder) plainString() ([]byte, bool) {
	if d.peek() != '"' {
		return nil, false
	}
	start := d.i + 1
	for j := start; j < len(d.data); j++ {
		switch c := d.data[j]; {
		case c == '"':
			d.i = j + 1
			return d.data[start:j], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// stringValue sets *s from a string; null leaves it as it is. Escapes are
// decoded as json.Unmarshal does, but for \u surrogates, and raw bytes
// must be valid UTF-8 (json.Unmarshal replaces bad ones): such strings
// fail.
func (d *decoder) stringValue(s *string) bool {
	if d.null() {
		return true
	}
	if v, ok := d.plainString(); ok {
		*s = string(v)
		return true
	}
	if d.peek() != '"' {
		return false
	}
	var out []byte
	for j := d.i + 1; j < len(d.data); j++ {
		c := d.data[j]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return false
			}
			d.i = j + 1
			*s = string(out)
			return true
		case c < 0x20:
			return false
		case c != '\\':
			out = append(out, c)
			continue
		}
		if j++; j >= len(d.data) {
			return false
		}
		switch e := d.data[j]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if j+4 >= len(d.data) {
				return false
			}
			r, err := strconv.ParseUint(string(d.data[j+1:j+5]), 16, 32)
			if err != nil || utf16.IsSurrogate(rune(r)) {
				return false
			}
			out = utf8.AppendRune(out, rune(r))
			j += 4
		default:
			return false
		}
	}
	return false
}

// number reads a JSON number's text.
func (d *decoder) number() ([]byte, bool) {
	d.space()
	start, j := d.i, d.i
	n := len(d.data)
	if j < n && d.data[j] == '-' {
		j++
	}
	switch {
	case j < n && d.data[j] == '0':
		j++
	case j < n && d.data[j] >= '1' && d.data[j] <= '9':
		for j < n && d.data[j] >= '0' && d.data[j] <= '9' {
			j++
		}
	default:
		return nil, false
	}
	if j < n && d.data[j] == '.' {
		j++
		if j >= n || d.data[j] < '0' || d.data[j] > '9' {
			return nil, false
		}
		for j < n && d.data[j] >= '0' && d.data[j] <= '9' {
			j++
		}
	}
	if j < n && (d.data[j] == 'e' || d.data[j] == 'E') {
		j++
		if j < n && (d.data[j] == '+' || d.data[j] == '-') {
			j++
		}
		if j >= n || d.data[j] < '0' || d.data[j] > '9' {
			return nil, false
		}
		for j < n && d.data[j] >= '0' && d.data[j] <= '9' {
			j++
		}
	}
	d.i = j
	return d.data[start:j], true
}

// floatPtr sets *p from a number, pointing into *vals (grown as needed:
// a pointer into an outgrown array stays valid), or nil from null.
func (d *decoder) floatPtr(p **float64, vals *[]float64) bool {
	if d.null() {
		*p = nil
		return true
	}
	s, ok := d.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(s), 64)
	if err != nil {
		return false // out of range: json.Unmarshal says so
	}
	if len(*vals) == cap(*vals) {
		*vals = make([]float64, 0, max(8, 2*cap(*vals)))
	}
	*vals = append(*vals, f)
	*p = &(*vals)[len(*vals)-1]
	return true
}

// intValue sets *p from an integer that fits an int; null leaves it.
func (d *decoder) intValue(p *int) bool {
	if d.null() {
		return true
	}
	s, ok := d.number()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(s), 10, strconv.IntSize)
	if err != nil {
		return false // 480.0, 1e3, too large: json.Unmarshal says what
	}
	*p = int(n)
	return true
}

// skip validates and passes over one value of any kind.
func (d *decoder) skip(depth int) bool {
	if depth > maxDecodeDepth {
		return false
	}
	switch d.peek() {
	case '{':
		d.i++
		if d.peek() == '}' {
			d.i++
			return true
		}
		for {
			if !d.skipString() {
				return false
			}
			if d.peek() != ':' {
				return false
			}
			d.i++
			if !d.skip(depth + 1) {
				return false
			}
			switch d.peek() {
			case ',':
				d.i++
			case '}':
				d.i++
				return true
			default:
				return false
			}
		}
	case '[':
		d.i++
		if d.peek() == ']' {
			d.i++
			return true
		}
		for {
			if !d.skip(depth + 1) {
				return false
			}
			switch d.peek() {
			case ',':
				d.i++
			case ']':
				d.i++
				return true
			default:
				return false
			}
		}
	case '"':
		return d.skipString()
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	_, ok := d.number()
	return ok
}

func (d *decoder) literal(s string) bool {
	if len(d.data)-d.i >= len(s) && string(d.data[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// skipString passes over a valid string, escapes included (any bytes
// >= 0x20 are allowed, as json.Unmarshal allows them).
func (d *decoder) skipString() bool {
	if d.peek() != '"' {
		return false
	}
	for j := d.i + 1; j < len(d.data); j++ {
		switch c := d.data[j]; {
		case c == '"':
			d.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			j++
			if j >= len(d.data) {
				return false
			}
			switch d.data[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(d.data) {
					return false
				}
				for _, h := range d.data[j+1 : j+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				j += 4
			default:
				return false
			}
		}
	}
	return false
}
