package judgments

import (
	"context"
	"fmt"
	"strings"
)

// Dispatch is how a client sends the requests of one judgment.
type Dispatch string

// Dispatches.
const (
	// DispatchInOrder asks the questions one after another, the control
	// tokens pinned once per client (the default).
	DispatchInOrder Dispatch = "in-order"
	// DispatchFanOut asks a judgment's questions all at once.
	DispatchFanOut Dispatch = "fan-out"
	// DispatchTypevet drives the server as typevet's client does: before
	// every judgment one uncached POST /tokenize per control of every
	// question, one after another in question order (10 for faces, 15 for
	// checks, 11 for signatures), then the questions one after another.
	// The tokenize calls are inside the judgment's latency, as in typevet's
	// receipts, so a typevet receipt is a fair speed baseline for it.
	DispatchTypevet Dispatch = "typevet"
)

// Dispatches lists the dispatch modes, the default first.
func Dispatches() []Dispatch { return []Dispatch{DispatchInOrder, DispatchFanOut, DispatchTypevet} }

// ParseDispatch reads a dispatch mode by name.
func ParseDispatch(s string) (Dispatch, error) {
	d := Dispatch(strings.TrimSpace(s))
	for _, k := range Dispatches() {
		if d == k {
			return d, nil
		}
	}
	return "", fmt.Errorf("unknown dispatch %q (want in-order, fan-out or typevet)", s)
}

// WithDispatch sets how a judgment's requests are sent ("": in order).
func WithDispatch(d Dispatch) ClientOption {
	return func(c *Client) {
		if d == "" {
			d = DispatchInOrder
		}
		c.dispatch = d
	}
}

// WithFanOut sends the questions of one judgment at once instead of one
// after another (WithDispatch(DispatchFanOut)); off is DispatchInOrder.
func WithFanOut(on bool) ClientOption {
	if on {
		return WithDispatch(DispatchFanOut)
	}
	return WithDispatch(DispatchInOrder)
}

// Dispatch is how the client sends a judgment's requests.
func (c *Client) Dispatch() Dispatch { return c.dispatch }

// FanOut says whether the client sends a judgment's questions at once.
func (c *Client) FanOut() bool { return c.dispatch == DispatchFanOut }

// tokenizeControls is typevet's preparation of one judgment: every control
// of every question tokenized anew, in question order, one request at a
// time, none cached. Each answer must be the one token pinned for the
// control: a server whose tokenizer changed during a run has no comparable
// scores. It returns the number of /tokenize requests sent.
func (c *Client) tokenizeControls(ctx context.Context, spec Spec, controls Controls, item string) (int, error) {
	n := 0
	for _, q := range spec.Questions {
		for _, ctrl := range q.Controls() {
			ids, err := c.tokenize(ctx, ctrl)
			n++
			if err != nil {
				return n, &JudgeError{Item: item, Question: q.ID, Err: err}
			}
			want, pinned := controls[ctrl]
			switch {
			case len(ids) != 1:
				return n, &JudgeError{Item: item, Question: q.ID, Err: fmt.Errorf("tokenize %q: %d tokens, want 1", ctrl, len(ids))}
			case pinned && ids[0] != want:
				return n, &JudgeError{Item: item, Question: q.ID, Err: fmt.Errorf("tokenize %q: token %d, pinned %d at the start of the run: the server's tokenizer changed", ctrl, ids[0], want)}
			}
		}
	}
	return n, nil
}

// TypevetTokenizeCalls is how many POST /tokenize the typevet dispatch
// sends before each judgment of spec: one per control of every question.
func TypevetTokenizeCalls(spec Spec) int {
	n := 0
	for _, q := range spec.Questions {
		n += len(q.Controls())
	}
	return n
}
