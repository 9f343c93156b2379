package judgments

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// spaces is n bytes of JSON whitespace, made as they are read.
type spaces struct{ n int64 }

func (s *spaces) Read(p []byte) (int, error) {
	if s.n <= 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(int64(len(p)), s.n)], blanks) // copy: no per-byte loop to instrument
	s.n -= int64(k)
	return k, nil
}

var blanks = bytes.Repeat([]byte(" "), 64<<10)

// sizeClass pads a body of n bytes to one of the sizes that matter around
// a cap: as it is (most inputs: small and fast), one under the cap, the
// cap, one over, and twice over.
func sizeClass(n int, limit int64, class uint8) int64 {
	switch class % 16 {
	case 12:
		return max(limit-1-int64(n), 0)
	case 13:
		return max(limit-int64(n), 0)
	case 14:
		return max(limit+1-int64(n), 0)
	case 15:
		return max(2*limit-int64(n), 0)
	}
	return 0
}

// answer is what the fuzz client's server sends next (a fuzz worker runs
// one input at a time).
type answer struct {
	body []byte
	pad  int64
	code int
	read int64
}

var fuzzAnswer answer

// fuzzHTTP answers with fuzzAnswer. Each input gets a client of its own
// (a client remembers its /tokenize answers).
var fuzzHTTP = sync.OnceValue(func() *http.Client {
	return &http.Client{Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
		a := &fuzzAnswer
		rd := io.MultiReader(bytes.NewReader(a.body), &spaces{n: a.pad})
		return &http.Response{StatusCode: a.code, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(&counting{rd, &a.read}), Request: r}, nil
	})}
})

// FuzzBodies answers a chat completion or a /tokenize with the fuzzed
// body, status and size class (the body padded with JSON whitespace to one
// under, at, one over or twice its kind's cap): the client must read no
// more than the cap + 1, refuse a 200 over its cap with ErrBodyTooLarge and
// never one within it for its size, keep a non-200's status with its
// message within the error cap, and never panic on what it parses. Inputs stay small
// (≤ 4 KiB before padding), so most executions are fast:
//
//	go test ./judgments -run '^$' -fuzz '^FuzzBodies$' -fuzztime 60s -fuzzminimizetime 200x
func FuzzBodies(f *testing.F) {
	f.Add([]byte(`{"choices":[{"logprobs":{"content":[{"token":"0","logprob":-0.1,"top_logprobs":[]}]}}]}`), false, uint16(200), uint8(0))
	f.Add([]byte(`{"count":1,"max_model_len":8,"tokens":[15]}`), true, uint16(200), uint8(13))
	f.Add([]byte(`{"count":1,"tokens":[15]}`), true, uint16(200), uint8(14))
	f.Add([]byte(`{"error":{"message":"`+strings.Repeat("m", 300)+`","type":"BadRequestError","code":400}}`), false, uint16(400), uint8(15))
	f.Add([]byte(`Internal Server Error`), false, uint16(500), uint8(12))
	f.Fuzz(func(t *testing.T, body []byte, tokenize bool, status uint16, class uint8) {
		if len(body) > 4<<10 {
			t.Skip("long inputs add no shapes")
		}
		code := 200
		if status%4 == 1 {
			code = 400 + int(status%200)
		}
		path := chatPath
		if tokenize {
			path = "/tokenize"
		}
		limit := BodyLimit(path, code)
		pad := sizeClass(len(body), limit, class)
		size := int64(len(body)) + pad
		fuzzAnswer = answer{body: body, pad: pad, code: code}
		c := NewClient("http://vllm.invalid", WithHTTPClient(fuzzHTTP()))
		var err error
		if tokenize {
			_, err = c.Tokenize(t.Context(), []string{"0"})
		} else {
			_, err = c.Judge(t.Context(), Spec{Questions: checksQuestions()[:1]}, Controls{"0": 1, "1": 2}, testItem())
		}
		if read := fuzzAnswer.read; read > limit+1 {
			t.Fatalf("read %d bytes of a %d-byte cap", read, limit)
		}
		var se *StatusError
		switch {
		case code != 200:
			if !errors.As(err, &se) || se.Code != code {
				t.Fatalf("status %d lost: %v", code, err)
			}
			// Whatever the body's shape, the message is clipped.
			if n := utf8.RuneCountInString(se.Message); n > MaxMessage+1 {
				t.Fatalf("message of %d characters, past the %d kept", n, MaxMessage)
			}
		case size > limit:
			if !errors.Is(err, ErrBodyTooLarge) {
				t.Fatalf("%d bytes over the %d cap: %v", size, limit, err)
			}
		case errors.Is(err, ErrBodyTooLarge):
			t.Fatalf("%d bytes within the %d cap refused", size, limit)
		}
	})
}

type counting struct {
	r io.Reader
	n *int64
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}
