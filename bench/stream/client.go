// Package stream is a streaming client for vLLM's /v1/chat/completions
// (and /v1/completions, for a Request with a Prompt): stream on, with the usage chunk and continuous usage stats. One call
// sends one request and returns its Result: time to first token, time
// between tokens, the server's output token count (and its running count
// over time, so a fixed window can count the tokens inside it), end to end
// time, the text per channel and the finish reason. A request that fails —
// an HTTP error, an error object inside the stream, a cut connection, a
// cancel — still returns what it measured, with the error.
package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/judgments/errclass"
)

// Path is the endpoint the client posts chat requests to; CompletionsPath
// the one for a Request with a Prompt.
const (
	Path            = "/v1/chat/completions"
	CompletionsPath = "/v1/completions"
)

// maxErrorBody bounds how much of a non-200 answer is read.
const maxErrorBody = 64 << 10

// Client sends streamed chat completions to one server. It is safe for
// concurrent use.
type Client struct {
	baseURL  string
	apiKey   string
	http     *http.Client
	now      func() time.Time
	stall    time.Duration
	maxEvent int
	budget   Budget
	maxBytes int64
}

// Option configures a Client.
type Option func(*Client)

// WithAPIKey sends "Authorization: Bearer <key>". The key goes nowhere else.
func WithAPIKey(k string) Option { return func(c *Client) { c.apiKey = k } }

// WithHTTPClient replaces the default HTTP client. Its Timeout, if any,
// bounds the whole stream; prefer a context or WithStallTimeout.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithClock replaces time.Now for every timestamp of a Result, so tests can
// drive time. The clock is read once before sending and once per event.
func WithClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// WithStallTimeout fails a request when no byte arrives for d, headers
// included (0, the default, waits as long as the context allows). vLLM
// sends the header with the first chunk, so d must exceed the longest
// prefill the run expects.
func WithStallTimeout(d time.Duration) Option { return func(c *Client) { c.stall = d } }

// WithMaxEventBytes bounds one server-sent event (default
// DefaultMaxEventBytes).
func WithMaxEventBytes(n int) Option { return func(c *Client) { c.maxEvent = n } }

// WithBudget bounds every stream at b.For(max_tokens) after it is sent,
// whatever arrives meanwhile (default DefaultBudget; the zero Budget sets
// no deadline). Past it the request fails with ErrDeadline.
func WithBudget(b Budget) Option { return func(c *Client) { c.budget = b } }

// WithMaxStreamBytes bounds the bytes read from one stream, every event
// and comment included (default StreamBytes(max_tokens)). Past it the
// request fails with ErrStreamTooLarge.
func WithMaxStreamBytes(n int64) Option { return func(c *Client) { c.maxBytes = n } }

// New returns a client for the server at baseURL (no trailing /v1).
func New(baseURL string, opts ...Option) *Client {
	c := &Client{
		baseURL:  strings.TrimRight(baseURL, "/"),
		http:     &http.Client{Transport: judgments.NewTransport(1024)},
		now:      time.Now,
		maxEvent: DefaultMaxEventBytes,
		budget:   DefaultBudget,
	}
	for _, o := range opts {
		o(c)
	}
	c.http = judgments.Secret(c.apiKey).Guard(c.http) // the key masked in answers; redirects within the origin
	return c
}

// Do sends r and reads its stream to the end. It always returns a Result;
// Result.Err is nil only when the stream ended with [DONE] and no error
// object. obs, when non-nil, sees each chunk as it arrives.
func (c *Client) Do(ctx context.Context, r Request, obs Observer) *Result {
	// Sent before the body is built, as vllm bench serve takes its start
	// before aiohttp serializes the payload: encoding a request with an
	// image is part of sending it, and a pool slot held meanwhile is
	// time the latency sees (Little's law).
	res := &Result{ID: r.ID, Sent: c.now()}
	body, err := r.Body()
	if err != nil {
		res.End = res.Sent
		res.Err = fmt.Errorf("%w: %w", ErrInvalidRequest, err)
		return res
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch := &watches{stall: newWatch(c.stall, cancel), deadline: newWatch(c.budget.For(r.MaxTokens), cancel),
		maxTokens: r.MaxTokens}
	defer watch.stop()

	path := r.Path()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+path, bytes.NewReader(body))
	if err != nil {
		res.End = c.now()
		res.Err = fmt.Errorf("%s: %w", path, err)
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if r.ID != "" {
		req.Header.Set("X-Request-Id", r.ID)
	}
	judgments.Authorize(req, c.apiKey)

	resp, err := c.http.Do(req)
	if err != nil {
		res.End = c.now()
		res.Err = c.failure(ctx, watch, fmt.Errorf("%s: %w", path, err))
		return res
	}
	defer resp.Body.Close()
	watch.stall.touch()

	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		res.End = c.now()
		res.Err = judgments.ParseStatusError(path, resp, data, judgments.Secret(c.apiKey))
		return res
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		res.End = c.now()
		res.Err = fmt.Errorf("%w: HTTP 200 with Content-Type %q: %s", ErrNotStream, resp.Header.Get("Content-Type"), excerpt(data))
		return res
	}

	limit := c.maxBytes
	if limit <= 0 {
		limit = StreamBytes(r.MaxTokens)
	}
	c.read(ctx, watch, &boundedReader{r: resp.Body, w: watch.stall, max: limit}, res, obs)
	return res
}

// read consumes the event stream into res.
func (c *Client) read(ctx context.Context, watch *watches, body io.Reader, res *Result, obs Observer) {
	col := &collector{res: res, max: watch.maxTokens}
	defer col.finish()
	dec := NewDecoder(body)
	dec.SetMaxEventBytes(c.maxEvent)
	for {
		ev, err := dec.Next()
		t := c.now()
		res.End = t
		if err != nil {
			// Any end other than an oversized event or stream is a cut:
			// EOF, a truncated event, a reset or unterminated chunked body.
			if !errors.Is(err, ErrEventTooLong) && !errors.Is(err, ErrStreamTooLarge) {
				err = fmt.Errorf("%w after %d tokens: %w", ErrCut, res.OutputTokens, err)
			}
			res.Err = c.failure(ctx, watch, err)
			return
		}
		up, done, err := col.event(t, ev.Data)
		if err != nil {
			res.Err = err
			return
		}
		if done {
			return
		}
		if obs != nil {
			if err := obs(up); err != nil {
				res.Err = fmt.Errorf("%w: %w", ErrAborted, err)
				return
			}
		}
	}
}

// failure names why a request ended early: the deadline, the stall watch,
// the caller's context, or the transport.
func (c *Client) failure(ctx context.Context, watch *watches, err error) error {
	switch {
	case watch.deadline.fired():
		return fmt.Errorf("%w: %s for %d tokens (%s): %w", ErrDeadline, c.budget.For(watch.maxTokens), watch.maxTokens, c.budget, err)
	case watch.stall.fired():
		return fmt.Errorf("%w: nothing for %s: %w", ErrStalled, c.stall, err)
	case ctx.Err() != nil && !errors.Is(err, ctx.Err()):
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return err
}

// ErrorClass names the kind of a Result's error with the stable words of
// judgments/errclass that counts and receipts group by, the same words a
// judgment's failure gets: "" (no error), "canceled", "timeout",
// "connection_refused", "connection_reset", "http_<status>", … and the
// stream's own: "stalled", "deadline", "aborted", "stream_error", "cut",
// "short", "long", "no_usage", "malformed", "not_stream",
// "invalid_request", "body_too_large"; "transport" for another network
// error.
func ErrorClass(err error) string { return errclass.Of(err) }

// watches are a request's two timers: the stall watch (reset by every
// byte) and the deadline (from its budget).
type watches struct {
	stall, deadline *watch
	maxTokens       int
}

func (w *watches) stop() {
	w.stall.stop()
	w.deadline.stop()
}
