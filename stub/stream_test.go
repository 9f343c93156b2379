package stub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/loop"
	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// The streaming tests run the twin in a synctest bubble over the
// streaming in-memory transport and read it with bench/stream, the
// vLLM-faithful client: chunk shapes, lengths, faults and the metrics the
// engine feeds are checked on fake time, where a token's arrival is its
// step's end.

// streamTwin is a twin whose transport streams (built inside a bubble).
func streamTwin(t *testing.T, cfg stub.Config) *twin {
	t.Helper()
	s, err := stub.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return &twin{Server: s, hc: &http.Client{Transport: twintest.StreamTransport(s)}}
}

func (tw *twin) streamClient() *stream.Client {
	return stream.New(twinURL, stream.WithHTTPClient(tw.hc))
}

// events posts body and returns its status and every SSE data payload.
func (tw *twin) events(t *testing.T, body string) (int, []string) {
	t.Helper()
	return tw.eventsAt(t, "/v1/chat/completions", body)
}

// eventsAt posts body to path and returns its status and every SSE data
// payload.
func (tw *twin) eventsAt(t *testing.T, path, body string) (int, []string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, twinURL+path, strings.NewReader(body))
	require.NoError(t, err)
	res, err := tw.hc.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(res.Body)
		return res.StatusCode, []string{string(data)}
	}
	require.Equal(t, "text/event-stream; charset=utf-8", res.Header.Get("Content-Type"))
	dec := stream.NewDecoder(res.Body)
	var out []string
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return res.StatusCode, out
		}
		require.NoError(t, err)
		out = append(out, string(ev.Data))
	}
}

type wireChunk struct {
	Object  string `json:"object"`
	Choices []struct {
		Delta struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Code    int    `json:"code"`
	} `json:"error"`
}

func parseChunk(t *testing.T, data string) wireChunk {
	t.Helper()
	var c wireChunk
	require.NoError(t, json.Unmarshal([]byte(data), &c), data)
	return c
}

func chatBody(model string, maxTokens int, extra string) string {
	return fmt.Sprintf(`{"model":%q,"max_tokens":%d,%s"messages":[{"role":"user","content":"Write the history of mathematics."}]}`, model, maxTokens, extra)
}

// TestStreamShape: vLLM's chunk sequence with usage on — a role chunk with
// empty content and completion_tokens 0, one chunk per token with the
// running count, finish_reason on the last, a usage-only chunk with empty
// choices, [DONE] — and without usage options no usage at all; the text
// is the non-streaming answer's, and bench/stream reads it all.
func TestStreamShape(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{})
		const n = 12
		code, evs := tw.events(t, chatBody(tw.Model(), n, `"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true},"ignore_eos":true,`))
		require.Equal(t, http.StatusOK, code)
		require.Len(t, evs, 1+n+1+1, "role, %d tokens, usage, [DONE]", n)
		role := parseChunk(t, evs[0])
		require.Equal(t, "chat.completion.chunk", role.Object)
		require.Equal(t, "assistant", *role.Choices[0].Delta.Role)
		require.Equal(t, "", *role.Choices[0].Delta.Content)
		require.Nil(t, role.Choices[0].FinishReason)
		require.Equal(t, 0, role.Usage.CompletionTokens)
		prompt := role.Usage.PromptTokens
		require.Positive(t, prompt)
		var text strings.Builder
		for i := 1; i <= n; i++ {
			c := parseChunk(t, evs[i])
			require.Len(t, c.Choices, 1)
			require.Nil(t, c.Choices[0].Delta.Role)
			require.NotEmpty(t, *c.Choices[0].Delta.Content, "chunk %d", i)
			text.WriteString(*c.Choices[0].Delta.Content)
			require.Equal(t, i, c.Usage.CompletionTokens, "continuous usage on chunk %d", i)
			require.Equal(t, prompt+i, c.Usage.TotalTokens)
			if i < n {
				require.Nil(t, c.Choices[0].FinishReason, "chunk %d", i)
			} else {
				require.Equal(t, "length", *c.Choices[0].FinishReason)
			}
		}
		final := parseChunk(t, evs[n+1])
		require.NotNil(t, final.Choices, "choices is an empty list, not absent: %s", evs[n+1])
		require.Empty(t, final.Choices)
		require.Equal(t, n, final.Usage.CompletionTokens)
		require.Contains(t, evs[n+1], `"choices":[]`)
		require.Equal(t, "[DONE]", evs[n+2])

		// The same request without streaming says the same.
		code, data := tw.post(t, "/v1/chat/completions", chatBody(tw.Model(), n, `"ignore_eos":true,`))
		require.Equal(t, http.StatusOK, code, data)
		var full struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &full))
		require.Equal(t, full.Choices[0].Message.Content, text.String())

		// include_usage alone: the usage chunk, no running usage; no
		// options: no usage anywhere.
		_, evs = tw.events(t, chatBody(tw.Model(), 3, `"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true,`))
		require.Len(t, evs, 1+3+1+1)
		require.Nil(t, parseChunk(t, evs[1]).Usage)
		require.Equal(t, 3, parseChunk(t, evs[4]).Usage.CompletionTokens)
		_, evs = tw.events(t, chatBody(tw.Model(), 3, `"stream":true,"ignore_eos":true,`))
		require.Len(t, evs, 1+3+1)
		for _, e := range evs[:4] {
			require.Nil(t, parseChunk(t, e).Usage, e)
		}

		// With logprobs each token chunk carries its entry: the first is
		// the non-streaming answer's first.
		_, evs = tw.events(t, chatBody(tw.Model(), 3, `"stream":true,"ignore_eos":true,"logprobs":true,"top_logprobs":2,`))
		code, data = tw.post(t, "/v1/chat/completions", chatBody(tw.Model(), 3, `"ignore_eos":true,"logprobs":true,"top_logprobs":2,`))
		require.Equal(t, http.StatusOK, code)
		var lp struct {
			Choices []struct {
				Logprobs struct {
					Content []json.RawMessage `json:"content"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &lp))
		for i := 1; i <= 3; i++ {
			var c struct {
				Choices []struct {
					Logprobs struct {
						Content []json.RawMessage `json:"content"`
					} `json:"logprobs"`
				} `json:"choices"`
			}
			require.NoError(t, json.Unmarshal([]byte(evs[i]), &c))
			require.Len(t, c.Choices[0].Logprobs.Content, 1, evs[i])
			require.JSONEq(t, string(lp.Choices[0].Logprobs.Content[i-1]), string(c.Choices[0].Logprobs.Content[0]), "token %d", i)
		}

		// bench/stream: TTFT is the first step (1 ms + 10 µs for one
		// sequence on the fast profile, no network), each later token one
		// more step.
		res := tw.streamClient().Do(t.Context(), stream.Text("Write the history of mathematics.", 20), nil)
		require.NoError(t, res.Err)
		require.NoError(t, res.Verify(20))
		require.Equal(t, stream.FromUsage, res.TokensFrom)
		require.Equal(t, "length", res.FinishReason)
		require.True(t, res.Done)
		ttft, _ := res.TTFT()
		require.InDelta(t, 1010*time.Microsecond, ttft, float64(time.Microsecond))
		itl, _ := res.TimeBetweenTokens()
		require.InDelta(t, 1010*time.Microsecond, itl, float64(time.Microsecond))
		require.Len(t, res.Timeline, 20, "a running count per token")
	})
}

// TestStreamEOS: without ignore_eos the output ends with EOS at its
// natural length (a function of the prompt), counted in usage and writing
// no text; min_tokens holds EOS back; ignore_eos runs to max_tokens;
// min_tokens above max_tokens is vLLM's 400.
func TestStreamEOS(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{})
		cl := tw.streamClient()
		prompt := "Write the history of mathematics."
		free := stream.Text(prompt, 2000)
		free.IgnoreEOS = false
		a := cl.Do(t.Context(), free, nil)
		require.NoError(t, a.Err)
		require.Equal(t, "stop", a.FinishReason)
		require.GreaterOrEqual(t, a.OutputTokens, 32)
		require.LessOrEqual(t, a.OutputTokens, 511)
		require.Equal(t, a.OutputTokens-1, a.Chunks, "the EOS chunk writes no text")
		b := cl.Do(t.Context(), free, nil)
		require.Equal(t, a.OutputTokens, b.OutputTokens, "the natural length is the prompt's")
		require.Equal(t, a.Content, b.Content)
		other := free
		other.Messages = []stream.Message{{Text: "Another prompt entirely."}}
		require.NotEqual(t, a.OutputTokens, cl.Do(t.Context(), other, nil).OutputTokens, "another prompt, another length")

		held := free
		held.MinTokens = 1500
		c := cl.Do(t.Context(), held, nil)
		require.NoError(t, c.Err)
		require.Equal(t, "stop", c.FinishReason)
		require.Equal(t, 1501, c.OutputTokens, "EOS right after min_tokens")
		require.True(t, strings.HasPrefix(c.Content, a.Content[:len(a.Content)/2]), "the same words, longer")

		ign := cl.Do(t.Context(), stream.Text(prompt, 700), nil)
		require.NoError(t, ign.Verify(700))
		require.Equal(t, "length", ign.FinishReason)

		code, body := tw.post(t, "/v1/chat/completions", chatBody(tw.Model(), 10, `"min_tokens":11,`))
		require.Equal(t, http.StatusBadRequest, code)
		require.Contains(t, body, "min_tokens must be less than or equal to max_tokens=10, got 11.")
		code, _ = tw.post(t, "/v1/chat/completions", chatBody(tw.Model(), 10, `"min_tokens":-1,`))
		require.Equal(t, http.StatusBadRequest, code)

		// Non-streaming stops at the same EOS.
		code, body = tw.post(t, "/v1/chat/completions", chatBody(tw.Model(), 2000, ""))
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `"finish_reason":"stop"`)
		require.Contains(t, body, fmt.Sprintf(`"completion_tokens":%d`, a.OutputTokens))
	})
}

// TestMaxModelLen: a prompt plus max_tokens over max_model_len is vLLM's
// 400 (param input_tokens), so is a prompt that fills the context with no
// max_tokens; without max_tokens the output may run to the context's end.
func TestMaxModelLen(t *testing.T) {
	p := stub.ProfileFast()
	p.MaxModelLen = 256
	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{Profile: p})
		code, body := tw.post(t, "/v1/chat/completions", chatBody(tw.Model(), 250, ""))
		require.Equal(t, http.StatusBadRequest, code)
		var e struct {
			Error struct {
				Message, Type, Param string
				Code                 int
			}
		}
		require.NoError(t, json.Unmarshal([]byte(body), &e))
		require.Equal(t, "input_tokens", e.Error.Param)
		require.Equal(t, 400, e.Error.Code)
		require.Contains(t, e.Error.Message, "maximum context length is 256 tokens")
		long := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}]}`, tw.Model(), strings.Repeat("word ", 300))
		code, body = tw.post(t, "/v1/chat/completions", long)
		require.Equal(t, http.StatusBadRequest, code)
		require.Contains(t, body, "maximum context length is 256 tokens")

		// No max_tokens: the rest of the context, ending on length.
		code, evs := tw.events(t, fmt.Sprintf(`{"model":%q,"stream":true,"ignore_eos":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Write."}]}`, tw.Model()))
		require.Equal(t, http.StatusOK, code)
		u := parseChunk(t, evs[len(evs)-2]).Usage
		require.Equal(t, 256, u.TotalTokens, "prompt plus output fill max_model_len")
	})
}

// TestStreamLoopFault: with the loop fault the text is periodic and
// bench/loop confirms it; without it the same request does not loop. A
// client that stops a looping stream aborts the request in the engine.
func TestStreamLoopFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		looped := streamTwin(t, stub.Config{Faults: []stub.Fault{stub.Fault{Kind: stub.FaultLoop, Match: "loop"}}})
		req := stream.Text("Write the history of mathematics.", 1500)
		req.ID = "loop-1"
		res := looped.streamClient().Do(t.Context(), req, nil)
		require.NoError(t, res.Err)
		f := loop.Check(res.Content)
		require.Equal(t, loop.Confirmed, f.Status, "%+v", f)
		req.ID = "clean-1"
		clean := looped.streamClient().Do(t.Context(), req, nil)
		require.NoError(t, clean.Err)
		require.Equal(t, loop.Clean, loop.Check(clean.Content).Status, "no fault, no loop")

		// A detector on the stream stops it; the engine counts an abort.
		var pair loop.Pair
		req.ID = "loop-2"
		stopped := looped.streamClient().Do(t.Context(), req, func(u stream.Update) error {
			if err := pair.Write(u.Content, u.Reasoning); err != nil {
				return err
			}
			return nil
		})
		require.ErrorIs(t, stopped.Err, loop.ErrLoop)
		require.Less(t, stopped.OutputTokens, 1500)
		time.Sleep(time.Second)
		s := looped.scrape(t)
		require.Equal(t, 1.0, s.Value("vllm:request_success_total", "finished_reason", "abort"))
		require.Zero(t, s.Value("vllm:num_requests_running"))
	})
}

// TestStreamErrors: a generation error mid-stream and an engine that dies
// mid-stream end the stream with vLLM's error chunk and [DONE] (bench/stream
// keeps the tokens that came); the truncate fault cuts it; a client that
// cancels aborts the request.
func TestStreamErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{Faults: []stub.Fault{stub.Fault{Kind: stub.FaultStreamError, Match: "gen-error"},
			stub.Fault{Kind: stub.FaultTruncate, Match: "cut"}}})
		cl := tw.streamClient()
		req := stream.Text("Write the history of mathematics.", 40)
		req.ID = "gen-error"
		res := cl.Do(t.Context(), req, nil)
		var se *stream.ServerError
		require.ErrorAs(t, res.Err, &se)
		require.Equal(t, 500, se.Code)
		require.Equal(t, "stream_error", stream.ErrorClass(res.Err))
		require.Equal(t, 19, res.OutputTokens, "the tokens before the failed step, from continuous usage")
		require.Equal(t, 1.0, tw.scrape(t).Value("vllm:request_success_total", "finished_reason", "error"))

		req.ID = "cut"
		res = cl.Do(t.Context(), req, nil)
		require.ErrorIs(t, res.Err, stream.ErrCut)
		require.Equal(t, 20, res.OutputTokens)

		// Engine death during a long stream: the error chunk, then [DONE].
		req.ID = "long"
		req.MaxTokens = 5000
		var got *stream.Result
		var wg sync.WaitGroup
		wg.Go(func() { got = cl.Do(t.Context(), req, nil) })
		time.Sleep(100 * time.Millisecond)
		tw.KillEngine()
		wg.Wait()
		require.ErrorAs(t, got.Err, &se)
		require.Contains(t, se.Message, "EngineCore encountered an issue")
		require.Positive(t, got.OutputTokens)
		tw.ReviveEngine()
		var evs []string
		wg.Go(func() { _, evs = tw.events(t, chatBody(tw.Model(), 5000, `"stream":true,"ignore_eos":true,`)) })
		time.Sleep(100 * time.Millisecond)
		tw.KillEngine()
		wg.Wait()
		require.Greater(t, len(evs), 3)
		require.Equal(t, 500, parseChunk(t, evs[len(evs)-2]).Error.Code, evs[len(evs)-2])
		require.Equal(t, "[DONE]", evs[len(evs)-1])
		tw.ReviveEngine()

		// A client that cancels.
		ctx, cancel := context.WithCancel(t.Context())
		wg.Go(func() { got = cl.Do(ctx, req, nil) })
		time.Sleep(50 * time.Millisecond)
		cancel()
		wg.Wait()
		require.ErrorIs(t, got.Err, context.Canceled)
		time.Sleep(time.Second)
		s := tw.scrape(t)
		require.Equal(t, 1.0, s.Value("vllm:request_success_total", "finished_reason", "abort"))
		require.Zero(t, s.Value("vllm:num_requests_running"))
	})
}

// TestStreamMetricsCoherent: the histograms and counters the engine feeds
// agree with what the streams carried: generation tokens, per-request
// generation and max generation tokens, one TTFT per request, one ITL per
// output step after the first (summing to each stream's last − first
// token time), e2e per request.
func TestStreamMetricsCoherent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{})
		lengths := []int{10, 20, 30, 40}
		results := make([]*stream.Result, len(lengths))
		var wg sync.WaitGroup
		for i, n := range lengths {
			wg.Go(func() {
				results[i] = tw.streamClient().Do(t.Context(), stream.Text(fmt.Sprintf("prompt %d", i), n), nil)
			})
		}
		wg.Wait()
		total, steps, spread := 0, 0, 0.0
		for i, r := range results {
			require.NoError(t, r.Verify(lengths[i]))
			total += r.OutputTokens
			steps += r.OutputTokens - 1
			spread += r.LastToken.Sub(r.FirstToken).Seconds()
		}
		s := tw.scrape(t)
		require.Equal(t, float64(total), s.Value("vllm:generation_tokens_total"))
		c, sum := s.Hist("vllm:request_generation_tokens")
		require.Equal(t, 4.0, c)
		require.Equal(t, float64(total), sum)
		_, sum = s.Hist("vllm:request_max_num_generation_tokens")
		require.Equal(t, float64(total), sum, "tokens generated, not max_tokens")
		c, _ = s.Hist("vllm:time_to_first_token_seconds")
		require.Equal(t, 4.0, c)
		c, sum = s.Hist("vllm:inter_token_latency_seconds")
		require.Equal(t, float64(steps), c, "one ITL per output step after the first")
		require.InDelta(t, spread, sum, 1e-6, "ITLs add up to each stream's first-to-last time (no network on this profile)")
		c, _ = s.Hist("vllm:e2e_request_latency_seconds")
		require.Equal(t, 4.0, c)
		require.Equal(t, 4.0, s.Value("vllm:request_success_total", "finished_reason", "length"))
	})
}

// TestKVQueueing: long prompts at high concurrency on a small KV cache
// queue (num_requests_waiting > 0) and preempt, every request still
// finishes its tokens, and cache_config_info reports the capacity that
// did it.
func TestKVQueueing(t *testing.T) {
	p := stub.ProfileFast()
	p.MaxModelLen = 4096
	p.NumGPUBlocks = 512 // 8192 tokens: three of these requests at once, not sixteen
	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{Profile: p})
		const c = 16
		var wg sync.WaitGroup
		results := make([]*stream.Result, c)
		for i := range c {
			wg.Go(func() {
				req := stream.Text(fmt.Sprintf("request %d: %s", i, strings.Repeat("context ", 2000)), 300)
				results[i] = tw.streamClient().Do(t.Context(), req, nil)
			})
		}
		time.Sleep(50 * time.Millisecond)
		mid := tw.scrape(t)
		require.Positive(t, mid.Value("vllm:num_requests_waiting"), "long context × high concurrency queues for KV")
		require.LessOrEqual(t, mid.Value("vllm:num_requests_running"), 4.0)
		wg.Wait()
		for _, r := range results {
			require.NoError(t, r.Verify(300))
		}
		end := tw.scrape(t)
		require.Positive(t, end.Value("vllm:num_preemptions_total"), "running requests that grow past the cache are preempted")
		info := end["vllm:cache_config_info"].GetMetric()[0]
		labels := map[string]string{}
		for _, l := range info.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		require.Equal(t, "512", labels["num_gpu_blocks"])
		require.Equal(t, "16", labels["block_size"])
	})
}
