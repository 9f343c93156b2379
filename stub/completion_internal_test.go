package stub

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTextChunkMatchesMarshal: a completion chunk appended by hand is
// byte for byte what marshal makes of the same chunk (text that needs
// escaping, a finish reason, logprobs, running usage).
func TestTextChunkMatchesMarshal(t *testing.T) {
	type chunk struct {
		ID      string           `json:"id"`
		Object  string           `json:"object"`
		Created int64            `json:"created"`
		Model   string           `json:"model"`
		Choices []textChoiceJSON `json:"choices"`
		Usage   *usageJSON       `json:"usage,omitempty"`
	}
	reason := "length"
	lps := completionLogprobsJSON([]contentLogprob{{logprobEntry: entry("a\"b", -0.5), TopLogprobs: []logprobEntry{entry("a\"b", -0.5), entry("<&>", -20000)}}}, 3)
	for name, tc := range map[string]struct {
		choice textChoiceJSON
		usage  *usageJSON
	}{
		"plain":    {choice: textChoiceJSON{Text: "The", Logprobs: jsonNull}},
		"escaping": {choice: textChoiceJSON{Text: "\"quoted\"\n<tag> & é\u2028", Logprobs: jsonNull}},
		"last":     {choice: textChoiceJSON{Text: " end", Logprobs: jsonNull, FinishReason: &reason}, usage: &usageJSON{PromptTokens: 5, TotalTokens: 9, CompletionTokens: 4}},
		"logprobs": {choice: textChoiceJSON{Text: "a\"b", Logprobs: lps}},
	} {
		t.Run(name, func(t *testing.T) {
			ch := chunk{ID: "cmpl-x", Object: "text_completion", Created: 1700000000, Model: "m/\"q\"", Choices: []textChoiceJSON{tc.choice}, Usage: tc.usage}
			want, err := marshal(ch)
			require.NoError(t, err)
			rec := httptest.NewRecorder()
			out := &sse{w: rec}
			out.textChunk(chunkHead(&chunkJSON{ID: ch.ID, Object: ch.Object, Created: ch.Created, Model: ch.Model}), &tc.choice, tc.usage)
			require.NoError(t, out.err)
			require.Equal(t, "data: "+string(want)+"\n\n", rec.Body.String())
		})
	}
	var v map[string]any
	require.NoError(t, json.Unmarshal(lps, &v))
	require.Equal(t, map[string]any{"text_offset": []any{3.0}, "token_logprobs": []any{-0.5}, "tokens": []any{"a\"b"},
		"top_logprobs": []any{map[string]any{"a\"b": -0.5, "<&>": -9999.0}}}, v, "one entry per token text, floored at -9999")
}
