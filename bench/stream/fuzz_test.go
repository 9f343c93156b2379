package stream

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// chunked hands out at most n bytes per Read, as a transport might.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.b))
	copy(p, c.b[:k])
	c.b = c.b[k:]
	return k, nil
}

// FuzzSSE checks the decoder against a second implementation, and that
// how the bytes are split across reads changes nothing. Every event then
// goes through the chunk collector, which must not panic and must keep
// its counts sane. Seeds are in testdata/fuzz/FuzzSSE; inputs are kept
// small so the fuzzer spends its time on new shapes, not long lines:
//
//	go test ./bench/stream -run '^$' -fuzz FuzzSSE -fuzztime 60s -fuzzminimizetime 200x
func FuzzSSE(f *testing.F) {
	f.Add([]byte(sse(roleChunk(3))+sse(tokenChunk("content", "a", 3, 1, "length"))+sse(usageChunk(3, 1))+sse(done)), uint8(1))
	f.Add([]byte(": ping\r\ndata: {\"error\": \"Unauthorized\"}\r\n\r\n"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		if len(data) > 4096 {
			t.Skip("long inputs add no shapes")
		}
		want, wantErr := reference(data)
		got, err := decodeAll(bytes.NewReader(data), 1<<20)
		if !errors.Is(err, wantErr) || !sameEvents(want, got) {
			require.ErrorIs(t, err, wantErr)
			require.Equal(t, want, got)
		}
		again, err2 := decodeAll(&chunked{b: data, n: 1 + int(split%13)}, 1<<20)
		if !errors.Is(err2, wantErr) || !sameEvents(got, again) {
			require.ErrorIs(t, err2, wantErr, "splitting reads changes the end")
			require.Equal(t, got, again, "splitting reads changes the events")
		}

		res := &Result{}
		col := &collector{res: res}
		for _, ev := range got {
			_, isDone, err := col.event(t0, ev.Data)
			if isDone || err != nil {
				var se *ServerError
				if err != nil && !errors.Is(err, ErrMalformed) && !errors.As(err, &se) {
					t.Fatalf("unexpected error kind %T: %v", err, err)
				}
				break
			}
		}
		col.finish()
		for i := 1; i < len(res.Timeline); i++ {
			if res.Timeline[i].Tokens <= res.Timeline[i-1].Tokens {
				t.Fatalf("the timeline does not grow: %v", res.Timeline)
			}
		}
	})
}

// sameEvents compares without reflection: the fuzzer calls it on every
// input.
func sameEvents(a, b []Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}
