package stream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vetbench/vetbench/judgments"
)

// chunk is the part of a chat.completion.chunk (or a text_completion
// chunk: text instead of a delta) that the client reads.
type chunk struct {
	Choices []struct {
		Index int     `json:"index"`
		Text  *string `json:"text"`
		Delta struct {
			Content   *string `json:"content"`
			Reasoning *string `json:"reasoning"`
			// reasoning_content is the older name of reasoning.
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens            int `json:"prompt_tokens"`
		CompletionTokens        int `json:"completion_tokens"`
		CompletionTokensDetails *struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
	// Object "error" with a message is the flat error shape of vLLM before
	// 0.10.1.
	Object string `json:"object"`
}

// Update is what one chunk brought, handed to an Observer as it arrives.
type Update struct {
	Time      time.Time
	Content   string
	Reasoning string
	// Tokens is the running completion_tokens when the chunk carried
	// usage, -1 otherwise.
	Tokens int
	// Final marks the usage-only chunk.
	Final bool
}

// Observer sees every chunk as it arrives, after the Result took it in. A
// non-nil error stops the stream; the Result keeps what arrived and
// carries the error wrapped in ErrAborted (a loop detector stops a looping
// request this way).
type Observer func(Update) error

// collector turns events into a Result.
type collector struct {
	res       *Result
	content   strings.Builder
	reasoning strings.Builder
	running   int // last running completion_tokens seen
	// max is the request's max_tokens: more output than it is an error
	// as it arrives (0: unchecked).
	max int
}

func (c *collector) finish() {
	c.res.Content = c.content.String()
	c.res.Reasoning = c.reasoning.String()
}

// event takes one event's data that arrived at t. It reports [DONE], and an
// error for an error object or a chunk that does not parse.
func (c *collector) event(t time.Time, data []byte) (Update, bool, error) {
	up := Update{Time: t, Tokens: -1}
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		c.res.Done = true
		return up, true, nil
	}
	var ch chunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return up, false, fmt.Errorf("%w: %v: %s", ErrMalformed, err, excerpt(data))
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		return up, false, serverError(ch.Error)
	}
	if ch.Object == "error" {
		return up, false, serverError(data)
	}
	r := c.res
	if len(ch.Choices) > 0 {
		c.choices(t, &ch, &up)
	}
	if u := ch.Usage; u != nil {
		if u.PromptTokens > 0 {
			r.PromptTokens = u.PromptTokens
		}
		up.Tokens = u.CompletionTokens
		if len(ch.Choices) == 0 {
			// The usage-only final chunk: the server's total.
			up.Final = true
			r.OutputTokens, r.TokensFrom = u.CompletionTokens, FromUsage
			if d := u.CompletionTokensDetails; d != nil {
				r.ReasoningTokens = d.ReasoningTokens
			}
		} else {
			if u.CompletionTokens > c.running {
				c.running = u.CompletionTokens
				r.Timeline = append(r.Timeline, Point{T: t, Tokens: u.CompletionTokens})
			}
			if r.TokensFrom != FromUsage {
				r.OutputTokens, r.TokensFrom = c.running, FromContinuous
			}
		}
	}
	return up, false, c.overrun(up)
}

// overrun is ErrLong when the stream brought more than max_tokens: by the
// server's running or final count, or by text chunks (each carries at
// least one token), so a server that streams on past what was asked is
// stopped as it does.
func (c *collector) overrun(up Update) error {
	r := c.res
	switch {
	case c.max <= 0:
		return nil
	case up.Tokens > c.max:
		return fmt.Errorf("%w: completion_tokens %d, asked %d", ErrLong, up.Tokens, c.max)
	case r.Chunks > c.max:
		return fmt.Errorf("%w: %d text chunks, asked %d tokens", ErrLong, r.Chunks, c.max)
	}
	return nil
}

// choices takes a chunk's choices: the record `vllm bench serve` keeps
// (its TTFT at the first chunk with choices, a gap per later one, the last
// one ending its latency) and the text per channel.
func (c *collector) choices(t time.Time, ch *chunk, up *Update) {
	r := c.res
	// vllm bench serve's record (endpoint_request_func.py, chat): the
	// first chunk with choices is its TTFT, every later one adds a gap
	// to its ITL list, the last one ends its latency.
	if r.FirstChunk.IsZero() {
		r.FirstChunk = t
	} else {
		r.ChunkGaps = append(r.ChunkGaps, t.Sub(r.LastChunk))
	}
	r.LastChunk = t
	// n = 1 requests: choice 0 only.
	for _, cc := range ch.Choices {
		if cc.Index != 0 {
			continue
		}
		if cc.Delta.Content != nil {
			up.Content += *cc.Delta.Content
		}
		if cc.Text != nil {
			up.Content += *cc.Text
		}
		switch {
		case cc.Delta.Reasoning != nil:
			up.Reasoning += *cc.Delta.Reasoning
		case cc.Delta.ReasoningContent != nil:
			up.Reasoning += *cc.Delta.ReasoningContent
		}
		if cc.FinishReason != nil && *cc.FinishReason != "" {
			r.FinishReason = *cc.FinishReason
		}
	}
	if up.Content != "" || up.Reasoning != "" {
		if r.FirstToken.IsZero() {
			r.FirstToken = t
		}
		r.LastToken = t
		r.Chunks++
		c.content.WriteString(up.Content)
		c.reasoning.WriteString(up.Reasoning)
		if r.TokensFrom == "" || r.TokensFrom == FromChunks {
			r.OutputTokens, r.TokensFrom = r.Chunks, FromChunks
		}
	}
}

// serverError reads the error member of a chunk: an object {message,
// type, param, code} (code an int or a string), or a bare string. Its
// strings are made printable (judgments.Printable): they reach the
// terminal.
func serverError(raw json.RawMessage) *ServerError {
	e := readServerError(raw)
	e.Message, e.Type, e.Param = judgments.Printable(e.Message), judgments.Printable(e.Type), judgments.Printable(e.Param)
	return e
}

// readServerError is serverError before its strings are made printable.
func readServerError(raw json.RawMessage) *ServerError {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &ServerError{Message: s}
	}
	var e struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Param   *string         `json:"param"`
		Code    json.RawMessage `json:"code"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return &ServerError{Message: excerpt(raw)}
	}
	out := &ServerError{Message: e.Message, Type: e.Type}
	if e.Param != nil {
		out.Param = *e.Param
	}
	if n, err := strconv.Atoi(strings.Trim(string(e.Code), `"`)); err == nil {
		out.Code = n
	}
	return out
}

func excerpt(b []byte) string {
	const n = 200
	if len(b) > n {
		return strconv.Quote(string(b[:n])) + "…"
	}
	return strconv.Quote(string(b))
}
