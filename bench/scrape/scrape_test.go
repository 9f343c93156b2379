package scrape

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
)

// vllmContentType is what vLLM's mounted prometheus ASGI app answers.
const vllmContentType = "text/plain; version=0.0.4; charset=utf-8"

func serve(t *testing.T, status int, contentType, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFetch(t *testing.T) {
	var gotAccept, gotAuth string
	body := page(t, afterPage)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAccept, gotAuth = r.Header.Get("Accept"), r.Header.Get("Authorization")
		w.Header().Set("Content-Type", vllmContentType)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()

	s, err := Fetch(t.Context(), srv.Client(), srv.URL+"/metrics",
		WithAuthorize(func(r *http.Request) { r.Header.Set("Authorization", "Bearer k") }))
	require.NoError(t, err)
	require.NoError(t, s.Err)
	require.Equal(t, srv.URL+"/metrics", s.URL)
	require.False(t, s.At.IsZero())
	require.Contains(t, gotAccept, "text/plain;version=0.0.4")
	require.Equal(t, "Bearer k", gotAuth)
	// The counter and its creation stamp are separate families.
	require.Contains(t, s.Families, "vllm:prompt_tokens_total")
	require.Contains(t, s.Families, "vllm:prompt_tokens_created")
	require.Equal(t, "GAUGE", s.Families["vllm:prompt_tokens_created"].GetType().String())
	require.Equal(t, StatusOK, Diff(snap(t, page(t, beforePage)), s).Status)
}

func TestFetchFailures(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name  string
		url   func(t *testing.T) string
		ctx   context.Context
		opts  []Option
		want  string
		is    error
		parse bool
	}{
		{name: "HTTP 500", url: func(t *testing.T) string {
			return serve(t, 500, "text/plain", "engine dead").URL + "/metrics"
		}, want: "HTTP 500: engine dead"},
		{name: "unreachable", url: func(*testing.T) string { return closed.URL + "/metrics" }, want: "connection refused"},
		{name: "garbage text", url: func(t *testing.T) string {
			return serve(t, 200, vllmContentType, "vllm:prompt_tokens_total{engine=\"0\" 12\n<html>oops</html>\n").URL + "/metrics"
		}, want: "parse text exposition", parse: true},
		{name: "JSON instead of metrics", url: func(t *testing.T) string {
			return serve(t, 200, "application/json", `{"detail":"Not Found"}`).URL + "/metrics"
		}, want: `unsupported content type "application/json"`, is: ErrContentType},
		{name: "OpenMetrics refused", url: func(t *testing.T) string {
			return serve(t, 200, "application/openmetrics-text; version=1.0.0; charset=utf-8", "# EOF\n").URL + "/metrics"
		}, is: ErrContentType},
		{name: "body too large", url: func(t *testing.T) string {
			return serve(t, 200, vllmContentType, page(t, afterPage)).URL + "/metrics"
		}, opts: []Option{WithMaxBytes(1000)}, want: "body exceeds 1000 bytes"},
		{name: "canceled", url: func(t *testing.T) string {
			return serve(t, 200, vllmContentType, "up 1\n").URL + "/metrics"
		}, ctx: canceled, is: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			url := tt.url(t)
			s, err := Fetch(ctx, http.DefaultClient, url, tt.opts...)
			require.Error(t, err)
			require.Equal(t, err, s.Err, "the snapshot carries the failure")
			require.Nil(t, s.Families)
			require.Contains(t, err.Error(), url, "the error names where")
			if tt.want != "" {
				require.Contains(t, err.Error(), tt.want)
			}
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
			if tt.parse {
				var pe expfmt.ParseError
				require.ErrorAs(t, err, &pe)
			}
			// And Diff records it instead of figures.
			srv := Diff(snap(t, page(t, beforePage)), s)
			require.True(t, strings.HasPrefix(srv.Status, "unknown: scrape failed: after reading: scrape "+url), "status %q", srv.Status)
			require.True(t, containsSub(srv.Problems, "after reading: scrape "+url), "%q", srv.Problems)
		})
	}
}

func TestParseProtobuf(t *testing.T) {
	// The delimited-protobuf form of the same page gives the same figures.
	encode := func(text string) string {
		fams := snap(t, text).Families
		var buf bytes.Buffer
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeProtoDelim))
		for _, f := range fams {
			require.NoError(t, enc.Encode(f))
		}
		return buf.String()
	}
	ct := string(expfmt.NewFormat(expfmt.TypeProtoDelim))
	b, err := Parse(strings.NewReader(encode(page(t, beforePage))), ct)
	require.NoError(t, err)
	a, err := Parse(strings.NewReader(encode(page(t, afterPage))), ct)
	require.NoError(t, err)
	want := Diff(snap(t, page(t, beforePage)), snap(t, page(t, afterPage)))
	got := Diff(Snapshot{Families: b}, Snapshot{Families: a})
	require.Equal(t, want, got)
}

func TestParseRefusesUnknownFormat(t *testing.T) {
	_, err := Parse(strings.NewReader("up 1\n"), "")
	require.True(t, errors.Is(err, ErrContentType), "%v", err)
}

// User info and query are hidden in the snapshot and in errors, those of
// an answer and those of a server that is not there.
func TestFetchHidesSecrets(t *testing.T) {
	srv := serve(t, 500, "text/plain", "no")
	secret := func(base string) string {
		return strings.Replace(base, "http://", "http://USERSECRET:hunter2@", 1) + "/metrics?token=QUERYSECRET"
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for _, u := range []string{secret(srv.URL), secret(gone.URL)} {
		s, err := Fetch(t.Context(), srv.Client(), u)
		require.Error(t, err)
		for _, x := range []string{"USERSECRET", "hunter2", "QUERYSECRET"} {
			require.NotContains(t, err.Error(), x)
			require.NotContains(t, s.URL, x)
		}
		require.Contains(t, s.URL, "xxxxx@")
	}
}

// A server that never answers is given up on: the context's deadline, or
// the package's own bound when neither the context nor the client has one.
func TestFetchBounded(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang); srv.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := Fetch(ctx, srv.Client(), srv.URL+"/metrics")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = Fetch(t.Context(), &http.Client{Timeout: 50 * time.Millisecond}, srv.URL+"/metrics")
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "%v", err)
}

// A 401 (a proxy guarding /metrics; vLLM's --api-key leaves it public)
// says whether the key was missing or refused, never the key.
func TestFetchUnauthorized(t *testing.T) {
	srv := serve(t, http.StatusUnauthorized, "application/json", `{"error":"Unauthorized"}`)
	_, err := Fetch(t.Context(), srv.Client(), srv.URL+"/metrics")
	require.ErrorIs(t, err, judgments.ErrUnauthorized)
	require.ErrorContains(t, err, "HTTP 401: the server wants an API key (VETBENCH_API_KEY)")
	_, err = Fetch(t.Context(), srv.Client(), srv.URL+"/metrics", WithAuthorize(func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer sk-scrape-secret")
	}))
	require.ErrorContains(t, err, "HTTP 401: the key was refused")
	require.NotContains(t, err.Error(), "sk-scrape-secret")
}

// TestFetchHostileErrorBody: a /metrics error body reaches the terminal
// (a closing scrape's error is printed) and the receipt's notes: its
// terminal escapes, carriage return and bidi override are escaped, and
// the key it echoes is redacted, a short one (not masked on the wire)
// too.
func TestFetchHostileErrorBody(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"escapes", "\x1b]0;PWNED\a\x1b[2J\x1b[31mEVIL\r\x1b[Kfake ok\u202e"},
		{"echoed key", "\x1b[2J auth=Bearer sk-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, 500, "text/plain", tc.body)
			_, err := Fetch(t.Context(), srv.Client(), srv.URL+"/metrics",
				WithAuthorize(func(r *http.Request) { r.Header.Set("Authorization", "Bearer sk-1") }))
			require.ErrorContains(t, err, `\x1b[2J`, "the text is escaped, not dropped")
			for _, bad := range []string{"\x1b", "\r", "\a", "\u202e", "sk-1"} {
				require.NotContains(t, err.Error(), bad)
			}
		})
	}
}
