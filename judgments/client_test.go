package judgments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
)

// fakeVLLM answers /tokenize and /v1/chat/completions like vLLM, with a
// response body chosen per test, and records the chat bodies it received.
type fakeVLLM struct {
	mu        sync.Mutex
	bodies    []string
	tokenizes atomic.Int32
	chat      func(body map[string]any) (int, string)
}

func (f *fakeVLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	switch r.URL.Path {
	case "/tokenize":
		f.tokenizes.Add(1)
		var req tokenizeRequest
		_ = json.Unmarshal(data, &req)
		toks := []int{}
		for _, c := range req.Prompt {
			toks = append(toks, 236000+int(c))
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"count": len(toks), "max_model_len": 8192, "tokens": toks})
	case "/v1/chat/completions":
		f.mu.Lock()
		f.bodies = append(f.bodies, string(data))
		f.mu.Unlock()
		var body map[string]any
		_ = json.Unmarshal(data, &body)
		code, out := f.chat(body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, out)
	default:
		http.NotFound(w, r)
	}
}

// vllmBody is a chat response shaped like vLLM's, with top_logprobs entries.
func vllmBody(entries string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m",
"choices":[{"index":0,"message":{"role":"assistant","content":"1","reasoning":null},
"logprobs":{"content":[{"token":"token_id:236049","logprob":-0.01,"bytes":[49],"top_logprobs":[` + entries + `]}]},
"finish_reason":"length","stop_reason":null,"token_ids":null}],
"usage":{"prompt_tokens":480,"total_tokens":481,"completion_tokens":1,"prompt_tokens_details":null},
"prompt_logprobs":null,"kv_transfer_params":null}`
}

// idsBody answers every requested id, with logprob(id) from lp.
func idsBody(body map[string]any, lp func(i int) string) string {
	var parts []string
	for i, id := range body["logprob_token_ids"].([]any) {
		parts = append(parts, fmt.Sprintf(`{"token":"token_id:%d","logprob":%s,"bytes":[48]}`, int(id.(float64)), lp(i)))
	}
	return vllmBody(strings.Join(parts, ","))
}

func testItem() Item {
	return Item{ID: "r00:clean", State: "The image shows one paper check.", Images: []Image{{MIME: "image/png", Data: []byte("png")}}}
}

func newTestClient(t *testing.T, f *fakeVLLM, opts ...ClientOption) (*Client, Spec, Controls) {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c := NewClient(srv.URL, append([]ClientOption{WithModel("google/gemma-4-31B-it")}, opts...)...)
	spec := Spec{Name: "checks", Questions: checksQuestions()}
	ctrl, err := c.Tokenize(t.Context(), spec.Controls())
	require.NoError(t, err)
	return c, spec, ctrl
}

// The wire body must carry max_tokens 1, temperature 0 and logprobs true even
// though go-openai's own fields drop zero values.
func TestWireBody(t *testing.T) {
	// Positive control: go-openai alone loses temperature 0.
	plain, err := json.Marshal(openai.ChatCompletionRequest{Model: "m", Temperature: 0, MaxTokens: 1, LogProbs: true})
	require.NoError(t, err)
	require.NotContains(t, string(plain), `"temperature"`)

	f := &fakeVLLM{chat: func(b map[string]any) (int, string) {
		if _, ok := b["logprob_token_ids"]; ok {
			return 200, idsBody(b, func(i int) string { return fmt.Sprint(-float64(i) - 1) })
		}
		return 200, vllmBody(`{"token":"0","logprob":-1},{"token":"1","logprob":-2},{"token":"2","logprob":-3},{"token":"3","logprob":-4},{"token":"4","logprob":-5},{"token":"5","logprob":-6}`)
	}}
	c, spec, ctrl := newTestClient(t, f)
	_, err = c.Judge(t.Context(), spec, ctrl, testItem())
	require.NoError(t, err)
	top, _, _ := newTestClient(t, f, WithMode(ModeTopLogprobs))
	_, err = top.Judge(t.Context(), spec, ctrl, testItem())
	require.NoError(t, err)

	require.Len(t, f.bodies, 8)
	ids := f.bodies[2] // the verdict question, token_ids mode
	for _, want := range []string{`"max_tokens":1`, `"temperature":0`, `"logprobs":true`,
		`"logprob_token_ids":[236048,236049,236050,236051,236052,236053]`, `"return_tokens_as_token_ids":true`,
		`"add_generation_prompt":true`, `"chat_template_kwargs":{"enable_thinking":false}`, `"model":"google/gemma-4-31B-it"`} {
		require.Contains(t, ids, want)
	}
	require.NotContains(t, ids, `"top_logprobs"`)
	// One user message: the image first, then the text.
	var parsed struct {
		Messages []struct {
			Role    string
			Content []struct {
				Type     string
				Text     string
				ImageURL struct{ URL string } `json:"image_url"`
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(ids), &parsed))
	require.Len(t, parsed.Messages, 1)
	require.Equal(t, "user", parsed.Messages[0].Role)
	require.Equal(t, "image_url", parsed.Messages[0].Content[0].Type)
	require.Equal(t, "data:image/png;base64,cG5n", parsed.Messages[0].Content[0].ImageURL.URL)
	require.Equal(t, "text", parsed.Messages[0].Content[1].Type)
	require.True(t, strings.HasPrefix(parsed.Messages[0].Content[1].Text, "The image shows one paper check.\n\nverdict: "))

	tl := f.bodies[6]
	for _, want := range []string{`"max_tokens":1`, `"temperature":0`, `"logprobs":true`, `"top_logprobs":20`} {
		require.Contains(t, tl, want)
	}
	require.NotContains(t, tl, `logprob_token_ids`)
	require.NotContains(t, tl, `return_tokens_as_token_ids`)
}

func TestJudge(t *testing.T) {
	f := &fakeVLLM{chat: func(b map[string]any) (int, string) {
		return 200, idsBody(b, func(i int) string { return fmt.Sprint(-float64(i) - 0.5) })
	}}
	c, spec, ctrl := newTestClient(t, f)
	j, err := c.Judge(t.Context(), spec, ctrl, testItem())
	require.NoError(t, err)
	require.Equal(t, 4, j.Requests)
	require.Equal(t, 4*480, j.PromptTokens)
	require.Len(t, j.Answers, 4)
	require.Equal(t, "false", j.Answers[0].Label)
	require.Equal(t, "consistent", j.Answers[2].Label)
	require.Equal(t, "0", j.Answers[3].Label)
	// Tokenize happened once per control, not per judgment.
	_, err = c.Judge(t.Context(), spec, ctrl, testItem())
	require.NoError(t, err)
	_, err = c.Tokenize(t.Context(), spec.Controls())
	require.NoError(t, err)
	require.EqualValues(t, 6, f.tokenizes.Load())
}

// A broken answer fails the judgment closed, naming item and question.
func TestJudgeFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name string
		lp   func(i int) string
		body func(b map[string]any) string
		want error
	}{
		{name: "null logprob", lp: func(i int) string {
			if i == 1 {
				return "null"
			}
			return "-1"
		}, want: ErrNonFinite},
		{name: "missing candidate", body: func(b map[string]any) string {
			return vllmBody(`{"token":"token_id:236048","logprob":-1}`)
		}, want: ErrMissingCandidate},
		{name: "no logprobs", body: func(b map[string]any) string {
			return strings.Replace(vllmBody(""), `"logprobs":{"content":[{"token":"token_id:236049","logprob":-0.01,"bytes":[49],"top_logprobs":[]}]}`, `"logprobs":null`, 1)
		}, want: ErrNoLogprobs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeVLLM{chat: func(b map[string]any) (int, string) {
				if tc.body != nil {
					return 200, tc.body(b)
				}
				return 200, idsBody(b, tc.lp)
			}}
			c, spec, ctrl := newTestClient(t, f)
			j, err := c.Judge(t.Context(), spec, ctrl, testItem())
			require.ErrorIs(t, err, tc.want)
			var je *JudgeError
			require.ErrorAs(t, err, &je)
			require.Equal(t, "r00:clean", je.Item)
			require.Equal(t, "payee_matches", je.Question)
			require.Empty(t, j.Answers, "no verdict is invented")
		})
	}
}

func TestStatusErrors(t *testing.T) {
	// vLLM 0.19's context-length message (vllm-contract.md 2.8): longer
	// than 200 characters, kept whole.
	const long = "This model's maximum context length is 32768 tokens. However, you requested 512 output tokens and your prompt contains 32836 input tokens, for a total of 33348 tokens (32836 + 512 = 33348 > 32768). Please reduce the length of the input prompt or the number of requested output tokens."
	// A hostile 30 KB message of two-byte characters, offset by one byte
	// so a byte-count cut would split one: kept to MaxMessage characters.
	huge := "x" + strings.Repeat("é", 15000)
	for _, tc := range []struct {
		name    string
		code    int
		header  string
		body    string
		typ     string
		msg     string
		param   string
		retry   time.Duration
		wantErr string
	}{
		{"nested", 400, "", `{"error":{"message":"At most 2 image(s) may be provided in one prompt.","type":"BadRequestError","param":"image","code":400}}`,
			"BadRequestError", "At most 2 image(s) may be provided in one prompt.", "image", 0, "HTTP 400 BadRequestError"},
		{"flat", 404, "", `{"object":"error","message":"The model ` + "`x`" + ` does not exist.","type":"NotFoundError","param":"model","code":404}`,
			"NotFoundError", "The model `x` does not exist.", "model", 0, "HTTP 404"},
		{"429", 429, "3", `{"error":{"message":"busy","type":"TooManyRequests","param":null,"code":"rate_limited"}}`, "TooManyRequests", "busy", "", 3 * time.Second, "retry after 3s"},
		{"html", 502, "", `<html>bad gateway</html>`, "", "<html>bad gateway</html>", "", 0, "HTTP 502"},
		{"vllm long", 400, "", `{"error":{"message":"` + long + `","type":"BadRequestError","param":"input_tokens","code":400}}`, "BadRequestError", long, "input_tokens", 0, "maximum context length"},
		{"huge", 500, "", `{"error":{"message":"` + huge + `","type":"` + huge + `","code":500}}`, huge[:1+2*(MaxMessage-1)] + "…", huge[:1+2*(MaxMessage-1)] + "…", "", 0, "HTTP 500"},
		{"huge html", 502, "", huge, "", huge[:1+2*(MaxMessage-1)] + "…", "", 0, "HTTP 502"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeVLLM{chat: func(map[string]any) (int, string) { return tc.code, tc.body }}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				f.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			c := NewClient(srv.URL)
			_, err := c.Judge(t.Context(), Spec{Questions: checksQuestions()[:1]}, Controls{"0": 1, "1": 2}, testItem())
			var se *StatusError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.code, se.Code)
			require.Equal(t, tc.typ, se.Type)
			require.Equal(t, tc.msg, se.Message)
			require.True(t, utf8.ValidString(se.Message), "no character is split")
			require.Equal(t, tc.param, se.Param)
			require.Equal(t, tc.retry, se.RetryAfter)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestTokenizeErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tokenize" {
			http.NotFound(w, r)
			return
		}
		// Every prompt is two tokens: no control can be scored.
		_, _ = io.WriteString(w, `{"count":2,"tokens":[1,2]}`)
	}))
	t.Cleanup(srv.Close)
	_, err := NewClient(srv.URL).Tokenize(t.Context(), []string{"0"})
	require.ErrorContains(t, err, `tokenize "0": 2 tokens, want 1`)

	none := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(none.Close)
	_, err = NewClient(none.URL).Tokenize(t.Context(), []string{"0"})
	require.ErrorIs(t, err, ErrNoTokenizer)

	none.Close()
	_, err = NewClient(none.URL).Tokenize(t.Context(), []string{"0"})
	require.ErrorContains(t, err, "connection refused")
}

func TestTimeoutAndCancel(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // lets the server notice the client going away
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(block) }) // runs first: cleanups are LIFO
	q := Spec{Questions: checksQuestions()[:1]}
	ctrl := Controls{"0": 1, "1": 2}
	_, err := NewClient(srv.URL, WithRequestTimeout(50*time.Millisecond)).Judge(t.Context(), q, ctrl, testItem())
	require.ErrorIs(t, err, context.DeadlineExceeded)

	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = NewClient(srv.URL).Judge(ctx, q, ctrl, testItem())
	require.True(t, errors.Is(err, context.Canceled), err)
}

func TestAPIKeyHeader(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
		_, _ = io.WriteString(w, `{"count":1,"tokens":[5]}`)
	}))
	t.Cleanup(srv.Close)
	_, err := NewClient(srv.URL, WithAPIKey("sk-secret")).Tokenize(t.Context(), []string{"0"})
	require.NoError(t, err)
	require.Equal(t, "Bearer sk-secret", got.Load())
}

// vLLM's --api-key middleware answers 401 {"error": "Unauthorized"}; the
// client says what that means for the run, never the key.
func TestUnauthorized(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer right-key" {
			_, _ = io.WriteString(w, `{"count":1,"tokens":[5]}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"Unauthorized"}`)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		key, want string
		sent      bool
	}{
		{"", "HTTP 401: the server wants an API key (VETBENCH_API_KEY)", false},
		{"wrong-key-s3cr3t", "HTTP 401: the key was refused (check VETBENCH_API_KEY)", true},
	} {
		_, err := NewClient(srv.URL, WithAPIKey(tc.key)).Tokenize(t.Context(), []string{"0"})
		require.ErrorIs(t, err, ErrUnauthorized)
		require.ErrorContains(t, err, tc.want)
		var se *StatusError
		require.ErrorAs(t, err, &se)
		require.Equal(t, tc.sent, se.KeySent)
		require.Equal(t, "Unauthorized", se.Message, "the string error body is read")
		if tc.key != "" {
			require.NotContains(t, err.Error(), tc.key)
		}
	}
	_, err := NewClient(srv.URL, WithAPIKey("right-key")).Tokenize(t.Context(), []string{"0"})
	require.NoError(t, err)
	// A 403 is not a 401.
	require.NotErrorIs(t, &StatusError{Code: 403}, ErrUnauthorized)
}

// With fan-out the questions of a judgment are in flight together: the
// server holds every answer until all of them have arrived, which a client
// asking one after another would never get through. The answers are those
// of the sequential client, in question order.
func TestJudgeFanOut(t *testing.T) {
	answer := func(b map[string]any) (int, string) {
		return 200, idsBody(b, func(i int) string { return fmt.Sprint(-float64(i) - 0.5) })
	}
	seq := &fakeVLLM{chat: answer}
	c, spec, ctrl := newTestClient(t, seq)
	want, err := c.Judge(t.Context(), spec, ctrl, testItem())
	require.NoError(t, err)
	require.False(t, c.FanOut())

	n := len(spec.Questions)
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	fan := &fakeVLLM{chat: func(b map[string]any) (int, string) {
		arrived.Done()
		select {
		case <-all:
		case <-time.After(10 * time.Second): // not all at once: fail, do not hang
			return 503, `{"error":{"message":"the questions did not arrive together","type":"ServiceUnavailable","param":null,"code":503}}`
		}
		return answer(b)
	}}
	c, spec, ctrl = newTestClient(t, fan, WithFanOut(true))
	require.True(t, c.FanOut())
	got, err := c.Judge(t.Context(), spec, ctrl, testItem())
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, n, got.Requests)
	require.ElementsMatch(t, seq.bodies, fan.bodies, "the same requests, whatever order they arrived in")
}

// A fan-out judgment reports the first question in order that failed,
// with the answers before it, even when a later question failed first.
func TestJudgeFanOutFirstErrorInOrder(t *testing.T) {
	legibilityFailed := make(chan struct{})
	f := &fakeVLLM{chat: func(b map[string]any) (int, string) {
		switch len(b["logprob_token_ids"].([]any)) {
		case 5: // legibility (question 3, a Score of 5 levels) fails first
			defer close(legibilityFailed)
			return 400, `{"error":{"message":"late question","type":"BadRequestError","param":null,"code":400}}`
		case 6: // verdict (question 2) fails after it
			<-legibilityFailed
			return 500, `{"error":{"message":"boom","type":"InternalServerError","param":null,"code":500}}`
		}
		return 200, idsBody(b, func(i int) string { return fmt.Sprint(-float64(i) - 0.5) })
	}}
	c, spec, ctrl := newTestClient(t, f, WithFanOut(true))
	j, err := c.Judge(t.Context(), spec, ctrl, testItem())
	var je *JudgeError
	require.ErrorAs(t, err, &je)
	require.Equal(t, "verdict", je.Question)
	require.ErrorContains(t, err, "boom")
	require.Len(t, j.Answers, 2, "the answers before the failed question")
	require.Equal(t, []string{"payee_matches", "amounts_match"}, []string{j.Answers[0].Question, j.Answers[1].Question})
	require.Equal(t, len(spec.Questions), j.Requests, "every question was asked")
}
