package judgments

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"

	openai "github.com/sashabaranov/go-openai"
)

// The scoring request's bytes, assembled from parts encoded once.
//
// A body is json.Marshal(BuildRequest(...)) byte for byte: the test
// TestCapturedWireBodies holds it to that. What differs is the work: the
// image data URLs (nearly all of a body) are base64-encoded and
// JSON-quoted once per image for the life of the client, a question's field
// block once per question, an item's state once per item, and the rest of
// the body — model, controls, flags — once per (images, controls) shape
// from a template that json.Marshal itself wrote. A request then only lists
// which parts to send; nothing is copied until the transport writes them.

// sentinel marks, in a template body, where an image URL or the text goes:
// json.Marshal writes it unescaped, and it appears nowhere else (checked).
const sentinel = "vetbench-wire-sentinel-"

// wire holds the client's encoded parts. Its maps only grow: they hold what
// one run asks (a set's images, questions and states), and a client lives
// for one run.
type wire struct {
	model       string
	mode        Mode
	topLogprobs int

	mu        sync.RWMutex
	images    map[imageKey][]byte  // the quoted data URL
	states    map[string][]byte    // `"` + the escaped state + `\n\n`
	fields    map[string]*field    // by question id
	templates map[string]*template // by templateKey
}

// imageKey is an image by identity: the client never copies or changes an
// item's bytes, and neither may its caller while the client lives (the
// fixtures are built once and only read).
type imageKey struct {
	data *byte
	n    int
	mime string
}

// field is a question's escaped field block and a closing quote; q is kept
// to tell another question of the same id, which is not served from here.
type field struct {
	q     Question
	bytes []byte
	ok    bool // no media marker in it: the text splits as Content expects
}

// template is a body with its images and text cut out: before[i] precedes
// image i's URL, before[n] the text, and tail follows the text.
type template struct {
	before [][]byte
	tail   []byte
}

func newWire(model string, mode Mode, topLogprobs int) *wire {
	return &wire{model: model, mode: mode, topLogprobs: topLogprobs,
		images: map[imageKey][]byte{}, states: map[string][]byte{}, fields: map[string]*field{}, templates: map[string]*template{}}
}

// body is the request body of q about it as parts, or ok false when the
// fast path does not apply (an unknown mode, a media marker in the text, a
// control without an id): the caller then marshals BuildRequest, which
// also says what is wrong.
func (w *wire) body(it Item, q Question, controls Controls) (parts [][]byte, n int, ok bool) {
	var keyBuf [96]byte
	key := strconv.AppendInt(keyBuf[:0], int64(len(it.Images)), 10)
	switch w.mode {
	case ModeTokenIDs:
		for i := range q.Options {
			id, pinned := controls[Control(i)]
			if !pinned {
				return nil, 0, false
			}
			key = strconv.AppendInt(append(key, ','), int64(id), 10)
		}
	case ModeTopLogprobs:
	default:
		return nil, 0, false
	}
	f := w.field(q)
	state, stateOK := w.state(it.State)
	if !f.ok || !stateOK {
		return nil, 0, false
	}
	tpl := w.template(key, len(it.Images), q, controls)
	if tpl == nil {
		return nil, 0, false
	}
	parts = make([][]byte, 0, 2*len(it.Images)+4)
	for i, im := range it.Images {
		u := w.image(im)
		parts = append(parts, tpl.before[i], u)
		n += len(tpl.before[i]) + len(u)
	}
	last := tpl.before[len(it.Images)]
	parts = append(parts, last, state, f.bytes, tpl.tail)
	n += len(last) + len(state) + len(f.bytes) + len(tpl.tail)
	return parts, n, true
}

func (w *wire) image(im Image) []byte {
	var k imageKey
	if len(im.Data) > 0 {
		k = imageKey{data: &im.Data[0], n: len(im.Data), mime: im.MIME}
	} else {
		k = imageKey{mime: im.MIME}
	}
	w.mu.RLock()
	u, ok := w.images[k]
	w.mu.RUnlock()
	if ok {
		return u
	}
	u = quote(im.DataURL())
	w.mu.Lock()
	w.images[k] = u
	w.mu.Unlock()
	return u
}

// state is the text block's opening: the quote, the escaped state and the
// blank line (UserText). ok is false when the state holds a media marker.
func (w *wire) state(s string) ([]byte, bool) {
	w.mu.RLock()
	b, ok := w.states[s]
	w.mu.RUnlock()
	if ok {
		return b, b != nil
	}
	if !strings.Contains(s, MediaMarker) {
		q := quote(s + "\n\n")
		b = q[:len(q)-1] // open: the field block follows
	}
	w.mu.Lock()
	w.states[s] = b
	w.mu.Unlock()
	return b, b != nil
}

func (w *wire) field(q Question) *field {
	w.mu.RLock()
	f, ok := w.fields[q.ID]
	w.mu.RUnlock()
	if ok && sameQuestion(f.q, q) {
		return f
	}
	block := q.FieldBlock()
	f = &field{q: q, ok: !strings.Contains(block, MediaMarker)}
	f.q.Options = append([]Option(nil), q.Options...)
	f.bytes = quote(block)[1:] // closed: the text ends here
	if !ok {
		w.mu.Lock()
		w.fields[q.ID] = f
		w.mu.Unlock()
	}
	return f
}

func sameQuestion(a, b Question) bool {
	if a.ID != b.ID || a.Kind != b.Kind || a.Instructions != b.Instructions || len(a.Options) != len(b.Options) {
		return false
	}
	for i := range a.Options {
		if a.Options[i] != b.Options[i] {
			return false
		}
	}
	return true
}

// template is the body of nImages images and the shape key names (the
// controls' ids), written by json.Marshal once with sentinels where the
// URLs and the text go, and cut at them. nil when the sentinels do not
// each appear once (a model name that holds one): no fast path then.
func (w *wire) template(key []byte, nImages int, q Question, controls Controls) *template {
	w.mu.RLock()
	t, ok := w.templates[string(key)]
	w.mu.RUnlock()
	if ok {
		return t
	}
	var parts []openai.ChatMessagePart
	for i := range nImages {
		parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL,
			ImageURL: &openai.ChatMessageImageURL{URL: sentinel + "image-" + strconv.Itoa(i)}})
	}
	parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: sentinel + "text"})
	req, err := chatRequest(w.model, w.mode, w.topLogprobs, q, controls, parts)
	var body []byte
	if err == nil {
		body, err = json.Marshal(req)
	}
	if err == nil {
		t = cut(body, nImages)
	}
	w.mu.Lock()
	w.templates[string(key)] = t
	w.mu.Unlock()
	return t
}

func cut(body []byte, nImages int) *template {
	t := &template{}
	rest := body
	marks := make([]string, 0, nImages+1)
	for i := range nImages {
		marks = append(marks, `"`+sentinel+"image-"+strconv.Itoa(i)+`"`)
	}
	marks = append(marks, `"`+sentinel+"text"+`"`)
	for _, m := range marks {
		if bytes.Count(body, []byte(m)) != 1 {
			return nil
		}
		i := bytes.Index(rest, []byte(m))
		if i < 0 {
			return nil // out of order
		}
		t.before = append(t.before, rest[:i])
		rest = rest[i+len(m):]
	}
	if bytes.Contains(rest, []byte(sentinel)) || bytes.Contains(t.before[0], []byte(sentinel)) {
		return nil
	}
	t.tail = rest
	return t
}

// quote is s as json.Marshal writes a string (HTML characters escaped, as
// in every body json.Marshal writes).
func quote(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// partsBody reads a body's parts in order without copying them together;
// the parts are never written to, so the transport may read them after
// RoundTrip returns, and GetBody (a retry on a reused connection) reads
// them again.
type partsBody struct {
	parts  [][]byte
	i, off int // the next byte: parts[i][off]
}

func (r *partsBody) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.i < len(r.parts) {
		k := copy(p[n:], r.parts[r.i][r.off:])
		n += k
		if r.off += k; r.off == len(r.parts[r.i]) {
			r.i, r.off = r.i+1, 0
		}
	}
	if n == 0 && r.i >= len(r.parts) {
		return 0, io.EOF
	}
	return n, nil
}

func (r *partsBody) Close() error { return nil }

// Prepare encodes, once for the life of the client, the request parts of
// every question about every item (the images' quoted data URLs, the
// states, the field blocks, the body templates), as the items' first
// requests would. A measured window then costs the client on its first
// pass what it costs on its tenth: the one-time base64 of a set's images
// (most of every body) is not timed as the server's. It sends nothing,
// and parts already encoded cost a lookup.
func (c *Client) Prepare(spec Spec, controls Controls, items []Item) {
	for _, it := range items {
		for _, q := range spec.Questions {
			c.wire.body(it, q, controls) // where the fast path does not apply, requests marshal anew
		}
	}
}

// Prepared is how many images the client holds encoded (Prepare, or the
// requests sent so far).
func (c *Client) Prepared() int {
	c.wire.mu.RLock()
	defer c.wire.mu.RUnlock()
	return len(c.wire.images)
}
