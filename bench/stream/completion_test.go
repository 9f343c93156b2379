package stream

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A completion request goes to /v1/completions with its prompt and no
// messages; a request with both, or a chat template for a completion, is
// refused; its text chunks are read as a chat stream's deltas are (the
// first chunk with choices its TTFT, text into the content, the usage
// chunk its count).
func TestCompletionRequest(t *testing.T) {
	r := Completion("Once upon", 4)
	require.Equal(t, CompletionsPath, r.Path())
	require.Equal(t, Path, Text("hi", 4).Path())
	body, err := r.Body()
	require.NoError(t, err)
	var w map[string]any
	require.NoError(t, json.Unmarshal(body, &w))
	require.Equal(t, "Once upon", w["prompt"])
	require.NotContains(t, w, "messages")
	require.Equal(t, true, w["ignore_eos"])

	both := r
	both.Messages = []Message{{Text: "hi"}}
	require.ErrorContains(t, both.Validate(), "both a prompt and messages")
	tmpl := r
	tmpl.ChatTemplateKwargs = map[string]any{"enable_thinking": false}
	require.ErrorContains(t, tmpl.Validate(), "no chat template")

	res := &Result{}
	c := &collector{res: res}
	t0 := time.Unix(0, 0)
	for i, ev := range []string{
		`{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" a","logprobs":null,"finish_reason":null}]}`,
		`{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" time","logprobs":null,"finish_reason":"length"}]}`,
		`{"id":"cmpl-1","object":"text_completion","choices":[],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2}}`,
		`[DONE]`,
	} {
		_, _, err := c.event(t0.Add(time.Duration(i)*time.Millisecond), []byte(ev))
		require.NoError(t, err, ev)
	}
	c.finish()
	require.Equal(t, " a time", res.Content)
	require.Equal(t, t0, res.FirstToken)
	require.Equal(t, 2, res.OutputTokens)
	require.Equal(t, "length", res.FinishReason)
	require.True(t, res.Done)
}
