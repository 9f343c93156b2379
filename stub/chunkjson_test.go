package stub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// chunkCases are chunks of every shape the stream writer sends: role,
// content, reasoning (both spellings), multi-token speculative chunks,
// finish reasons, continuous usage, the usage-only chunk, logprobs, and
// text that needs JSON escaping.
func chunkCases() map[string]chunkJSON {
	str := func(s string) *string { return &s }
	base := func(choices []choiceJSON) chunkJSON {
		return chunkJSON{ID: "chatcmpl-faces/0001/q1", Object: "chat.completion.chunk", Created: 1767225600, Model: "google/gemma-4-E2B-it", Choices: choices}
	}
	choice := func(d deltaJSON) choiceJSON {
		return choiceJSON{Index: 0, Delta: d, Logprobs: jsonNull, TokenIDs: jsonNull}
	}
	finished := func(c choiceJSON, reason string) choiceJSON {
		c.FinishReason, c.StopReason = &reason, jsonNull
		return c
	}
	usage := func(ch chunkJSON, p, n int) chunkJSON {
		ch.Usage = &usageJSON{PromptTokens: p, TotalTokens: p + n, CompletionTokens: n}
		return ch
	}
	lp := -0.25
	lps := logprobsJSON([]contentLogprob{
		{logprobEntry: entry("Yes", lp), TopLogprobs: []logprobEntry{entry("Yes", lp), entry("\"No\"\n", -3.5), entry("é\u2028<&>", MinLogprob)}},
		{logprobEntry: logprobEntry{Token: "token_id:42", Bytes: nil}, TopLogprobs: []logprobEntry{}},
	})
	role := base([]choiceJSON{{Index: 0, Delta: deltaJSON{Role: "assistant", Content: str("")}, Logprobs: jsonNull}})
	role.PromptTokenIDs = jsonNull
	withLogprobs := choice(deltaJSON{Content: str("Yes")})
	withLogprobs.Logprobs = lps
	return map[string]chunkJSON{
		"role":                   role,
		"role continuous":        usage(role, 37, 0),
		"content":                base([]choiceJSON{choice(deltaJSON{Content: str(" the")})}),
		"empty content":          base([]choiceJSON{choice(deltaJSON{Content: str("")})}),
		"speculative 3 tokens":   base([]choiceJSON{choice(deltaJSON{Content: str(" a b c")})}),
		"reasoning":              base([]choiceJSON{choice(deltaJSON{Reasoning: str("hmm, ")})}),
		"reasoning_content":      base([]choiceJSON{choice(deltaJSON{ReasoningContent: str("hmm, ")})}),
		"both reasoning keys":    base([]choiceJSON{choice(deltaJSON{Reasoning: str(""), ReasoningContent: str("")})}),
		"reasoning into content": base([]choiceJSON{choice(deltaJSON{Reasoning: str("so"), ReasoningContent: str("so"), Content: str("Yes")})}),
		"stop":                   base([]choiceJSON{finished(choice(deltaJSON{Content: str(".")}), "stop")}),
		"length continuous":      usage(base([]choiceJSON{finished(choice(deltaJSON{Content: str(" w")}), "length")}), 32, 128),
		"escapes":                base([]choiceJSON{choice(deltaJSON{Content: str("\"q\" \\ \n\r\t\b\f \x00\x1f\x7f <a&b> \u2028\u2029 é 日本 🙂 \xff\xfe")})}),
		"logprobs":               base([]choiceJSON{withLogprobs}),
		"no token_ids":           base([]choiceJSON{{Index: 2, Delta: deltaJSON{Content: str("x")}}}),
		"usage only":             usage(base([]choiceJSON{}), 32, 128),
		"nil choices":            base(nil),
		"two choices":            base([]choiceJSON{choice(deltaJSON{Content: str("a")}), choice(deltaJSON{Content: str("b")})}),
	}
}

// TestAppendChunkMatchesMarshal holds the hand encoder to encoding/json
// byte for byte, head included.
func TestAppendChunkMatchesMarshal(t *testing.T) {
	for name, ch := range chunkCases() {
		t.Run(name, func(t *testing.T) {
			want, err := marshal(ch)
			require.NoError(t, err)
			got := appendChunk(nil, chunkHead(&ch), &ch)
			require.Equal(t, string(want), string(got))
			require.True(t, json.Valid(got))
		})
	}
}

// TestAppendChunkAllocations: a chunk into a reused buffer allocates
// nothing.
func TestAppendChunkAllocations(t *testing.T) {
	ch := chunkCases()["length continuous"]
	head := chunkHead(&ch)
	buf := appendChunk(nil, head, &ch)
	require.Zero(t, testing.AllocsPerRun(100, func() { buf = appendChunk(buf[:0], head, &ch) }))
}

// FuzzAppendJSONString holds the string escaping to encoding/json's
// (HTML escaping off) on any bytes.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\/", "\n\r\t\b\f\x00\x01\x1f\x7f", "<>&", "\u2028\u2029", "é日本🙂", "\xff", "a\xe2\x80", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendJSONString(nil, s)))
	})
}

// TestChannelTextOneToken: the one-token fast path splits as the loop
// does, on every side of the end of reasoning.
func TestChannelTextOneToken(t *testing.T) {
	text := func(i int) string { return string(rune('a' + i)) }
	for _, end := range []int{0, 1, 4} {
		for from := range 7 {
			r, c, ok := channelText(from, from+1, end, text)
			switch {
			case end == 0 || from > end:
				require.Equal(t, []any{"", text(from), true}, []any{r, c, ok}, "end %d from %d", end, from)
			case from < end:
				require.Equal(t, []any{text(from), "", true}, []any{r, c, ok}, "end %d from %d", end, from)
			default:
				require.Equal(t, []any{"", "", false}, []any{r, c, ok}, "end %d from %d", end, from)
			}
		}
	}
}

// discardWriter is a ResponseWriter that throws the body away.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkStreamChunk is the stream writer's cost of putting one token's
// chunk on the wire (a continuous-usage content chunk): json is the
// former encoder (marshal and fmt.Fprintf), append the hand encoder.
func BenchmarkStreamChunk(b *testing.B) {
	ch := chunkCases()["length continuous"]
	b.Run("enc=json", func(b *testing.B) {
		w := &discardWriter{h: http.Header{}}
		for b.Loop() {
			c := ch
			buf, err := marshal(c)
			require.NoError(b, err)
			_, _ = fmt.Fprintf(w, "data: %s\n\n", buf)
		}
	})
	b.Run("enc=append", func(b *testing.B) {
		out := &sse{w: &discardWriter{h: http.Header{}}}
		head := chunkHead(&ch)
		for b.Loop() {
			c := ch
			out.chunk(head, &c)
		}
	})
}
