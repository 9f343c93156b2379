package stream

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/vetbench/vetbench/judgments/errclass"
)

// DefaultMaxEventBytes bounds one server-sent event. A vLLM chunk is a few
// hundred bytes (a few KiB with logprobs); the bound keeps a broken server
// from growing a line without end.
const DefaultMaxEventBytes = 4 << 20

// ErrTruncated means the stream ended inside an event: bytes arrived after
// the last blank line and no blank line closed them. The event is lost, as
// the SSE rules say, and the stream did not end cleanly.
var ErrTruncated = errors.New("stream ended inside an event")

// ErrEventTooLong means one event outgrew the decoder's limit.
var ErrEventTooLong = errclass.New("malformed", "event too long")

// Event is one server-sent event. Data joins the event's data lines with
// "\n"; Name is the event field ("" for the default "message").
type Event struct {
	Name string
	Data []byte
}

// Decoder reads server-sent events (the WHATWG EventSource rules): lines end
// in "\n", "\r\n" or "\r"; a line starting with ':' is a comment; "field:
// value" drops one space after the colon; data lines accumulate and a blank
// line dispatches them; a leading byte-order mark is dropped. It reads
// whatever the transport hands it, so an event may arrive split anywhere,
// byte by byte included.
type Decoder struct {
	r    io.Reader
	max  int
	buf  []byte
	off  int // next unread byte in buf
	line []byte

	// skipLF: the last line ended in '\r'; a '\n' right after belongs to it.
	skipLF  bool
	started bool // BOM check done

	name    []byte
	data    []byte
	hasData bool
	pending bool // a field line was read since the last dispatch
	err     error
}

// NewDecoder returns a decoder reading r with DefaultMaxEventBytes.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: r, max: DefaultMaxEventBytes, buf: make([]byte, 0, 4096)}
}

// SetMaxEventBytes changes the bound on one event (line and data).
func (d *Decoder) SetMaxEventBytes(n int) { d.max = max(n, 1) }

// Next returns the next event. At the end of the stream it returns io.EOF
// when the last event was complete, ErrTruncated when bytes of an
// unfinished event were left, or the reader's error.
func (d *Decoder) Next() (Event, error) {
	if d.err != nil {
		return Event{}, d.err
	}
	for {
		line, err := d.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && (d.pending || len(d.line) > 0) {
				err = ErrTruncated
			}
			d.err = err
			return Event{}, err
		}
		if len(line) == 0 {
			ev, ok := d.dispatch()
			if ok {
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue // comment
		}
		d.pending = true
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if d.hasData {
				d.data = append(d.data, '\n')
			}
			d.data = append(d.data, value...)
			d.hasData = true
			if len(d.data) > d.max {
				d.err = fmt.Errorf("%w: data over %d bytes", ErrEventTooLong, d.max)
				return Event{}, d.err
			}
		case "event":
			d.name = append(d.name[:0], value...)
		}
		// id and retry do not matter to a one-shot request stream;
		// unknown fields are ignored, as the rules say.
	}
}

func (d *Decoder) dispatch() (Event, bool) {
	defer func() {
		d.data, d.name, d.hasData, d.pending = d.data[:0], d.name[:0], false, false
	}()
	if !d.hasData {
		return Event{}, false
	}
	return Event{Name: string(d.name), Data: append([]byte{}, d.data...)}, true
}

// readLine returns the next line without its terminator; the slice is valid
// until the next call. It never blocks waiting for a byte that only decides
// whether a '\r' is followed by '\n': that is settled on the next read.
func (d *Decoder) readLine() ([]byte, error) {
	d.line = d.line[:0]
	for {
		if d.off < len(d.buf) {
			if !d.started {
				d.started = true
				if bytes.HasPrefix(d.buf[d.off:], []byte("\uFEFF")) {
					d.off += 3
					continue
				}
				if len(d.buf)-d.off < 3 && bytes.HasPrefix([]byte("\uFEFF"), d.buf[d.off:]) {
					// Could be a BOM split across reads: wait for more.
					d.started = false
					if err := d.fill(); err != nil {
						// Not a BOM after all: the bytes start a line.
						d.started = true
						if d.off < len(d.buf) {
							continue
						}
						return nil, err
					}
					continue
				}
			}
			if d.skipLF {
				d.skipLF = false
				if d.buf[d.off] == '\n' {
					d.off++
					continue
				}
			}
			rest := d.buf[d.off:]
			if i := bytes.IndexAny(rest, "\r\n"); i >= 0 {
				d.line = append(d.line, rest[:i]...)
				d.skipLF = rest[i] == '\r'
				d.off += i + 1
				return d.line, nil
			}
			d.line = append(d.line, rest...)
			d.off = len(d.buf)
			if len(d.line) > d.max {
				return nil, fmt.Errorf("%w: line over %d bytes", ErrEventTooLong, d.max)
			}
		}
		if err := d.fill(); err != nil {
			return nil, err
		}
	}
}

// fill reads more bytes into buf, keeping any unread ones.
func (d *Decoder) fill() error {
	n := copy(d.buf[:cap(d.buf)], d.buf[d.off:])
	d.buf, d.off = d.buf[:n], 0
	for range 100 {
		m, err := d.r.Read(d.buf[n:cap(d.buf)])
		d.buf = d.buf[:n+m]
		if m > 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}
