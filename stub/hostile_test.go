package stub_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/stub"
)

// pipeListener hands out in-memory connections (net.Pipe), whose
// deadlines run on a synctest bubble's fake clock.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8000} }

// dial is a client's new connection to the listener's server.
func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

// health sends GET /health on c and reads its answer; false when the
// server had closed the connection.
func health(t *testing.T, c net.Conn, br *bufio.Reader) bool {
	t.Helper()
	if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: twin\r\n\r\n"); err != nil {
		return false
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	return true
}

// TestIdleKeepAliveConnectionsClose: a served twin closes a keep-alive
// connection that stays idle for KeepAliveTimeout, as vLLM's uvicorn does
// (timeout_keep_alive = VLLM_HTTP_TIMEOUT_KEEP_ALIVE, 5 s), and serves a
// next request that comes sooner on the same connection. On fake time.
func TestIdleKeepAliveConnectionsClose(t *testing.T) {
	for _, tc := range []struct {
		name     string
		idle     time.Duration
		answered bool
	}{
		{"next request within the keep-alive", stub.KeepAliveTimeout - time.Second, true},
		{"idle past the keep-alive", stub.KeepAliveTimeout + time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := newPipeListener()
				ctx, cancel := context.WithCancel(t.Context())
				errc := make(chan error, 1)
				go func() { errc <- stub.Serve(ctx, stub.Config{}, ln, io.Discard) }()
				c := ln.dial()
				defer c.Close()
				br := bufio.NewReader(c)
				require.True(t, health(t, c, br), "the first request is answered")
				time.Sleep(tc.idle)
				require.Equal(t, tc.answered, health(t, c, br), "a request after %v idle on the connection", tc.idle)
				cancel()
				require.NoError(t, <-errc)
			})
		})
	}
}

// TestClientsDropIdleConnectionsFirst: the measuring clients drop an idle
// connection before the twin (or vLLM, whose keep-alive the twin keeps)
// closes it, so no request is written down a connection being closed: a
// POST caught there is not retried by net/http and would fail.
func TestClientsDropIdleConnectionsFirst(t *testing.T) {
	require.Less(t, judgments.IdleConnTimeout, stub.KeepAliveTimeout)
	require.Equal(t, judgments.IdleConnTimeout, judgments.NewTransport(1).IdleConnTimeout)
}

// TestStreamOptionsWithoutStream: vLLM refuses stream_options without
// stream only when they are truthy in Python (validate_stream_options:
// `data.get("stream_options") and not data.get("stream")`): {} and null
// pass and are answered; a value that is no object fails the field's type.
func TestStreamOptionsWithoutStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{})
		for _, tc := range []struct {
			name, opts string
			status     int
			msg        string
		}{
			{"include_usage", `{"include_usage":true}`, http.StatusBadRequest, "Stream options can only be defined when `stream=True`."},
			{"empty object", `{}`, http.StatusOK, ""},
			{"null", `null`, http.StatusOK, ""},
			{"false", `false`, http.StatusBadRequest, "Input should be a valid dictionary or instance of StreamOptions"},
		} {
			for _, ep := range []struct{ path, body string }{
				{"/v1/chat/completions", fmt.Sprintf(`{"model":%q,"max_tokens":2,"stream_options":%s,"messages":[{"role":"user","content":"hi"}]}`, tw.Model(), tc.opts)},
				{"/v1/completions", fmt.Sprintf(`{"model":%q,"max_tokens":2,"stream_options":%s,"prompt":"hi"}`, tw.Model(), tc.opts)},
			} {
				code, out := tw.post(t, ep.path, ep.body)
				require.Equal(t, tc.status, code, "%s %s: %s", ep.path, tc.name, out)
				if tc.msg != "" {
					require.Contains(t, out, tc.msg, "%s %s", ep.path, tc.name)
					require.Contains(t, out, `"param":"stream_options"`, "%s %s", ep.path, tc.name)
				}
			}
		}
	})
}

// TestServeShutdownClosesWhatOutlivesTheGrace: once Serve's context ends,
// a request still in flight after ShutdownGrace — here a stream whose
// client stopped reading — has its connection closed and Serve returns
// nil (exit status 0), as its doc says; it returned "shutdown: context
// deadline exceeded" (vllmstub exit 2) and left the handler writing. On
// fake time.
func TestServeShutdownClosesWhatOutlivesTheGrace(t *testing.T) {
	for _, tc := range []struct{ name, send string }{
		{"idle connection", ""},
		{"stream whose client does not read", "POST /v1/chat/completions HTTP/1.1\r\nHost: twin\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := newPipeListener()
				ctx, cancel := context.WithCancel(t.Context())
				errc := make(chan error, 1)
				go func() { errc <- stub.Serve(ctx, stub.Config{}, ln, io.Discard) }()
				c := ln.dial()
				defer c.Close()
				if tc.send != "" {
					body := `{"max_tokens":4000,"stream":true,"ignore_eos":true,"messages":[{"role":"user","content":"Write."}]}`
					_, err := fmt.Fprintf(c, tc.send, len(body), body)
					require.NoError(t, err)
					time.Sleep(time.Second) // the stream is under way, blocked on its first write
				}
				cancel()
				require.NoError(t, <-errc, "Serve after the grace")
				_, err := io.Copy(io.Discard, c)
				require.NoError(t, err, "the server closed the connection (EOF)")
			})
		})
	}
}
