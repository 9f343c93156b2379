package stub_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/stub"
)

// The completion tests drive POST /v1/completions as `vllm bench serve`
// does by default (--backend openai: its payload, and its reading of the
// stream in async_request_openai_completions) and check vLLM's
// CompletionResponse shapes field for field.

// benchServePayload is the openai backend's payload for one random-dataset
// request (ignore_eos forced on, logprobs sent as null).
func benchServePayload(model, prompt string, outputLen int) string {
	return fmt.Sprintf(`{"model":%q,"prompt":%s,"repetition_penalty":1.0,"max_tokens":%d,"logprobs":null,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`,
		model, prompt, outputLen)
}

// timedEvent is one SSE payload and when it arrived after the request was
// sent (fake time: the twin writes each at its modelled time).
type timedEvent struct {
	at   time.Duration
	data string
}

func (tw *twin) timedEvents(t *testing.T, path, body string) []timedEvent {
	t.Helper()
	st := time.Now()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, twinURL+path, strings.NewReader(body))
	require.NoError(t, err)
	res, err := tw.hc.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	dec := stream.NewDecoder(res.Body)
	var out []timedEvent
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, timedEvent{at: time.Since(st), data: string(ev.Data)})
	}
}

// benchServeRead is what async_request_openai_completions takes from a
// stream: TTFT at the first chunk with choices, a gap per later one, the
// latency at the last, the text, and output_tokens from the usage chunk.
type benchServeRead struct {
	ttft, latency time.Duration
	itl           []time.Duration
	text          string
	outputTokens  int
}

func readAsBenchServe(t *testing.T, evs []timedEvent) benchServeRead {
	t.Helper()
	require.Equal(t, "[DONE]", evs[len(evs)-1].data)
	var out benchServeRead
	first := true
	for _, ev := range evs[:len(evs)-1] {
		var ch struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Choices []struct {
				Text  *string         `json:"text"`
				Delta json.RawMessage `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.data), &ch), ev.data)
		require.True(t, strings.HasPrefix(ch.ID, "cmpl-"), ev.data)
		require.Equal(t, "text_completion", ch.Object, ev.data)
		if len(ch.Choices) == 0 {
			require.NotNil(t, ch.Usage, "a chunk without choices is the usage chunk: %s", ev.data)
			out.outputTokens = ch.Usage.CompletionTokens
			continue
		}
		require.Nil(t, ch.Choices[0].Delta, "a completion chunk has text, not a delta: %s", ev.data)
		require.NotNil(t, ch.Choices[0].Text, ev.data)
		out.text += *ch.Choices[0].Text
		if first {
			out.ttft, first = ev.at, false
		} else {
			out.itl = append(out.itl, ev.at-out.latency)
		}
		out.latency = ev.at
	}
	return out
}

// TestCompletionsAsBenchServe: the payload `vllm bench serve` sends by
// default is served — one text chunk per token, the usage chunk with
// completion_tokens = max_tokens, [DONE] — and the engine serves it as it
// serves the chat request of the same prompt tokens: the same time to
// first token, gaps and latency on fake time (one engine behind both
// endpoints; only the shapes differ).
func TestCompletionsAsBenchServe(t *testing.T) {
	const n = 24
	var ids []int
	var chat []time.Duration // each chunk's arrival, the role chunk's included
	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{})
		var tok struct {
			Tokens []int `json:"tokens"`
		}
		code, body := tw.post(t, "/tokenize", `{"messages":[{"role":"user","content":"Write the history of mathematics."}]}`)
		require.Equal(t, http.StatusOK, code, body)
		require.NoError(t, json.Unmarshal([]byte(body), &tok))
		ids = tok.Tokens
	})
	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{})
		for _, ev := range tw.timedEvents(t, "/v1/chat/completions", chatBody(tw.Model(), n, `"stream":true,"ignore_eos":true,`)) {
			chat = append(chat, ev.at)
		}
	})
	require.Len(t, chat, 1+n+1, "role, %d tokens, [DONE]", n)
	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{})
		idsJSON, err := json.Marshal(ids)
		require.NoError(t, err)
		got := readAsBenchServe(t, tw.timedEvents(t, "/v1/completions", benchServePayload(tw.Model(), string(idsJSON), n)))
		require.Equal(t, n, got.outputTokens)
		require.Len(t, got.itl, n-1, "one chunk per token after the first")
		require.NotEmpty(t, got.text)
		require.Positive(t, got.ttft)
		require.Equal(t, chat[1], got.ttft, "the same prompt tokens: the first token when chat's comes")
		require.Equal(t, chat[n], got.latency, "and the last")
		for i, gap := range got.itl {
			require.Equal(t, chat[i+2]-chat[i+1], gap, "gap %d", i)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{})
		got := readAsBenchServe(t, tw.timedEvents(t, "/v1/completions", benchServePayload(tw.Model(), `"Write the history of mathematics."`, n)))
		require.Equal(t, n, got.outputTokens, "a string prompt")
		require.Len(t, got.itl, n-1)
	})
}

// TestCompletionShape: a whole completion has CompletionResponse's fields
// and a choice's, max_tokens defaults to 16 (absent or null), the prompt
// is counted with <bos> unless add_special_tokens is false, and token ids
// are taken as they are.
func TestCompletionShape(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{})
		get := func(body string) map[string]any {
			t.Helper()
			code, data := tw.post(t, "/v1/completions", body)
			require.Equal(t, http.StatusOK, code, data)
			var v map[string]any
			require.NoError(t, json.Unmarshal([]byte(data), &v))
			return v
		}
		v := get(`{"prompt":"Tell me a story.","ignore_eos":true}`)
		require.Equal(t, []string{"choices", "created", "ec_transfer_params", "id", "kv_transfer_params", "metrics", "model",
			"object", "service_tier", "system_fingerprint", "usage"}, keys(v))
		require.Equal(t, "text_completion", v["object"])
		choice := v["choices"].([]any)[0].(map[string]any)
		require.Equal(t, []string{"finish_reason", "index", "logprobs", "prompt_logprobs", "prompt_token_ids", "routed_experts",
			"stop_reason", "text", "token_ids"}, keys(choice))
		require.Equal(t, "length", choice["finish_reason"])
		require.NotEmpty(t, choice["text"])
		usage := v["usage"].(map[string]any)
		require.EqualValues(t, 16, usage["completion_tokens"], "vLLM's default max_tokens")
		withBOS := usage["prompt_tokens"].(float64)

		v = get(`{"prompt":"Tell me a story.","ignore_eos":true,"max_tokens":null,"add_special_tokens":false}`)
		usage = v["usage"].(map[string]any)
		require.EqualValues(t, 16, usage["completion_tokens"], "null is the default too")
		require.Equal(t, withBOS-1, usage["prompt_tokens"].(float64), "no <bos> without special tokens")

		v = get(`{"prompt":[2, 1234, 5678],"max_tokens":3,"ignore_eos":true}`)
		require.EqualValues(t, 3, v["usage"].(map[string]any)["prompt_tokens"])
		v = get(`{"prompt":[[2, 1234]],"max_tokens":2}`)
		require.EqualValues(t, 2, v["usage"].(map[string]any)["prompt_tokens"], "a list holding one prompt of ids")

		echo := get(`{"prompt":"Say it.","echo":true,"max_tokens":4,"ignore_eos":true}`)
		plain := get(`{"prompt":"Say it.","max_tokens":4,"ignore_eos":true}`)
		require.Equal(t, "Say it."+text(plain), text(echo), "echo answers the prompt, then the completion")
	})
}

func text(v map[string]any) string {
	return v["choices"].([]any)[0].(map[string]any)["text"].(string)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// completionLogprobs is CompletionLogProbs with top_logprobs kept in
// order.
type completionLogprobs struct {
	TextOffset    []int             `json:"text_offset"`
	TokenLogprobs []float64         `json:"token_logprobs"`
	Tokens        []string          `json:"tokens"`
	TopLogprobs   []json.RawMessage `json:"top_logprobs"`
}

// orderedKeys are a JSON object's keys in the order they stand.
func orderedKeys(t *testing.T, raw json.RawMessage) ([]string, map[string]float64) {
	t.Helper()
	var m map[string]float64
	require.NoError(t, json.Unmarshal(raw, &m))
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	_, err := dec.Token()
	require.NoError(t, err)
	var out []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		out = append(out, k.(string))
		_, err = dec.Token()
		require.NoError(t, err)
	}
	return out, m
}

// TestCompletionLogprobs: the completion logprobs shape, whole and
// streamed — text_offset counts characters from the start of the text, the
// tokens spell it, and each position's dict holds the sampled token first
// and then the top ones, at most logprobs+1 entries (1 with logprobs 0);
// with logprob_token_ids, the sampled token and the asked ones.
func TestCompletionLogprobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{})
		for _, tc := range []struct {
			extra string
			max   int // entries per position
		}{
			{`"logprobs":0`, 1},
			{`"logprobs":3`, 4},
			{`"logprobs":0,"logprob_token_ids":[236800,236801]`, 3},
		} {
			code, data := tw.post(t, "/v1/completions", `{"prompt":"Name a colour.","max_tokens":6,"ignore_eos":true,`+tc.extra+`}`)
			require.Equal(t, http.StatusOK, code, data)
			var resp struct {
				Choices []struct {
					Text     string             `json:"text"`
					Logprobs completionLogprobs `json:"logprobs"`
				} `json:"choices"`
			}
			require.NoError(t, json.Unmarshal([]byte(data), &resp))
			ch := resp.Choices[0]
			lp := ch.Logprobs
			require.Len(t, lp.Tokens, 6, tc.extra)
			require.Equal(t, ch.Text, strings.Join(lp.Tokens, ""), "the tokens spell the text")
			off := 0
			for i, tok := range lp.Tokens {
				require.Equal(t, off, lp.TextOffset[i], "%s: text_offset[%d]", tc.extra, i)
				off += utf8.RuneCountInString(tok)
				order, m := orderedKeys(t, lp.TopLogprobs[i])
				require.NotEmpty(t, order, "%s: position %d has its sampled token at least", tc.extra, i)
				require.Equal(t, tok, order[0], "%s: the sampled token first", tc.extra)
				require.Equal(t, lp.TokenLogprobs[i], m[tok])
				require.LessOrEqual(t, len(order), tc.max, tc.extra)
				if tc.max == 3 {
					require.Contains(t, order, "0", "the asked ids are there")
					require.Contains(t, order, "1")
				}
				if tc.max == 1 {
					require.Len(t, order, 1)
				}
			}
		}

		code, evs := tw.eventsAt(t, "/v1/completions", `{"prompt":"Name a colour.","max_tokens":6,"ignore_eos":true,"logprobs":2,"stream":true}`)
		require.Equal(t, http.StatusOK, code)
		off := 0
		for _, ev := range evs[:len(evs)-1] {
			var ch struct {
				Choices []struct {
					Text     string             `json:"text"`
					Logprobs completionLogprobs `json:"logprobs"`
				} `json:"choices"`
			}
			require.NoError(t, json.Unmarshal([]byte(ev), &ch), ev)
			c := ch.Choices[0]
			require.Equal(t, off, c.Logprobs.TextOffset[0], "a chunk's offsets go on from the text already sent: %s", ev)
			require.Equal(t, c.Text, strings.Join(c.Logprobs.Tokens, ""))
			off += utf8.RuneCountInString(c.Text)
		}
	})
}

// TestCompletionRefused: vLLM's 400s for a bad completion request, and a
// 400 that says so for what the twin does not model — never a silent
// answer to a question it was not asked.
func TestCompletionRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{})
		for _, tc := range []struct{ body, param, msg string }{
			{`{"max_tokens":3}`, "prompt", "Either prompt or prompt_embeds must be provided and non-empty."},
			{`{"prompt":""}`, "prompt", "Either prompt or prompt_embeds must be provided and non-empty."},
			{`{"prompt":"a","logprobs":-2}`, "logprobs", "`logprobs` must be a positive value or -1. (parameter=logprobs, value=-2)"},
			{`{"prompt":"a","logprobs":"x"}`, "logprobs", "`logprobs` must be an integer."},
			{`{"prompt":"a","logprob_token_ids":[5]}`, "logprob_token_ids", "when using `logprob_token_ids`, `logprobs` must be set."},
			{`{"prompt":"a","logprob_token_ids":[],"logprobs":1}`, "logprob_token_ids", "must not be an empty list"},
			{`{"prompt":"a","stream_options":{"include_usage":true}}`, "stream_options", "Stream options can only be defined when `stream=True`."},
			{`{"prompt":"a","prompt_logprobs":1,"stream":true}`, "prompt_logprobs", "not available when `stream=True`"},
			{`{"prompt":"a","max_tokens":0}`, "max_tokens", "max_tokens must be at least 1, got 0."},
			{`{"prompt":"a","logprobs":21}`, "logprobs", "Requested sample logprobs of 21, which is greater than max allowed: 20"},
			{`{"prompt":"a","max_tokens":9000}`, "input_tokens", "This model's maximum context length is"},
			{`{"prompt":[]}`, "", "The decoder prompt cannot be empty"},
			{`{"prompt":[999999]}`, "", "Token id 999999 is out of vocabulary"},
			{`{"prompt":[-1]}`, "prompt", "greater than or equal to 0"},
			// Lengths before ids, as vLLM's renderer checks them before its
			// input processor: too long, however bad its ids.
			{`{"prompt":[` + strings.Repeat("999999,", 9000) + `1]}`, "input_tokens", "This model's maximum context length is 8192 tokens"},
			{`{"prompt":{"text":"a"}}`, "prompt", "Input should be a valid string or a list of token ids"},
			// Not modelled: said so.
			{`{"prompt":["a","b"]}`, "prompt", "one prompt per completion request (got 2)"},
			{`{"prompt":"a","n":2}`, "n", "n=1 only"},
			{`{"prompt":"a","prompt_logprobs":1}`, "prompt_logprobs", "does not compute prompt logprobs"},
			{`{"prompt":"a","echo":true,"logprobs":1}`, "prompt_logprobs", "does not compute prompt logprobs"},
			{`{"prompt":"a","echo":true,"max_tokens":0}`, "max_tokens", "echo without generation"},
			{`{"prompt":"a","use_beam_search":true}`, "use_beam_search", "beam search"},
			{`{"prompt":"a","structured_outputs":{"choice":["x"]}}`, "structured_outputs", "does not constrain outputs"},
		} {
			code, data := tw.post(t, "/v1/completions", tc.body)
			require.Equal(t, http.StatusBadRequest, code, "%s: %s", tc.body, data)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Param   *string `json:"param"`
					Code    int     `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(data), &e), data)
			require.Contains(t, e.Error.Message, tc.msg, tc.body)
			require.Equal(t, http.StatusBadRequest, e.Error.Code)
			if tc.param == "" {
				require.Nil(t, e.Error.Param, tc.body)
			} else {
				require.NotNil(t, e.Error.Param, tc.body)
				require.Equal(t, tc.param, *e.Error.Param, tc.body)
			}
		}
	})
}
