package scrape

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var pad = bytes.Repeat([]byte("\n"), 64<<10)

// newlines is n blank lines (nothing to the exposition format), made as
// they are read.
type newlines struct{ n int64 }

func (s *newlines) Read(p []byte) (int, error) {
	if s.n <= 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(int64(len(p)), s.n)], pad)
	s.n -= int64(k)
	return k, nil
}

type countReader struct {
	r io.Reader
	n *int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

// FuzzMetricsBody answers a /metrics reading with the fuzzed page, status
// and size class (the page padded with blank lines to one under, at, one
// over or twice a cap of 64 B–16 KiB, WithMaxBytes standing for the 32 MiB
// default): Fetch must read no more than the cap + 1, refuse a page over
// it, never refuse one within it for its size, carry any failure in its
// snapshot, and never panic on what it parses. Inputs stay small:
//
//	go test ./bench/scrape -run '^$' -fuzz '^FuzzMetricsBody$' -fuzztime 60s -fuzzminimizetime 200x
func FuzzMetricsBody(f *testing.F) {
	f.Add([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n"), uint16(200), uint8(0), uint8(13))
	f.Add([]byte("vllm:prompt_tokens_total NaN\n"), uint16(200), uint8(3), uint8(14))
	f.Add([]byte("Internal Server Error"), uint16(501), uint8(0), uint8(15))
	f.Fuzz(func(t *testing.T, page []byte, status uint16, capSel, class uint8) {
		if len(page) > 4<<10 {
			t.Skip("long inputs add no shapes")
		}
		limit := int64(64 + int(capSel)*64)
		var extra int64
		switch class % 16 {
		case 12:
			extra = limit - 1
		case 13:
			extra = limit
		case 14:
			extra = limit + 1
		case 15:
			extra = 2 * limit
		}
		extra = max(extra-int64(len(page)), 0)
		size := int64(len(page)) + extra
		code := 200
		if status%4 == 1 {
			code = 400 + int(status%200)
		}
		var read int64
		hc := &http.Client{Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
			body := &countReader{io.MultiReader(bytes.NewReader(page), &newlines{n: extra}), &read}
			return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {"text/plain; version=0.0.4"}},
				Body: io.NopCloser(body), Request: r}, nil
		})}
		snap, err := Fetch(context.Background(), hc, "http://vllm.invalid/metrics", WithMaxBytes(limit))
		if read > limit+1 {
			t.Fatalf("read %d bytes of a %d-byte cap", read, limit)
		}
		if (err == nil) != (snap.Err == nil) {
			t.Fatalf("the snapshot does not carry the error: %v / %v", err, snap.Err)
		}
		over := err != nil && strings.Contains(err.Error(), "body exceeds")
		switch {
		case code == 200 && code != 401 && size > limit && !over:
			t.Fatalf("%d bytes over the %d cap: %v", size, limit, err)
		case size <= limit && over:
			t.Fatalf("%d bytes within the %d cap refused: %v", size, limit, err)
		}
	})
}
