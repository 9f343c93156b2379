package stub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/loop"
	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/stub"
)

// The twin's serving features — speculative decoding, --stream-interval,
// a reasoning parser, loops as a model property — seen from outside: the
// chunks on the wire, what bench/stream counts, what /metrics says.

// featureTwin is a streaming twin of the fast profile with edit applied.
func featureTwin(t *testing.T, edit func(*stub.Profile)) *twin {
	t.Helper()
	p := stub.ProfileFast()
	edit(&p)
	return streamTwin(t, stub.Config{Profile: p})
}

type featureChunk struct {
	Choices []struct {
		Delta struct {
			Content          *string `json:"content"`
			Reasoning        *string `json:"reasoning"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"delta"`
		Logprobs *struct {
			Content []json.RawMessage `json:"content"`
		} `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// tokenChunks posts a streamed ignore_eos request of n tokens and returns
// the tokens each text chunk added (from continuous usage) and the chunks.
func tokenChunks(t *testing.T, tw *twin, n int, extra string) ([]int, []featureChunk) {
	t.Helper()
	code, evs := tw.events(t, chatBody(tw.Model(), n, `"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true},"ignore_eos":true,`+extra))
	require.Equal(t, http.StatusOK, code, evs)
	var sizes []int
	var chunks []featureChunk
	prev := 0
	for _, ev := range evs[1 : len(evs)-2] { // role chunk … usage chunk, [DONE]
		var c featureChunk
		require.NoError(t, json.Unmarshal([]byte(ev), &c), ev)
		chunks = append(chunks, c)
		sizes = append(sizes, c.Usage.CompletionTokens-prev)
		prev = c.Usage.CompletionTokens
	}
	require.Equal(t, n, prev, "usage counts every token")
	return sizes, chunks
}

// With speculative decoding a chunk carries the 1+a tokens of its step
// (a of k drafts accepted), logprobs one entry per token; usage and
// bench/stream count tokens, not chunks; /metrics has vLLM's spec_decode
// counters, and generation_tokens = requests + drafts + accepted tokens
// (every verified step yields its accepted drafts plus the bonus).
func TestSpeculativeChunks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := featureTwin(t, func(p *stub.Profile) {
			p.Speculative = &stub.Speculative{Method: "mtp", NumSpeculativeTokens: 3, Acceptance: []float64{0.9, 0.8, 0.7}}
		})
		const n = 300
		sizes, chunks := tokenChunks(t, tw, n, `"logprobs":true,`)
		require.Equal(t, 1, sizes[0], "the prefill step yields one token")
		multi := 0
		for i, k := range sizes {
			require.LessOrEqual(t, k, 4, "chunk %d", i)
			require.Len(t, chunks[i].Choices[0].Logprobs.Content, k, "one logprobs entry per token")
			if k > 1 {
				multi++
			}
		}
		require.Greater(t, multi, len(sizes)/2, "most steps accept drafts: %v", sizes)

		res := tw.streamClient().Do(t.Context(), stream.Text("Write the history of mathematics.", n), nil)
		require.NoError(t, res.Err)
		require.Equal(t, n, res.OutputTokens)
		require.Less(t, res.Chunks, n, "fewer chunks than tokens")

		m := tw.scrape(t)
		drafts := m.Value("vllm:spec_decode_num_drafts_total")
		accepted := m.Value("vllm:spec_decode_num_accepted_tokens_total")
		require.Positive(t, drafts)
		require.Equal(t, m.Value("vllm:generation_tokens_total"), 2+drafts+accepted)
		require.LessOrEqual(t, m.Value("vllm:spec_decode_num_draft_tokens_total"), 3*drafts)
		perPos := 0.0
		prev := drafts
		for pos := range 3 {
			v := m.Value("vllm:spec_decode_num_accepted_tokens_per_pos_total", "position", fmt.Sprint(pos))
			require.Positive(t, v)
			require.LessOrEqual(t, v, prev, "position %d accepted at most as often as the one before", pos)
			prev = v
			perPos += v
		}
		require.Equal(t, accepted, perPos)
		require.Zero(t, m.Value("vllm:spec_decode_num_accepted_tokens_per_pos_total", "position", "3"))
	})
}

// Without speculative decoding the counters are not registered (vLLM
// creates SpecDecodingProm's counters only with a speculative config), and
// each chunk is one token.
func TestNoSpeculativeNoCounters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := featureTwin(t, func(*stub.Profile) {})
		sizes, _ := tokenChunks(t, tw, 20, "")
		for _, k := range sizes {
			require.Equal(t, 1, k)
		}
		_, ok := tw.scrape(t)["vllm:spec_decode_num_drafts_total"]
		require.False(t, ok)
	})
}

// --stream-interval N: the first token alone, then N at a time, the rest
// with the finish reason.
func TestStreamIntervalChunks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := featureTwin(t, func(p *stub.Profile) { p.StreamInterval = 8 })
		sizes, chunks := tokenChunks(t, tw, 30, "")
		require.Equal(t, []int{1, 8, 8, 8, 5}, sizes)
		require.Equal(t, "length", *chunks[len(chunks)-1].Choices[0].FinishReason)
		res := tw.streamClient().Do(t.Context(), stream.Text("Write the history of mathematics.", 30), nil)
		require.NoError(t, res.Err)
		require.Equal(t, 30, res.OutputTokens)
	})
}

// A thinking request streams its reasoning in delta.reasoning, then its
// content; the end-of-thinking token writes no chunk of its own; usage
// counts both; bench/stream keeps the channels apart; the non-streamed
// answer has message.reasoning and the same texts.
func TestReasoningStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := featureTwin(t, func(p *stub.Profile) { p.Reasoning = &stub.Reasoning{Parser: "deepseek_v4", ThinkByDefault: true} })
		const n = 4000
		sizes, chunks := tokenChunks(t, tw, n, "")
		reasoning, content := 0, 0
		for i, c := range chunks {
			d := c.Choices[0].Delta
			require.Nil(t, d.ReasoningContent, "vLLM %s sends reasoning only", stub.Version)
			switch {
			case d.Reasoning != nil:
				require.Zero(t, content, "chunk %d: reasoning after content", i)
				reasoning++
			case d.Content != nil:
				content++
			}
		}
		require.Positive(t, reasoning)
		require.Positive(t, content)
		require.Equal(t, len(sizes), reasoning+content)
		skipped := false
		for _, k := range sizes {
			skipped = skipped || k == 2
		}
		require.True(t, skipped, "the chunk after the end-of-thinking token counts it too")

		res := tw.streamClient().Do(t.Context(), stream.Text("Write the history of mathematics.", n), nil)
		require.NoError(t, res.Err)
		require.Equal(t, n, res.OutputTokens)
		require.NotEmpty(t, res.Reasoning)
		require.NotEmpty(t, res.Content)

		code, body := tw.post(t, "/v1/chat/completions", chatBody(tw.Model(), n, `"ignore_eos":true,`))
		require.Equal(t, http.StatusOK, code)
		var full struct {
			Choices []struct {
				Message map[string]json.RawMessage `json:"message"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &full))
		msg := full.Choices[0].Message
		var reasoningText, contentText string
		require.NoError(t, json.Unmarshal(msg["reasoning"], &reasoningText))
		require.NoError(t, json.Unmarshal(msg["content"], &contentText))
		require.Equal(t, res.Reasoning, reasoningText)
		require.Equal(t, res.Content, contentText)
		_, old := msg["reasoning_content"]
		require.False(t, old)

		// Positive control: thinking off by the request's kwargs — all content.
		off := tw.streamClient().Do(t.Context(), stream.Request{Messages: []stream.Message{{Role: "user", Text: "Write the history of mathematics."}},
			MaxTokens: 50, IgnoreEOS: true, ChatTemplateKwargs: map[string]any{"thinking": false}}, nil)
		require.NoError(t, off.Err)
		require.Empty(t, off.Reasoning)
		require.NotEmpty(t, off.Content)
	})
}

// On a vLLM before PR #27752 the same output streams in
// delta.reasoning_content; bench/stream reads it just the same.
func TestReasoningContentOnOldVersions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tw := featureTwin(t, func(p *stub.Profile) {
			p.Reasoning = &stub.Reasoning{Parser: "deepseek_r1"}
			p.VLLMVersion = "0.10.2"
		})
		_, chunks := tokenChunks(t, tw, 400, "")
		d := chunks[0].Choices[0].Delta
		require.Nil(t, d.Reasoning)
		require.NotNil(t, d.ReasoningContent)
		res := tw.streamClient().Do(t.Context(), stream.Text("Write the history of mathematics.", 400), nil)
		require.NoError(t, res.Err)
		require.NotEmpty(t, res.Reasoning)
		resp, err := tw.hc.Get(twinURL + "/version")
		require.NoError(t, err)
		defer resp.Body.Close()
		var v struct{ Version string }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
		require.Equal(t, "0.10.2+vetbench.twin", v.Version)
	})
}

// Loops come from the model: with a loop model whose chance is 1 every
// long stream ends in an exact cycle the published detector confirms;
// with chance 0 none does (a positive and a negative control for the
// same prompts and lengths).
func TestModelLoopsAreDetected(t *testing.T) {
	for _, tc := range []struct {
		base  float64
		loops bool
	}{{1, true}, {0, false}} {
		t.Run(fmt.Sprint("base=", tc.base), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tw := featureTwin(t, func(p *stub.Profile) {
					p.Looping = &stub.Looping{Base: tc.base, BaseContext: 8192, MinPeriod: 20, MaxPeriod: 60, MinOnset: 100, MaxOnset: 300}
				})
				var wg sync.WaitGroup
				found := make([]bool, 4)
				for i := range found {
					wg.Go(func() {
						req := stream.Text(fmt.Sprintf("Prompt %d: write the history of mathematics.", i), 2000)
						res := tw.streamClient().Do(t.Context(), req, nil)
						require.NoError(t, res.Err)
						found[i] = loop.Check(res.Content).Status == loop.Confirmed
					})
				}
				wg.Wait()
				for i, f := range found {
					require.Equal(t, tc.loops, f, "stream %d", i)
				}
			})
		})
	}
}

// A looping request never samples EOS: without ignore_eos it runs to
// max_tokens ("length"), where the same prompt without the loop model
// stops at its natural length.
func TestLoopingRunsToMaxTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := chatBody("", 1500, `"stream":true,`)
		for _, base := range []float64{1, 0} {
			tw := featureTwin(t, func(p *stub.Profile) {
				p.Looping = &stub.Looping{Base: base, BaseContext: 8192, MinPeriod: 20, MaxPeriod: 20, MinOnset: 10, MaxOnset: 10}
			})
			_, evs := tw.events(t, strings.Replace(body, `"model":"",`, "", 1))
			last := parseChunk(t, evs[len(evs)-2])
			want := map[float64]string{1: "length", 0: "stop"}[base]
			require.Equal(t, want, *last.Choices[0].FinishReason, "base %v", base)
		}
	})
}
