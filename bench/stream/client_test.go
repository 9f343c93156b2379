package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
)

// timed is a stream of n tokens whose first text arrives at first and the
// rest every gap, on the fake clock.
func timed(prompt, n int, first, gap time.Duration) []step {
	data := genStream(prompt, n)
	steps := []step{{At: first - time.Millisecond, Data: data[0], Ack: true}} // role chunk
	for i := 1; i <= n; i++ {
		steps = append(steps, step{At: first + time.Duration(i-1)*gap, Data: data[i], Ack: true})
	}
	end := first + time.Duration(n-1)*gap + time.Millisecond
	return append(steps, step{At: end, Data: data[n+1], Ack: true}, step{At: end, Data: data[n+2]})
}

func TestDoMeasuresASlowFirstTokenOnAFakeClock(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := &script{Clock: clk, Steps: timed(17, 8, 2*time.Second, 10*time.Millisecond)}
	c := New(s.serve(t), WithClock(clk.Now))
	res := c.Do(context.Background(), Text("hi", 8), s.ack)

	require.NoError(t, res.Err)
	require.True(t, res.Done)
	ttft, ok := res.TTFT()
	require.True(t, ok)
	require.Equal(t, 2*time.Second, ttft, "send → first content delta, not the role chunk")
	require.Equal(t, 2*time.Second-time.Millisecond, res.FirstChunk.Sub(res.Sent), "the role chunk is vllm bench's TTFT point")
	itl, ok := res.TimeBetweenTokens()
	require.True(t, ok)
	require.Equal(t, 10*time.Millisecond, itl)
	require.Equal(t, 2*time.Second+70*time.Millisecond+time.Millisecond, res.E2E())
	require.Equal(t, 8, res.OutputTokens)
	require.Equal(t, FromUsage, res.TokensFrom)
	require.Equal(t, 17, res.PromptTokens)
	require.Equal(t, "length", res.FinishReason)
	require.Equal(t, genText(8), res.Content)
	require.Empty(t, res.Reasoning)
	require.Len(t, res.Timeline, 8)
	require.Equal(t, Point{T: t0.Add(2 * time.Second), Tokens: 1}, res.Timeline[0])
	require.NoError(t, res.Verify(8))

	// Positive control: the same stream on a different clock gives other
	// figures, so the assertions above read the clock, not constants.
	clk2 := newClock()
	s2 := &script{Clock: clk2, Steps: timed(17, 8, 3*time.Second, 20*time.Millisecond)}
	res2 := New(s2.serve(t), WithClock(clk2.Now)).Do(context.Background(), Text("hi", 8), s2.ack)
	ttft2, _ := res2.TTFT()
	itl2, _ := res2.TimeBetweenTokens()
	require.Equal(t, 3*time.Second, ttft2)
	require.Equal(t, 20*time.Millisecond, itl2)
}

func TestWindowCountsOnlyTokensInside(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := &script{Clock: clk, Steps: timed(5, 10, time.Second, 100*time.Millisecond)}
	res := New(s.serve(t), WithClock(clk.Now)).Do(context.Background(), Text("hi", 10), s.ack)
	require.NoError(t, res.Err)
	// Tokens k arrive at 1s + (k-1)·100ms. Window (1.25s, 1.65s]: tokens 4..7.
	from, to := t0.Add(1250*time.Millisecond), t0.Add(1650*time.Millisecond)
	require.Equal(t, 4, res.TokensIn(from, to))
	last, ok := res.LastUpdateIn(from, to)
	require.True(t, ok)
	require.Equal(t, t0.Add(1600*time.Millisecond), last)
	require.Equal(t, 10, res.TokensIn(t0, t0.Add(time.Hour)))
	require.Equal(t, 0, res.TokensIn(to, from), "an empty window counts nothing")
	_, ok = res.LastUpdateIn(t0.Add(5*time.Second), t0.Add(6*time.Second))
	require.False(t, ok)
}

// splitters cut a stream as transports and proxies do.
var splitters = map[string]func(string) []string{
	"whole": func(s string) []string { return []string{s} },
	"bytes": func(s string) []string { return strings.Split(s, "") },
	"sevens": func(s string) []string {
		var out []string
		for len(s) > 7 {
			out, s = append(out, s[:7]), s[7:]
		}
		return append(out, s)
	},
	"at_newlines": func(s string) []string { return strings.SplitAfter(s, "\n") },
	"crlf": func(s string) []string {
		return strings.Split(strings.ReplaceAll(s, "\n", "\r\n"), "")
	},
	"cr_only": func(s string) []string { return []string{strings.ReplaceAll(s, "\n", "\r")} },
	"comments": func(s string) []string {
		return []string{": ping - 2026-01-02 03:04:05\n\n", s, ":\n"}
	},
	"multiline_data": func(s string) []string {
		// JSON allows a newline where it allows a space: the data field
		// split over two lines joins back with "\n".
		body, ok := strings.CutPrefix(s, "data: ")
		if !ok || !strings.Contains(body, `,"model"`) {
			return []string{s}
		}
		return []string{"data: " + strings.Replace(body, `,"model"`, "\ndata: ,\"model\"", 1)}
	},
}

func TestSplitsDoNotChangeTheResult(t *testing.T) {
	t.Parallel()
	for name, split := range splitters {
		t.Run("split="+name, func(t *testing.T) {
			t.Parallel()
			s := &script{Steps: pieces(genStream(9, 12), split)}
			res := New(s.serve(t)).Do(context.Background(), Text("hi", 12), nil)
			require.NoError(t, res.Err)
			require.Equal(t, genText(12), res.Content)
			require.Equal(t, 12, res.OutputTokens)
			require.Equal(t, FromUsage, res.TokensFrom)
			require.Equal(t, 12, res.Chunks)
			require.Len(t, res.Timeline, 12)
			require.NoError(t, res.Verify(12))
		})
	}
}

func TestUsageSources(t *testing.T) {
	t.Parallel()
	plain := func(text, fin string) string {
		return sse(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":%q},"finish_reason":%s}]}`, text, fin))
	}
	tests := []struct {
		name   string
		steps  []string
		tokens int
		from   string
		verify error
	}{
		{
			name:   "usage_chunk_only",
			steps:  []string{plain("a", "null"), plain("b", `"length"`), sse(usageChunk(3, 5)), sse(done)},
			tokens: 5, from: FromUsage, // MTP: 5 tokens in 2 chunks
		},
		{
			name:   "no_usage",
			steps:  []string{plain("a", "null"), plain("b", `"length"`), sse(done)},
			tokens: 2, from: FromChunks, verify: ErrNoUsage,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &script{Steps: pieces(tc.steps, splitters["whole"])}
			res := New(s.serve(t)).Do(context.Background(), Text("hi", 5), nil)
			require.NoError(t, res.Err)
			require.Equal(t, tc.tokens, res.OutputTokens)
			require.Equal(t, tc.from, res.TokensFrom)
			require.Empty(t, res.Timeline)
			if tc.verify == nil {
				require.NoError(t, res.Verify(5))
			} else {
				require.ErrorIs(t, res.Verify(5), tc.verify)
				require.Equal(t, "no_usage", ErrorClass(res.Verify(5)))
			}
		})
	}
}

func TestFailedRequestsKeepWhatTheyMeasured(t *testing.T) {
	t.Parallel()
	gen := genStream(4, 6)
	errObj := sse(`{"error": {"message": "Internal server error", "type": "InternalServerError", "param": null, "code": 500}}`)
	flatErr := sse(`{"object": "error", "message": "engine died", "type": "InternalServerError", "code": 500}`)
	// A hostile server's message: terminal escapes, a carriage return, a
	// bidi override; they reach the terminal and are kept escaped.
	hostileErr := sse(`{"error": {"message": "\u001b]0;PWNED\u0007\u001b[2Jdied\r\u202e", "type": "X\u001b[31m", "code": 500}}`)
	tests := []struct {
		name  string
		s     *script
		class string
		is    error
		msg   string
	}{
		{
			name:  "error_mid_stream",
			s:     &script{Steps: pieces(append(gen[:4:4], errObj, sse(done)), splitters["bytes"])},
			class: "stream_error", msg: "Internal server error",
		},
		{
			name:  "flat_error_mid_stream",
			s:     &script{Steps: pieces(append(gen[:4:4], flatErr, sse(done)), splitters["whole"])},
			class: "stream_error", msg: "engine died",
		},
		{
			name:  "hostile_error_mid_stream",
			s:     &script{Steps: pieces(append(gen[:4:4], hostileErr, sse(done)), splitters["whole"])},
			class: "stream_error", msg: `\x1b]0;PWNED\a\x1b[2Jdied\r\u202e`,
		},
		{
			name:  "cut_between_events",
			s:     &script{Steps: pieces(gen[:4], splitters["sevens"]), Cut: true},
			class: "cut", is: ErrCut,
		},
		{
			name:  "cut_inside_an_event",
			s:     &script{Steps: pieces(append(gen[:4:4], gen[4][:20]), splitters["whole"]), Cut: true},
			class: "cut", is: ErrCut,
		},
		{
			name:  "clean_eof_without_done",
			s:     &script{Steps: pieces(gen[:4], splitters["whole"])},
			class: "cut", is: ErrCut,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := New(tc.s.serve(t)).Do(context.Background(), Text("hi", 6), nil)
			require.Error(t, res.Err)
			require.Equal(t, tc.class, ErrorClass(res.Err), "%v", res.Err)
			if tc.is != nil {
				require.ErrorIs(t, res.Err, tc.is)
			}
			if tc.msg != "" {
				var se *ServerError
				require.ErrorAs(t, res.Err, &se)
				require.Equal(t, tc.msg, se.Message)
				require.Equal(t, 500, se.Code)
				require.NotContains(t, res.Err.Error(), "\x1b", "nothing raw reaches the terminal")
			}
			require.False(t, res.Done)
			require.Equal(t, genText(3), res.Content, "partial text is kept")
			require.Equal(t, 3, res.OutputTokens, "partial tokens are kept")
			require.Equal(t, FromContinuous, res.TokensFrom)
			require.False(t, res.FirstToken.IsZero(), "timings are kept")
			_, ok := res.TimeBetweenTokens()
			require.True(t, ok, "a cut stream still has a time between tokens")
			require.ErrorIs(t, res.Verify(6), res.Err, "Verify reports the failure")
		})
	}
}

func TestShortStreamIsACountedError(t *testing.T) {
	t.Parallel()
	// EOS arrived early: finish_reason stop after 5 of 8 asked.
	data := []string{sse(roleChunk(3))}
	for i := 1; i <= 5; i++ {
		fin := ""
		if i == 5 {
			fin = "stop"
		}
		data = append(data, sse(tokenChunk("content", "x", 3, i, fin)))
	}
	data = append(data, sse(usageChunk(3, 5)), sse(done))
	s := &script{Steps: pieces(data, splitters["whole"])}
	res := New(s.serve(t)).Do(context.Background(), Text("hi", 8), nil)
	require.NoError(t, res.Err, "the stream itself is clean")
	err := res.Verify(8)
	require.ErrorIs(t, err, ErrShort)
	var ce *CountError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, CountError{Want: 8, Got: 5, FinishReason: "stop"}, *ce)
	require.Equal(t, "short", ErrorClass(err))
	require.NoError(t, res.Verify(5), "positive control: the count it did produce verifies")
	long := res.Verify(4)
	require.NotErrorIs(t, long, ErrShort)
	require.Equal(t, "long", ErrorClass(long))
}

func TestHTTPErrorsBeforeTheStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		s      *script
		code   int
		typ    string
		msg    string
		retry  time.Duration
		class  string
		param  string
		header map[string]string
	}{
		{
			name: "401_api_key_middleware",
			s:    &script{Status: 401, Body: `{"error": "Unauthorized"}`, Header: map[string]string{"Content-Type": "application/json"}},
			code: 401, msg: "Unauthorized", class: "http_401",
		},
		{
			name: "429_with_retry_after",
			s: &script{Status: 429, Body: `{"error": {"message": "Too many requests", "type": "RateLimitError", "param": null, "code": 429}}`,
				Header: map[string]string{"Content-Type": "application/json", "Retry-After": "3"}},
			code: 429, typ: "RateLimitError", msg: "Too many requests", retry: 3 * time.Second, class: "http_429",
		},
		{
			name: "400_prompt_too_long",
			s: &script{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 1024 tokens.","type":"BadRequestError","param":"input_tokens","code":400}}`,
				Header: map[string]string{"Content-Type": "application/json"}},
			code: 400, typ: "BadRequestError", msg: "This model's maximum context length is 1024 tokens.", param: "input_tokens", class: "http_400",
		},
		{
			name: "500_flat_pre_0_10_1",
			s: &script{Status: 500, Body: `{"object": "error", "message": "boom", "type": "InternalServerError", "param": null, "code": 500}`,
				Header: map[string]string{"Content-Type": "application/json"}},
			code: 500, typ: "InternalServerError", msg: "boom", class: "http_500",
		},
		{
			name: "502_html_proxy",
			s:    &script{Status: 502, Body: "<html>bad gateway</html>", Header: map[string]string{"Content-Type": "text/html"}},
			code: 502, msg: "<html>bad gateway</html>", class: "http_502",
		},
		{
			// A hostile 40 KB message is clipped as a judgment's is (one parser).
			name: "500_huge_message",
			s: &script{Status: 500, Body: `{"error":{"message":"` + strings.Repeat("m", 40000) + `","type":"InternalServerError","code":500}}`,
				Header: map[string]string{"Content-Type": "application/json"}},
			code: 500, typ: "InternalServerError", msg: strings.Repeat("m", judgments.MaxMessage) + "…", class: "http_500",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := New(tc.s.serve(t)).Do(context.Background(), Text("hi", 4), nil)
			var se *judgments.StatusError
			require.ErrorAs(t, res.Err, &se)
			require.Equal(t, tc.code, se.Code)
			require.Equal(t, tc.typ, se.Type)
			require.Equal(t, tc.msg, se.Message)
			require.Equal(t, tc.param, se.Param)
			require.Equal(t, tc.retry, se.RetryAfter)
			require.Equal(t, tc.class, ErrorClass(res.Err))
			require.Zero(t, res.OutputTokens)
			require.False(t, res.End.Before(res.Sent))
		})
	}
}

func TestNotAStream(t *testing.T) {
	t.Parallel()
	s := &script{Header: map[string]string{"Content-Type": "application/json"}, Steps: []step{{Data: `{"choices":[]}`}}}
	res := New(s.serve(t)).Do(context.Background(), Text("hi", 4), nil)
	require.ErrorIs(t, res.Err, ErrNotStream)
	require.Equal(t, "not_stream", ErrorClass(res.Err))
}

func TestReasoningDeltas(t *testing.T) {
	t.Parallel()
	clk := newClock()
	data := []string{
		sse(roleChunk(2)),
		sse(tokenChunk("reasoning", "think ", 2, 1, "")),
		sse(tokenChunk("reasoning_content", "more ", 2, 2, "")), // the older field name
		sse(tokenChunk("content", "answer", 2, 3, "length")),
		sse(`{"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":3,"completion_tokens_details":{"reasoning_tokens":2}}}`),
		sse(done),
	}
	var steps []step
	for i, d := range data {
		steps = append(steps, step{At: time.Duration(i+1) * 100 * time.Millisecond, Data: d, Ack: i < len(data)-1})
	}
	s := &script{Clock: clk, Steps: steps}
	var seen []Update
	res := New(s.serve(t), WithClock(clk.Now)).Do(context.Background(), Text("hi", 3), func(u Update) error {
		seen = append(seen, u)
		return s.ack(u)
	})
	require.NoError(t, res.Err)
	require.Equal(t, "think more ", res.Reasoning)
	require.Equal(t, "answer", res.Content)
	require.Equal(t, 2, res.ReasoningTokens)
	ttft, _ := res.TTFT()
	require.Equal(t, 200*time.Millisecond, ttft, "the first reasoning delta is the first token")
	require.Len(t, seen, 5)
	require.Equal(t, "think ", seen[1].Reasoning)
	require.Equal(t, 1, seen[1].Tokens)
	require.True(t, seen[4].Final)
	require.Equal(t, -1, (&collector{res: &Result{}}).mustEvent(t, `{"choices":[{"index":0,"delta":{"content":"x"}}]}`).Tokens)
}

func (c *collector) mustEvent(t *testing.T, data string) Update {
	t.Helper()
	up, _, err := c.event(t0, []byte(data))
	require.NoError(t, err)
	return up
}

func TestRequestOnTheWire(t *testing.T) {
	t.Parallel()
	s := &script{Steps: pieces(genStream(1, 2), splitters["whole"])}
	req := Image("what is this?", DataURL("image/png", []byte{0x89, 'P', 'N', 'G'}), 2)
	req.Model = "google/gemma-4-31B-it"
	req.MinTokens = 2
	req.ID = "vetbench-tokens-c4-r1-3"
	res := New(s.serve(t), WithAPIKey("sekret")).Do(context.Background(), req, nil)
	require.NoError(t, res.Err)
	require.Equal(t, req.ID, res.ID)

	r := <-s.gotReq
	body := <-s.gotBody
	require.Equal(t, Path, r.URL.Path)
	require.Equal(t, "Bearer sekret", r.Header.Get("Authorization"))
	require.Equal(t, req.ID, r.Header.Get("X-Request-Id"))
	require.Equal(t, "text/event-stream", r.Header.Get("Accept"))
	require.JSONEq(t, `{
		"model": "google/gemma-4-31B-it",
		"messages": [{"role": "user", "content": [
			{"type": "text", "text": "what is this?"},
			{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}}
		]}],
		"stream": true,
		"stream_options": {"include_usage": true, "continuous_usage_stats": true},
		"max_tokens": 2,
		"temperature": 0,
		"ignore_eos": true,
		"min_tokens": 2
	}`, string(body))

	text, err := Text("plain", 128).Body()
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(text, &m))
	require.Equal(t, []any{map[string]any{"role": "user", "content": "plain"}}, m["messages"])
	require.Equal(t, 0.0, m["temperature"], "temperature 0 is sent, not left to the server")
	require.NotContains(t, m, "model")
}

func TestInvalidRequestsAreNotSent(t *testing.T) {
	t.Parallel()
	s := &script{Steps: pieces(genStream(1, 2), splitters["whole"])}
	url := s.serve(t)
	for name, r := range map[string]Request{
		"no_messages": {MaxTokens: 4},
		"zero_tokens": Text("hi", 0),
		"min_over":    func() Request { r := Text("hi", 4); r.MinTokens = 5; return r }(),
		"bad_image":   Image("hi", "C:/img.png", 4),
	} {
		res := New(url).Do(context.Background(), r, nil)
		require.ErrorIs(t, res.Err, ErrInvalidRequest, name)
		require.Equal(t, "invalid_request", ErrorClass(res.Err), name)
	}
	select {
	case <-s.gotReq:
		t.Fatal("an invalid request reached the server")
	default:
	}
}

func TestObserverAbortsAndCancelKeepsPartialResults(t *testing.T) {
	t.Parallel()
	t.Run("observer", func(t *testing.T) {
		t.Parallel()
		s := &script{Steps: pieces(genStream(1, 50), splitters["whole"])}
		errLoop := errors.New("loop detected")
		res := New(s.serve(t)).Do(context.Background(), Text("hi", 50), func(u Update) error {
			if u.Tokens == 3 {
				return errLoop
			}
			return nil
		})
		require.ErrorIs(t, res.Err, ErrAborted)
		require.ErrorIs(t, res.Err, errLoop)
		require.Equal(t, "aborted", ErrorClass(res.Err))
		require.Equal(t, 3, res.OutputTokens)
		require.Equal(t, genText(3), res.Content)
	})
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		gen := genStream(1, 4)
		s := &script{Steps: pieces(gen[:4], splitters["whole"]), Hold: true}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res := New(s.serve(t)).Do(ctx, Text("hi", 4), func(u Update) error {
			if u.Tokens == 3 {
				cancel() // the window closed
			}
			return nil
		})
		require.ErrorIs(t, res.Err, context.Canceled)
		require.Equal(t, "canceled", ErrorClass(res.Err))
		require.Equal(t, 3, res.OutputTokens)
	})
	t.Run("stall", func(t *testing.T) {
		t.Parallel()
		gen := genStream(1, 4)
		s := &script{Steps: pieces(gen[:2], splitters["whole"]), Hold: true}
		res := New(s.serve(t), WithStallTimeout(50*time.Millisecond)).Do(context.Background(), Text("hi", 4), nil)
		require.ErrorIs(t, res.Err, ErrStalled)
		require.Equal(t, "stalled", ErrorClass(res.Err))
		require.Equal(t, 1, res.OutputTokens)
	})
}

func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	res := New("http://127.0.0.1:1").Do(context.Background(), Text("hi", 4), nil)
	require.Error(t, res.Err)
	require.Equal(t, "connection_refused", ErrorClass(res.Err))
	require.False(t, res.Sent.IsZero())
}

func TestOversizedEvent(t *testing.T) {
	t.Parallel()
	s := &script{Steps: []step{{Data: "data: " + strings.Repeat("x", 300) + "\n\n"}}}
	res := New(s.serve(t), WithMaxEventBytes(100)).Do(context.Background(), Text("hi", 4), nil)
	require.ErrorIs(t, res.Err, ErrEventTooLong)
	require.Equal(t, "malformed", ErrorClass(res.Err))
	_ = http.StatusOK
}
