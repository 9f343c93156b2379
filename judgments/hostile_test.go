package judgments

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// rtFunc is an http.RoundTripper from a function.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// endless is a body that never ends, counting what is read of it.
type endless struct{ read atomic.Int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.read.Add(int64(len(p)))
	return len(p), nil
}

func (e *endless) Close() error { return nil }

// TestBodiesAreCapped: a 2 GB answer (200 or 500, chat or tokenize) ran
// the run out of memory. Each is read only to its kind's cap: a 200
// fails with ErrBodyTooLarge, an error body keeps its status. The body
// here never ends, so without the cap the test would not either.
func TestBodiesAreCapped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		path  string
		code  int
		limit int64
	}{
		{"chat 200", chatPath, 200, MaxChatBody},
		{"chat 500", chatPath, 500, MaxErrorBody},
		{"tokenize 200", "/tokenize", 200, MaxTokenizeBody},
		{"tokenize 500", "/tokenize", 500, MaxErrorBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := &endless{}
			hc := &http.Client{Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: tc.code, Body: body, Header: http.Header{}, Request: r}, nil
			})}
			c := NewClient("http://vllm.invalid", WithHTTPClient(hc))
			var err error
			if tc.path == "/tokenize" {
				_, err = c.Tokenize(t.Context(), []string{"0"})
			} else {
				_, err = c.Judge(t.Context(), Spec{Questions: checksQuestions()[:1]}, Controls{"0": 1, "1": 2}, testItem())
			}
			if tc.code == 200 {
				require.ErrorIs(t, err, ErrBodyTooLarge)
			} else {
				var se *StatusError
				require.ErrorAs(t, err, &se)
				require.Equal(t, tc.code, se.Code)
				require.LessOrEqual(t, utf8.RuneCountInString(se.Message), MaxMessage+1, "the message is clipped")
			}
			require.Less(t, body.read.Load(), tc.limit+64<<10, "read past the cap")
		})
	}
}

// TestEchoedKeyIsRedacted: a server that quotes the key back (an error
// body, a sampled token) must not put it in an error, a receipt or the
// console. The control: with another key configured, the echoed string
// comes through (the redaction is of the key, not of the text).
func TestEchoedKeyIsRedacted(t *testing.T) {
	t.Parallel()
	const key = "sk-live-7f3a9c"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		_, _ = io.WriteString(w, `{"error":{"message":"bad header `+r.Header.Get("Authorization")+`","type":"`+key+`","code":500}}`)
	}))
	t.Cleanup(srv.Close)
	judge := func(k string) error {
		_, err := NewClient(srv.URL, WithAPIKey(k)).Judge(t.Context(), Spec{Questions: checksQuestions()[:1]}, Controls{"0": 1, "1": 2}, testItem())
		return err
	}
	err := judge(key)
	require.Error(t, err)
	require.NotContains(t, err.Error(), key)
	var se *StatusError
	require.ErrorAs(t, err, &se)
	require.NotContains(t, se.Message+se.Type, key)
	require.Contains(t, se.Message, "bad header Bearer x")
	// The control: a client with another key gets the server's text (the
	// type) through; only its own key is masked.
	err = judge("other-key")
	require.ErrorAs(t, err, &se)
	require.Equal(t, key, se.Type, "control: the redaction is of the configured key")
	require.Contains(t, se.Message, "bad header Bearer xxxxxxxxx")

	require.Equal(t, "v xxxxx and Bearer xxxxx", Secret(key).Redact("v "+key+" and Bearer "+key))
	require.Equal(t, "unchanged", Secret("").Redact("unchanged"))
}

// TestMaskReaderSplitsAcrossReads: an occurrence of the key cut between
// two reads is masked whole, one byte at a time included; lengths hold.
func TestMaskReaderSplitsAcrossReads(t *testing.T) {
	t.Parallel()
	const key = `k"ey/42`
	in := `{"a":"` + key + `","b":"k\"ey/42"}` + strings.Repeat("z", 10) + key
	for _, chunk := range []int{1, 2, 3, 7, 4096} {
		m := newMaskReader(io.NopCloser(&chunked{s: in, n: chunk}), Secret(key).patterns())
		got, err := io.ReadAll(m)
		require.NoError(t, err)
		require.Len(t, got, len(in))
		require.NotContains(t, string(got), key, "chunk %d", chunk)
		require.NotContains(t, string(got), `k\"ey/42`, "chunk %d: the JSON-escaped key", chunk)
		require.True(t, strings.HasPrefix(string(got), `{"a":"xxxxxxx","b":"`), string(got))
	}
}

type chunked struct {
	s string
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[n:]
	return n, nil
}

// TestRedirectStaysInTheOrigin: net/http keeps Authorization on a
// redirect to the same host on another port; the key went to a server
// the receipt does not name. Such a redirect is refused (the other
// server never sees a request); one within the origin is followed.
func TestRedirectStaysInTheOrigin(t *testing.T) {
	t.Parallel()
	var other atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.Add(1)
		_, _ = io.WriteString(w, `{"count":1,"tokens":[7]}`)
	}))
	t.Cleanup(elsewhere.Close)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/tokenize":
			http.Redirect(w, r, elsewhere.URL+"/tokenize", http.StatusTemporaryRedirect)
		case "/moved/tokenize":
			_, _ = io.WriteString(w, `{"count":1,"tokens":[9]}`)
		}
	}))
	t.Cleanup(srv.Close)
	_, err := NewClient(srv.URL, WithAPIKey("k-0123456789")).Tokenize(t.Context(), []string{"0"})
	require.ErrorIs(t, err, ErrRedirect)
	require.ErrorContains(t, err, "another origin")
	require.Zero(t, other.Load(), "the other origin got a request")

	same := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/tokenize" {
			http.Redirect(w, r, "/moved/tokenize", http.StatusTemporaryRedirect)
			return
		}
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(same.Close)
	ids, err := NewClient(same.URL, WithAPIKey("k-0123456789")).Tokenize(t.Context(), []string{"0"})
	require.NoError(t, err, "control: a redirect within the origin is followed")
	require.Equal(t, 9, ids["0"])
	require.Equal(t, "http://127.0.0.1:80", Origin(mustURL(t, "HTTP://127.0.0.1")))
	require.NotEqual(t, Origin(mustURL(t, "http://h:8000")), Origin(mustURL(t, "http://h:8001")))
}

// TestTokenizeUsesTheControlTimeout: the first /tokenize waited the
// request timeout (40 s) where the control timeout (2 s) was set. In a
// synctest bubble the silent server's wait costs no real time.
func TestTokenizeUsesTheControlTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hc := &http.Client{Transport: rtFunc(func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		})}
		start := time.Now()
		_, err := NewClient("http://vllm.invalid", WithHTTPClient(hc), WithRequestTimeout(40*time.Second), WithControlTimeout(2*time.Second)).
			Tokenize(context.Background(), []string{"0"})
		require.True(t, errors.Is(err, context.DeadlineExceeded), err)
		require.Equal(t, 2*time.Second, time.Since(start), "the bubble's clock: the control timeout, not the request's")
	})
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}
