package stream

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"
)

func decodeAll(r io.Reader, maxBytes int) ([]Event, error) {
	d := NewDecoder(r)
	if maxBytes > 0 {
		d.SetMaxEventBytes(maxBytes)
	}
	var out []Event
	for {
		ev, err := d.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestDecoder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []Event
		err  error
	}{
		{"one", "data: a\n\n", []Event{{Data: []byte("a")}}, io.EOF},
		{"no_space", "data:a\n\n", []Event{{Data: []byte("a")}}, io.EOF},
		{"two_spaces_keep_one", "data:  a\n\n", []Event{{Data: []byte(" a")}}, io.EOF},
		{"multi_line", "data: a\ndata: b\n\n", []Event{{Data: []byte("a\nb")}}, io.EOF},
		{"empty_data_line", "data\n\n", []Event{{Data: []byte("")}}, io.EOF},
		{"comments_only", ": ping\n\n:\n\n", nil, io.EOF},
		{"comment_inside", "data: a\n: keepalive\ndata: b\n\n", []Event{{Data: []byte("a\nb")}}, io.EOF},
		{"named", "event: usage\ndata: x\n\n", []Event{{Name: "usage", Data: []byte("x")}}, io.EOF},
		{"name_resets", "event: e\ndata: x\n\ndata: y\n\n", []Event{{Name: "e", Data: []byte("x")}, {Data: []byte("y")}}, io.EOF},
		{"no_data_no_event", "event: e\nid: 3\nretry: 10\n\n", nil, io.EOF},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []Event{{Data: []byte("a")}, {Data: []byte("b")}}, io.EOF},
		{"cr", "data: a\r\rdata: b\r\r", []Event{{Data: []byte("a")}, {Data: []byte("b")}}, io.EOF},
		{"bom", "\uFEFFdata: a\n\n", []Event{{Data: []byte("a")}}, io.EOF},
		{"bom_only_first", "data: \uFEFFa\n\n", []Event{{Data: []byte("\uFEFFa")}}, io.EOF},
		{"unknown_field", "foo: bar\ndata: a\n\n", []Event{{Data: []byte("a")}}, io.EOF},
		{"truncated_line", "data: a\n\ndata: b", []Event{{Data: []byte("a")}}, ErrTruncated},
		{"truncated_event", "data: a\n\ndata: b\n", []Event{{Data: []byte("a")}}, ErrTruncated},
		{"trailing_comment_is_clean", "data: a\n\n: bye\n", []Event{{Data: []byte("a")}}, io.EOF},
		{"empty", "", nil, io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in)), iotest.DataErrReader(strings.NewReader(tc.in))} {
				got, err := decodeAll(r, 0)
				require.ErrorIs(t, err, tc.err)
				require.Equal(t, tc.want, got)
			}
		})
	}
}

func TestDecoderLimitsAnEvent(t *testing.T) {
	t.Parallel()
	_, err := decodeAll(strings.NewReader("data: "+strings.Repeat("x", 200)+"\n\n"), 64)
	require.ErrorIs(t, err, ErrEventTooLong)
	_, err = decodeAll(strings.NewReader(strings.Repeat("data: xxxxxxxxxx\n", 20)+"\n"), 64)
	require.ErrorIs(t, err, ErrEventTooLong, "many short data lines add up")
	got, err := decodeAll(strings.NewReader("data: "+strings.Repeat("x", 50)+"\n\n"), 64)
	require.ErrorIs(t, err, io.EOF, "positive control: under the limit")
	require.Len(t, got, 1)
}

func TestDecoderKeepsTheReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(boom))
	got, err := decodeAll(r, 0)
	require.ErrorIs(t, err, boom)
	require.Len(t, got, 1)
}

// stuck returns data then blocks: a '\r' at the end of what arrived must
// dispatch without waiting to learn whether '\n' follows.
type stuck struct {
	data []byte
	gate chan struct{}
}

func (s *stuck) Read(p []byte) (int, error) {
	if len(s.data) > 0 {
		n := copy(p, s.data)
		s.data = s.data[n:]
		return n, nil
	}
	<-s.gate
	return 0, io.EOF
}

func TestCarriageReturnDoesNotWaitForTheNextByte(t *testing.T) {
	t.Parallel()
	s := &stuck{data: []byte("data: a\r\r"), gate: make(chan struct{})}
	defer close(s.gate)
	d := NewDecoder(s)
	got := make(chan Event, 1)
	go func() {
		ev, err := d.Next()
		if err == nil {
			got <- ev
		}
	}()
	select {
	case ev := <-got:
		require.Equal(t, "a", string(ev.Data))
	case <-time.After(10 * time.Second):
		t.Fatal("the decoder waited for a byte after '\\r'")
	}
}

// reference is a second SSE decoder written another way (whole input, a
// regexp split), for the fuzzer to compare against.
func reference(in []byte) ([]Event, error) {
	in = bytes.TrimPrefix(in, []byte("\uFEFF"))
	// Split the whole input at "\r\n", "\r" or "\n" first.
	var lines []string
	start := 0
	for i := 0; i < len(in); i++ {
		if in[i] == '\r' || in[i] == '\n' {
			lines = append(lines, string(in[start:i]))
			if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	last := string(in[start:]) // the unterminated rest
	var out []Event
	var data []string
	name, pending, has := "", false, false
	for _, l := range lines {
		switch {
		case l == "":
			if has {
				out = append(out, Event{Name: name, Data: []byte(strings.Join(data, "\n"))})
			}
			data, name, pending, has = nil, "", false, false
			continue
		case strings.HasPrefix(l, ":"):
			continue
		}
		pending = true
		f, v, _ := strings.Cut(l, ":")
		v = strings.TrimPrefix(v, " ")
		switch f {
		case "data":
			data, has = append(data, v), true
		case "event":
			name = v
		}
	}
	if pending || last != "" {
		return out, ErrTruncated
	}
	return out, io.EOF
}

func TestReferenceAgreesOnTheTable(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"data: a\n\n", "data: a\r\n\r\n: c\ndata:b\rdata: c\r\r", "\uFEFFevent: x\ndata: 1\n\ndata: 2"} {
		want, wantErr := reference([]byte(in))
		got, err := decodeAll(strings.NewReader(in), 0)
		require.ErrorIs(t, err, wantErr)
		require.Equal(t, want, got)
	}
}
