package stream

import (
	"fmt"
	"sort"
	"time"

	"github.com/vetbench/vetbench/judgments/errclass"
)

// Sources of Result.OutputTokens.
const (
	// FromUsage: the final usage-only chunk (choices empty).
	FromUsage = "usage"
	// FromContinuous: the last running completion_tokens of continuous
	// usage stats; the stream ended before its usage chunk.
	FromContinuous = "continuous_usage"
	// FromChunks: no usage at all, so the count of chunks that carried
	// text. Speculative decoding packs several tokens per chunk, so this is
	// a lower bound, and Verify refuses it.
	FromChunks = "chunks"
)

// Point is one step of a request's running output count: Tokens is
// usage.completion_tokens of a chunk that arrived at T. Points are kept only
// where the count grew.
type Point struct {
	T      time.Time
	Tokens int
}

// Result is what one streamed request measured. A failed request keeps
// everything it measured up to the failure (partial text, tokens, timings)
// with Err saying why; it is never dropped.
type Result struct {
	ID string
	// Sent is taken as the request starts, before its body is encoded.
	Sent time.Time
	// FirstChunk is the arrival of the first chunk with choices, empty
	// content included (the role chunk): `vllm bench serve`'s TTFT point.
	FirstChunk time.Time
	// LastChunk is the arrival of the last chunk with choices: where
	// `vllm bench serve`'s latency (E2EL) ends (the usage-only chunk and
	// [DONE] are not counted).
	LastChunk time.Time
	// ChunkGaps are the gaps between successive chunks with choices, as
	// `vllm bench serve` records its per-request itl list: one gap per
	// chunk, whatever number of tokens the chunk carried.
	ChunkGaps []time.Duration
	// FirstToken and LastToken are the arrivals of the first and last
	// chunks with non-empty content or reasoning text.
	FirstToken time.Time
	LastToken  time.Time
	// End is when the stream ended: [DONE], an error, or the cut.
	End time.Time

	PromptTokens    int
	OutputTokens    int
	ReasoningTokens int
	// TokensFrom says where OutputTokens comes from (FromUsage, ...); ""
	// when nothing arrived.
	TokensFrom string
	// Timeline is the running completion_tokens over time (continuous usage
	// stats); empty when the server sends none.
	Timeline []Point

	// Content and Reasoning are the generated text per channel.
	Content   string
	Reasoning string
	// FinishReason is the first choice's finish_reason ("length" for a
	// fixed-length ignore_eos request); "" when none arrived.
	FinishReason string
	// Chunks counts chunks that carried text.
	Chunks int
	// Done is true when data: [DONE] arrived.
	Done bool
	Err  error
}

// OK reports a request that finished cleanly.
func (r *Result) OK() bool { return r.Err == nil }

// TTFT is the time from send to the first content or reasoning text; false
// when none arrived.
func (r *Result) TTFT() (time.Duration, bool) {
	if r.FirstToken.IsZero() {
		return 0, false
	}
	return r.FirstToken.Sub(r.Sent), true
}

// ServeTTFT is `vllm bench serve`'s TTFT: send to the first chunk with
// choices (the role chunk counts); false when none arrived.
func (r *Result) ServeTTFT() (time.Duration, bool) {
	if r.FirstChunk.IsZero() {
		return 0, false
	}
	return r.FirstChunk.Sub(r.Sent), true
}

// ServeLatency is `vllm bench serve`'s latency (E2EL): send to the last
// chunk with choices; 0 when none arrived.
func (r *Result) ServeLatency() time.Duration {
	if r.LastChunk.IsZero() {
		return 0
	}
	return r.LastChunk.Sub(r.Sent)
}

// TimeBetweenTokens is (last − first text arrival) ÷ (output tokens − 1),
// the per-request inter-token latency of method.md §3. A cut stream still
// has one from what it received; the cut time is never used. False with
// fewer than two tokens.
func (r *Result) TimeBetweenTokens() (time.Duration, bool) {
	n := r.OutputTokens
	if n < 2 || r.FirstToken.IsZero() {
		return 0, false
	}
	return r.LastToken.Sub(r.FirstToken) / time.Duration(n-1), true
}

// E2E is send to end of stream.
func (r *Result) E2E() time.Duration {
	if r.End.IsZero() {
		return 0
	}
	return r.End.Sub(r.Sent)
}

// TokensAt is the running output count at t: the last timeline point at or
// before t, 0 before the first.
func (r *Result) TokensAt(t time.Time) int {
	i := sort.Search(len(r.Timeline), func(i int) bool { return r.Timeline[i].T.After(t) })
	if i == 0 {
		return 0
	}
	return r.Timeline[i-1].Tokens
}

// TokensIn counts the tokens whose usage update arrived in (from, to]: a
// request that began before the window counts only its tokens after from.
func (r *Result) TokensIn(from, to time.Time) int {
	if !to.After(from) {
		return 0
	}
	return r.TokensAt(to) - r.TokensAt(from)
}

// LastUpdateIn is the arrival of the last count increase in (from, to].
func (r *Result) LastUpdateIn(from, to time.Time) (time.Time, bool) {
	i := sort.Search(len(r.Timeline), func(i int) bool { return r.Timeline[i].T.After(to) })
	if i == 0 || !r.Timeline[i-1].T.After(from) {
		return time.Time{}, false
	}
	return r.Timeline[i-1].T, true
}

// Verify checks that the request produced exactly want output tokens by
// the server's own count. It returns the request's error when it failed, a
// *CountError when the count differs (errors.Is(err, ErrShort) when it is
// lower), ErrNoUsage when the server sent no usage to check against.
func (r *Result) Verify(want int) error {
	if r.Err != nil {
		return r.Err
	}
	switch r.TokensFrom {
	case FromUsage, FromContinuous:
	default:
		return fmt.Errorf("%w (%d text chunks)", ErrNoUsage, r.Chunks)
	}
	if r.OutputTokens != want {
		return &CountError{Want: want, Got: r.OutputTokens, FinishReason: r.FinishReason}
	}
	return nil
}

// Errors a Result may carry. Match with errors.Is / errors.As.
var (
	// ErrCut: the connection ended before data: [DONE].
	ErrCut = errclass.New("cut", "stream cut before [DONE]")
	// ErrShort: fewer output tokens than asked (see Verify).
	ErrShort = errclass.New("short", "short stream")
	// ErrNoUsage: the server sent no usage, so the count is unverified.
	ErrNoUsage = errclass.New("no_usage", "no usage in the stream to verify the token count")
	// ErrMalformed: a chunk that is not the JSON vLLM sends.
	ErrMalformed = errclass.New("malformed", "malformed chunk")
	// ErrNotStream: a 200 answer that is not an event stream.
	ErrNotStream = errclass.New("not_stream", "answer is not an event stream")
	// ErrStalled: nothing arrived within the stall timeout.
	ErrStalled = errclass.NewCause("stalled", "stream stalled")
	// ErrAborted: the caller's Observer stopped the stream.
	ErrAborted = errclass.NewCause("aborted", "stream aborted by the observer")
	// ErrInvalidRequest: the request was not sent (see Request.Validate).
	ErrInvalidRequest = errclass.New("invalid_request", "invalid request")
)

// CountError is a request whose server-counted output differs from what
// was asked.
type CountError struct {
	Want, Got    int
	FinishReason string
}

func (e *CountError) Error() string {
	kind := "short stream"
	if e.Got > e.Want {
		kind = "long stream"
	}
	msg := fmt.Sprintf("%s: %d output tokens, asked %d", kind, e.Got, e.Want)
	if e.FinishReason != "" {
		msg += " (finish_reason " + e.FinishReason + ")"
	}
	return msg
}

// Is makes errors.Is(err, ErrShort) true for a short count.
func (e *CountError) Is(target error) bool { return target == ErrShort && e.Got < e.Want }

// ErrorClass is "short" or "long" (see ErrorClass).
func (e *CountError) ErrorClass() string {
	if e.Got < e.Want {
		return "short"
	}
	return "long"
}

// ServerError is an error object the server sent inside the stream
// (`data: {"error": {...}}`, then [DONE]): the request failed after its
// 200 header.
type ServerError struct {
	Message string
	Type    string
	Param   string
	Code    int
}

// ErrorClass is "stream_error" (see ErrorClass).
func (e *ServerError) ErrorClass() string { return "stream_error" }

func (e *ServerError) Error() string {
	msg := "error in stream"
	if e.Code != 0 {
		msg += fmt.Sprintf(" (code %d)", e.Code)
	}
	if e.Type != "" {
		msg += " " + e.Type
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Window is what a set of requests produced inside a fixed window: the
// tokens whose usage update arrived in (From, To], summed over requests,
// and the arrival of the last such update. Requests that began before the
// window count only from From; a request still running at To counts up to
// To. This is how a sustained-decode cell counts its tokens (method.md §2).
type Window struct {
	From, To time.Time
	Tokens   int
	// Last is the latest update inside the window; zero when none.
	Last time.Time
	// Requests counts the requests that had at least one update inside.
	Requests int
}

// Measure counts results' tokens inside (from, to].
func Measure(results []*Result, from, to time.Time) Window {
	w := Window{From: from, To: to}
	for _, r := range results {
		n := r.TokensIn(from, to)
		if n == 0 {
			continue
		}
		w.Tokens += n
		w.Requests++
		if t, ok := r.LastUpdateIn(from, to); ok && t.After(w.Last) {
			w.Last = t
		}
	}
	return w
}

// Seconds is the usage window: From to the last update inside (the
// peer's denominator); 0 when nothing arrived.
func (w Window) Seconds() float64 {
	if w.Last.IsZero() {
		return 0
	}
	return w.Last.Sub(w.From).Seconds()
}

// TokS is Tokens ÷ Seconds, the cell's total tok/s; 0 when nothing arrived.
func (w Window) TokS() float64 {
	if s := w.Seconds(); s > 0 {
		return float64(w.Tokens) / s
	}
	return 0
}
