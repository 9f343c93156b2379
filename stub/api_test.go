package stub

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnmodelledFeaturesRefused shows what the twin cannot do is refused
// with a 400 that says so, never silently ignored (streaming it does:
// stream_test.go).
func TestUnmodelledFeaturesRefused(t *testing.T) {
	rs, err := Start(Config{})
	require.NoError(t, err)
	defer rs.Close()
	for _, tc := range []struct{ extra, param string }{
		{`"n": 2`, "n"},
		{`"structured_outputs": {"choice": ["0", "1"]}`, "structured_outputs"},
		{`"response_format": {"type": "json_object"}`, "response_format"},
		{`"logprob_token_ids": [1, 2], "logprobs": false`, "logprob_token_ids"},
		{`"top_logprobs": -2, "logprobs": true`, "top_logprobs"},
		{`"top_logprobs": "five", "logprobs": true`, "top_logprobs"},
	} {
		body := `{"model":"` + rs.Model() + `","max_tokens":1,"messages":[{"role":"user","content":"hi"}],` + tc.extra + `}`
		res, err := http.Post(rs.URL()+"/v1/chat/completions", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		data, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusBadRequest, res.StatusCode, "%s: %s", tc.extra, data)
		var e struct {
			Error struct {
				Param string `json:"param"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(data, &e))
		require.Equal(t, tc.param, e.Error.Param, tc.extra)
	}
	res, err := http.Post(rs.URL()+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`))
	require.NoError(t, err)
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, string(data), "only reads data: URLs")
}

// TestGenerationAndTokenize covers the parts vetbench's client does not
// use: generating more than one token, /tokenize on chat messages with
// token strings, /detokenize.
func TestGenerationAndTokenize(t *testing.T) {
	rs, err := Start(Config{})
	require.NoError(t, err)
	defer rs.Close()
	post := func(path, body string, v any) {
		t.Helper()
		res, err := http.Post(rs.URL()+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s", data)
		require.NoError(t, json.Unmarshal(data, v))
	}
	var chat struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			Logprobs struct {
				Content []any `json:"content"`
			} `json:"logprobs"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	post("/v1/chat/completions", `{"max_tokens":5,"logprobs":true,"top_logprobs":2,"messages":[{"role":"user","content":"Tell me."}]}`, &chat)
	require.Equal(t, 5, chat.Usage.CompletionTokens)
	require.Len(t, chat.Choices[0].Logprobs.Content, 5)
	require.NotEmpty(t, chat.Choices[0].Message.Content)
	require.Equal(t, "length", chat.Choices[0].FinishReason)

	var tok struct {
		Count     int      `json:"count"`
		Tokens    []int    `json:"tokens"`
		TokenStrs []string `json:"token_strs"`
	}
	post("/tokenize", `{"prompt":"10 A","return_token_strs":true}`, &tok)
	require.Equal(t, []string{"<bos>", "1", "0", "▁A"}, tok.TokenStrs, "special tokens added by default, digits split")
	post("/tokenize", `{"messages":[{"role":"user","content":"Tell me."}]}`, &tok)
	require.Equal(t, chat.Usage.PromptTokens, tok.Count, "the chat form counts what the chat endpoint counts")
	var detok struct {
		Prompt string `json:"prompt"`
	}
	post("/detokenize", `{"tokens":[236801,236800]}`, &detok)
	require.Equal(t, "10", detok.Prompt)
}
