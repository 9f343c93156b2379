package stream_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/vetbench/vetbench/bench/stream"
)

// A fixed-length greedy request, its server-counted tokens verified.
func ExampleClient_Do() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, data := range []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":5,"completion_tokens":0}}`,
			`{"choices":[{"index":0,"delta":{"content":"Hello"}}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`,
			`{"choices":[{"index":0,"delta":{"content":" world"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
			`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", data)
		}
	}))
	defer srv.Close()

	c := stream.New(srv.URL)
	res := c.Do(context.Background(), stream.Text("Say hello.", 2), nil)
	fmt.Printf("%q, %d tokens (%s), finish %s, verify: %v\n",
		res.Content, res.OutputTokens, res.TokensFrom, res.FinishReason, res.Verify(2))
	fmt.Println("asked 3:", res.Verify(3), "class", stream.ErrorClass(res.Verify(3)))
	// Output:
	// "Hello world", 2 tokens (usage), finish length, verify: <nil>
	// asked 3: short stream: 2 output tokens, asked 3 (finish_reason length) class short
}
