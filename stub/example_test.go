package stub_test

import (
	"bufio"
	"fmt"
	"log"
	"net/http"
	"regexp"
	"strings"

	"github.com/vetbench/vetbench/stub"
)

// Serve the twin in-process and stream a completion as `vllm bench serve`
// asks for one (docs/twin.md shows this output; created, the request's
// Unix time, is masked).
func ExampleStart_completions() {
	s, err := stub.Start(stub.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	req, err := http.NewRequest(http.MethodPost, s.URL()+"/v1/completions", strings.NewReader(
		`{"prompt":"The history of mathematics","max_tokens":3,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`))
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("X-Request-Id", "doc-1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	created := regexp.MustCompile(`"created":\d+`)
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			fmt.Println(created.ReplaceAllString(line, `"created":…`))
		}
	}
	// Output:
	// data: {"id":"cmpl-doc-1","object":"text_completion","created":…,"model":"google/gemma-4-31B-it","choices":[{"index":0,"text":"The","logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}]}
	// data: {"id":"cmpl-doc-1","object":"text_completion","created":…,"model":"google/gemma-4-31B-it","choices":[{"index":0,"text":" steady","logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}]}
	// data: {"id":"cmpl-doc-1","object":"text_completion","created":…,"model":"google/gemma-4-31B-it","choices":[{"index":0,"text":" second","logprobs":null,"finish_reason":"length","stop_reason":null,"prompt_token_ids":null,"token_ids":null}]}
	// data: {"id":"cmpl-doc-1","object":"text_completion","created":…,"model":"google/gemma-4-31B-it","choices":[],"usage":{"prompt_tokens":6,"total_tokens":9,"completion_tokens":3}}
	// data: [DONE]
}
