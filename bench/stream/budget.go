package stream

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vetbench/vetbench/judgments/errclass"
)

// Budget is how long one stream may take, from what it asks: TTFT for the
// first token (queueing and prefill), then TPOT for each of max_tokens,
// the slowest time per output token the run accepts. A server that keeps
// a stream alive with keep-alive comments or a token now and then, never
// going quiet long enough for the stall timeout, is still stopped at
// TTFT + max_tokens × TPOT. The zero Budget sets no deadline.
type Budget struct {
	TTFT time.Duration
	TPOT time.Duration
}

// Default budget: a first token within two minutes (vetbench's default
// request timeout, the longest prefill a run expects) and no output token
// slower than half a second (2 tok/s per stream, some 10× slower than a
// loaded H100 at c = 128 decodes).
const (
	DefaultTTFTBudget  = 120 * time.Second
	DefaultSlowestTPOT = 500 * time.Millisecond
)

// DefaultBudget is DefaultTTFTBudget and DefaultSlowestTPOT.
var DefaultBudget = Budget{TTFT: DefaultTTFTBudget, TPOT: DefaultSlowestTPOT}

// For is the deadline of a stream of maxTokens: TTFT + maxTokens × TPOT;
// 0 (none) for the zero Budget.
func (b Budget) For(maxTokens int) time.Duration {
	if b.TTFT <= 0 && b.TPOT <= 0 {
		return 0
	}
	return max(b.TTFT, 0) + time.Duration(max(maxTokens, 1))*max(b.TPOT, 0)
}

// String is the budget as a sentence fragment: "120s + 500ms/token".
func (b Budget) String() string { return fmt.Sprintf("%s + %s/token", b.TTFT, b.TPOT) }

// Stream bytes: a vLLM chunk with continuous usage is some 350 bytes (a
// few KiB with logprobs), so a stream of n tokens reads DefaultStreamBytes
// + n × DefaultBytesPerToken at most: one event of the decoder's largest,
// and 16 KiB a token, tens of times what vLLM sends.
const (
	DefaultStreamBytes   = DefaultMaxEventBytes
	DefaultBytesPerToken = 16 << 10
)

// StreamBytes is the byte cap of a stream of maxTokens.
func StreamBytes(maxTokens int) int64 {
	return DefaultStreamBytes + int64(max(maxTokens, 1))*DefaultBytesPerToken
}

// Errors of a stream's bounds. Match with errors.Is.
var (
	// ErrDeadline: the stream outran its Budget (class "deadline").
	ErrDeadline = errclass.NewCause("deadline", "stream past its deadline")
	// ErrStreamTooLarge: the stream read more bytes than its cap (class
	// "body_too_large", as any other answer over its cap).
	ErrStreamTooLarge = errclass.New(errclass.BodyTooLarge, "stream over its byte cap")
	// ErrLong: more output than max_tokens arrived while reading (class
	// "long", as a long count found by Verify).
	ErrLong = errclass.New("long", "more output than max_tokens")
)

// watch cancels a request when it fires: after d with nothing in between
// (a stall watch, touched by every byte), or at d after the start (a
// deadline, never touched).
type watch struct {
	d      time.Duration
	mu     sync.Mutex
	t      *time.Timer
	didact bool
}

func newWatch(d time.Duration, cancel context.CancelFunc) *watch {
	w := &watch{d: d}
	if d > 0 {
		w.t = time.AfterFunc(d, func() {
			w.mu.Lock()
			w.didact = true
			w.mu.Unlock()
			cancel()
		})
	}
	return w
}

func (w *watch) touch() {
	if w.t != nil {
		w.t.Reset(w.d)
	}
}

func (w *watch) stop() {
	if w.t != nil {
		w.t.Stop()
	}
}

func (w *watch) fired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.didact
}

// boundedReader resets the stall watch on every byte that arrives and
// fails once more than max bytes were read.
type boundedReader struct {
	r    io.Reader
	w    *watch
	n    int64
	max  int64
	over error
}

func (r *boundedReader) Read(p []byte) (int, error) {
	if r.over != nil {
		return 0, r.over
	}
	if left := r.max - r.n + 1; r.max > 0 && int64(len(p)) > left {
		p = p[:left] // one byte past the cap is enough to know
	}
	n, err := r.r.Read(p)
	if n > 0 {
		r.w.touch()
	}
	r.n += int64(n)
	if r.max > 0 && r.n > r.max {
		r.over = fmt.Errorf("%w: more than %d bytes", ErrStreamTooLarge, r.max)
		return 0, r.over
	}
	return n, err
}
