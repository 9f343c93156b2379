package stream

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// pipeTransport answers every request with a 200 event stream that serve
// writes into a pipe: in-memory, so a synctest bubble sees the client and
// the server block and moves its fake clock. The pipe closes when the
// request's context ends, as a connection would.
type pipeTransport struct {
	serve func(ctx context.Context, w io.Writer)
	read  atomic.Int64 // bytes the client read
	// limit > 0 ends the body past limit bytes: the test's own end for a
	// stream that takes no fake time.
	limit int64
	wg    sync.WaitGroup
}

func (p *pipeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	ctx := r.Context()
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		p.serve(ctx, pw)
		_ = pw.Close()
	}()
	go func() {
		defer p.wg.Done()
		<-ctx.Done()
		_ = pw.CloseWithError(ctx.Err())
	}()
	h := http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}
	return &http.Response{StatusCode: http.StatusOK, Header: h, Body: &countingBody{pr, &p.read, p.limit}, Request: r}, nil
}

type countingBody struct {
	io.ReadCloser
	n     *atomic.Int64
	limit int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.limit > 0 && b.n.Load() > b.limit {
		return 0, io.ErrUnexpectedEOF
	}
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// Hostile servers (issue 24, item 4): each streams forever without going
// quiet, so the stall timeout never fires.
var hostile = map[string]func(ctx context.Context, w io.Writer){
	// A token every 10 ms, never a finish, a usage chunk or [DONE].
	"token every 10ms forever": func(ctx context.Context, w io.Writer) {
		_, _ = io.WriteString(w, sse(roleChunk(5)))
		for i := 1; ctx.Err() == nil; i++ {
			time.Sleep(10 * time.Millisecond)
			if _, err := io.WriteString(w, sse(tokenChunk("content", "t ", 5, i, ""))); err != nil {
				return
			}
		}
	},
	// The same without usage: only the text chunks count the output.
	"token every 10ms forever, no usage": func(ctx context.Context, w io.Writer) {
		for ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
			if _, err := io.WriteString(w, sse(`{"choices":[{"index":0,"delta":{"content":"t "}}]}`)); err != nil {
				return
			}
		}
	},
	// A keep-alive comment every 100 ms and nothing else.
	"ping every 100ms forever": func(ctx context.Context, w io.Writer) {
		for ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			if _, err := io.WriteString(w, ": ping\n\n"); err != nil {
				return
			}
		}
	},
	// 4 KB content chunks as fast as they are read.
	"4KB chunks as fast as read": func(ctx context.Context, w io.Writer) {
		ev := sse(`{"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 4<<10) + `"}}]}`)
		for ctx.Err() == nil {
			if _, err := io.WriteString(w, ev); err != nil {
				return
			}
		}
	},
	// 4 KB comments as fast as they are read: no event, no token.
	"4KB comments as fast as read": func(ctx context.Context, w io.Writer) {
		c := ":" + strings.Repeat("x", 4<<10) + "\n"
		for ctx.Err() == nil {
			if _, err := io.WriteString(w, c); err != nil {
				return
			}
		}
	},
}

// TestHostileStreamsEndBounded: every hostile stream ends, on fake time,
// with its class, inside its deadline and its byte cap; the idle timeout
// (here 1 s) alone would let each run forever. The positive control runs
// each again with the bound that stops it removed (asking 10⁹ tokens takes
// -output's away) and sees it still going after a minute of fake time (16× its deadline), or
// past four times the byte cap (as fast as read takes no fake time).
func TestHostileStreamsEndBounded(t *testing.T) {
	const maxTokens = 16
	budget := Budget{TTFT: 2 * time.Second, TPOT: 100 * time.Millisecond}
	for _, tc := range []struct {
		name  string
		class string
		// unbounded removes the bound that stops it: options and max_tokens
		unbounded []Option
		asked     int
	}{
		{"token every 10ms forever", "long", nil, 1e9},
		{"token every 10ms forever, no usage", "long", nil, 1e9},
		{"ping every 100ms forever", "deadline", []Option{WithBudget(Budget{})}, maxTokens},
		{"4KB chunks as fast as read", "long", nil, 1e9},
		{"4KB comments as fast as read", "body_too_large", []Option{WithMaxStreamBytes(1 << 40)}, maxTokens},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := &pipeTransport{serve: hostile[tc.name]}
				c := New("http://vllm.invalid", WithHTTPClient(&http.Client{Transport: tr}),
					WithStallTimeout(time.Second), WithBudget(budget))
				start := time.Now()
				res := c.Do(t.Context(), Text("hi", maxTokens), nil)
				took := time.Since(start)
				require.Error(t, res.Err)
				require.Equal(t, tc.class, ErrorClass(res.Err), "%v", res.Err)
				require.LessOrEqual(t, took, budget.For(maxTokens), "within the deadline")
				require.LessOrEqual(t, tr.read.Load(), StreamBytes(maxTokens)+64<<10, "within the byte cap")
				tr.wg.Wait() // the server saw the cut too
			})
			synctest.Test(t, func(t *testing.T) {
				limit := 4 * StreamBytes(maxTokens)
				tr := &pipeTransport{serve: hostile[tc.name], limit: limit}
				opts := append([]Option{WithHTTPClient(&http.Client{Transport: tr}),
					WithStallTimeout(time.Second), WithBudget(budget)}, tc.unbounded...)
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				res := New("http://vllm.invalid", opts...).Do(ctx, Text("hi", tc.asked), nil)
				ranOn := ErrorClass(res.Err) == "timeout" || tr.read.Load() > limit
				require.True(t, ranOn, "without the bound only the test's own end stops it: %v (%d bytes)", res.Err, tr.read.Load())
				cancel()
				tr.wg.Wait()
			})
		})
	}
}
