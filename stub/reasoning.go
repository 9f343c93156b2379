package stub

import (
	"fmt"
	"strconv"
	"strings"
)

// Reasoning output, as vllm serve --reasoning-parser splits it: a thinking
// model writes its reasoning, then an end-of-thinking token ("</think>"
// for DeepSeek's parsers), then its answer. The parser sends what comes
// before the end token as reasoning and what comes after as content; the
// end token itself is neither. In a stream
// (DeepSeekR1ReasoningParser.extract_reasoning_streaming) an output that
// is the end token alone yields no delta, and the chat stream sends no
// chunk for it; an output that spans the end token carries both fields.
// Reasoning tokens count in usage.completion_tokens like any other.
//
// DeepSeek's V3 and V4 parsers (deepseek_v3, deepseek_v4) think only when
// the request's chat_template_kwargs set "thinking" or "enable_thinking"
// (they fall back to the identity parser, all content, otherwise);
// deepseek_r1 always thinks.

// Reasoning is a profile's --reasoning-parser and whether its model thinks
// when a request does not say.
type Reasoning struct {
	// Parser is --reasoning-parser: deepseek_r1, deepseek_v3 or
	// deepseek_v4.
	Parser string `json:"parser"`
	// ThinkByDefault is what a deepseek_v3/deepseek_v4 request without a
	// thinking kwarg gets, as the server's --default-chat-template-kwargs
	// '{"thinking": true}' would give it.
	ThinkByDefault bool `json:"think_by_default,omitempty"`
}

// TokenThinkEnd is the twin's end-of-thinking token ("</think>"). It
// writes no text in either channel.
const TokenThinkEnd = 103

// reasoningParsers are the parsers the twin knows, and whether each
// thinks only when asked (true) or always (false).
var reasoningParsers = map[string]bool{"deepseek_r1": false, "deepseek_v3": true, "deepseek_v4": true}

func (r *Reasoning) validate() error {
	if r == nil {
		return nil
	}
	if _, ok := reasoningParsers[r.Parser]; !ok {
		return fmt.Errorf("reasoning parser %q: the twin knows deepseek_r1, deepseek_v3, deepseek_v4", r.Parser)
	}
	return nil
}

// thinks says whether a request with these chat_template_kwargs thinks.
func (r *Reasoning) thinks(kwargs map[string]any) bool {
	if r == nil {
		return false
	}
	if !reasoningParsers[r.Parser] {
		return true
	}
	on, said := false, false
	for _, k := range []string{"thinking", "enable_thinking"} {
		if v, ok := kwargs[k].(bool); ok {
			on, said = on || v, true
		}
	}
	if !said {
		return r.ThinkByDefault
	}
	return on
}

// Reasoning lengths: a thinking request writes its end-of-thinking token
// after this share of its natural length, or, with ignore_eos (no natural
// length), after a number of tokens in [minThinkTokens, maxThinkTokens],
// both drawn by its content.
const (
	minThinkShare  = 0.3
	maxThinkShare  = 0.8
	minThinkTokens = 256
	maxThinkTokens = 3072
)

// thinkEnd is the output position of a thinking request's end-of-thinking
// token: before it, reasoning; after it, content.
func thinkEnd(key []byte, eosAt int) int {
	r := newRNG(key, []byte("think length"))
	if eosAt > 0 {
		return max(1, min(eosAt-2, int(float64(eosAt)*r.between(minThinkShare, maxThinkShare))))
	}
	return minThinkTokens + int(r.next()%uint64(maxThinkTokens-minThinkTokens+1))
}

// channelText splits the text of output positions [from, to) into
// reasoning and content: positions before end are reasoning, end writes
// nothing, later ones are content (end 0: no reasoning, all content).
// text gives position i's text.
func channelText(from, to, end int, text func(i int) string) (reasoning, content string, any bool) {
	if to == from+1 && (end == 0 || from != end) {
		// One token, the stream's usual chunk: its text as it is, without
		// building a string.
		if end > 0 && from < end {
			return text(from), "", true
		}
		return "", text(from), true
	}
	var r, c strings.Builder
	for i := from; i < to; i++ {
		switch {
		case end > 0 && i < end:
			r.WriteString(text(i))
		case end > 0 && i == end:
		default:
			c.WriteString(text(i))
		}
	}
	onlyEnd := end > 0 && from == end && to == end+1
	return r.String(), c.String(), !onlyEnd
}

// reasoningKeys says which keys carry reasoning in a delta and a message
// on vLLM release version: "reasoning_content" before PR #27752
// (`reasoning_content` → `reasoning`, merged 2025-10-31; first release
// 0.11.1, inferred from the merge date), both while the old name was kept
// for compatibility, "reasoning" alone since PR #33402 removed
// reasoning_content (merged 2026-01-30; 0.16.0, as third-party client
// reports date it). An unparsable version reads as the newest.
func reasoningKeys(version string) (reasoning, reasoningContent bool) {
	v, ok := parseVersion(version)
	switch {
	case !ok:
		return true, false
	case lessVersion(v, [3]int{0, 11, 1}):
		return false, true
	case lessVersion(v, [3]int{0, 16, 0}):
		return true, true
	}
	return true, false
}

// parseVersion reads major.minor.patch from a vLLM version string such as
// "0.28.1rc1.dev317+g1356635d8" (the patch's trailing letters dropped).
func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return v, false
	}
	for i, p := range parts {
		end := 0
		for end < len(p) && p[end] >= '0' && p[end] <= '9' {
			end++
		}
		if end == 0 {
			return v, false
		}
		n, err := strconv.Atoi(p[:end])
		if err != nil {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func lessVersion(a, b [3]int) bool {
	return a[0] < b[0] || a[0] == b[0] && (a[1] < b[1] || a[1] == b[1] && a[2] < b[2])
}
