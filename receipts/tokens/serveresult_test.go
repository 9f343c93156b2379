package tokens

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A point written as vllm bench serve's result file reads back as the
// same point with the same figures, closed batch or refilled slots, over
// several repeats.
func TestServeResultRoundTrip(t *testing.T) {
	t.Parallel()
	closed := sample()
	refilled := sample()
	refilled.Point.Concurrency, refilled.Point.NumPrompts = 1, 2
	refilled.Summary = Summarize(refilled.Point, refilled.Runs)
	require.NoError(t, refilled.Validate())
	for _, r := range []*Receipt{closed, refilled} {
		m, err := ServeResult(r)
		require.NoError(t, err)
		data, err := json.Marshal(m)
		require.NoError(t, err)
		back, err := DecodeServeResult(data, "r.json")
		require.NoError(t, err)
		require.Len(t, back, 1)
		require.Equal(t, r.Key(), back[0].Key())
		require.Equal(t, []string{DefinitionsServe}, back[0].Definitions())
		pc, err := ComparePoint(back[0], r)
		require.NoError(t, err)
		for _, f := range pc.Figures {
			require.InDelta(t, 0, f.Delta.Rel, 1e-12, f.Name)
		}
	}
	_, err := DecodeServeResult([]byte(`{"num_prompts": 4, "duration": 2, "max_concurrency": 2}`), "x.json")
	require.ErrorContains(t, err, "no output length", "a result file that names no length is refused")
}

// A result file says which endpoint it streamed from: vllm bench serve's
// default backend (openai, or vllm) posts prompts to /v1/completions with
// no chat template, so its prompt tokens are not a chat point's, and a
// comparison with vetbench's chat points names the difference (exit 2
// upstream) instead of judging it as speed. A file of openai-chat, or of
// vetbench's own writing, is the chat endpoint; one naming no backend is
// unrecorded, and said to be.
func TestServeResultAPI(t *testing.T) {
	t.Parallel()
	chat := sample()
	chat.Identity.API = APIChat // as bench/decode records it
	chat.Identity.Digest = chat.IdentityDigest()
	require.NoError(t, chat.Validate())
	m, err := ServeResult(chat)
	require.NoError(t, err)
	require.Equal(t, "openai-chat", m["backend"])
	for _, tc := range []struct{ backend, endpointType, api string }{
		{"openai-chat", "openai-chat", APIChat},
		{"openai", "openai", APICompletions},
		{"vllm", "vllm", APICompletions},
		{"", "openai-chat", APIChat}, // an older file: endpoint_type alone
		{"sglang", "sglang", "backend sglang"},
		{"", "", ""},
	} {
		m["backend"], m["endpoint_type"] = tc.backend, tc.endpointType
		data, err := json.Marshal(m)
		require.NoError(t, err)
		back, err := DecodeServeResult(data, "r.json")
		require.NoError(t, err)
		require.Equal(t, tc.api, back[0].Identity.API, tc.backend)
		var apiDiff []string // the sample is a twin's point, the file a live server's: only api matters here
		for _, d := range IdentityDiff(back[0], chat) {
			if strings.HasPrefix(d, "api:") {
				apiDiff = append(apiDiff, d)
			}
		}
		switch tc.api {
		case APIChat:
			require.Empty(t, apiDiff)
		case "":
			require.Contains(t, IdentityUnverified(back[0], chat), "api")
		default:
			require.Equal(t, []string{"api: " + tc.api + " → " + APIChat}, apiDiff)
		}
		if tc.api == APICompletions {
			out, err := ServeResult(back[0])
			require.NoError(t, err)
			require.Equal(t, "openai", out["backend"], "written back as the completions backend it came from")
		}
	}
}

// A receipt written before the endpoint was recorded keeps its digest:
// an empty api does not enter it.
func TestIdentityDigestWithoutAPI(t *testing.T) {
	t.Parallel()
	r := sample()
	r.Identity.API = ""
	without := r.IdentityDigest()
	r.Identity.API = APIChat
	require.NotEqual(t, without, r.IdentityDigest(), "a recorded endpoint is part of the identity")
	old, err := ReadFile("../report/testdata/tokenpasses/receipts/tokens_text_c1.json")
	require.NoError(t, err, "a receipt from before validates, its digest unchanged")
	require.Empty(t, old.Identity.API)
}

// Two points whose requests carried prompts of other lengths are other
// workloads, whatever their metadata says: vllm bench serve's random
// dataset (1024 tokens by default) named workload=text against
// vetbench's text prompts is refused as an identity difference, not
// judged as speed; a length within 5% (another tokenizer's or template's
// token or two) is the same prompts.
func TestPromptTokensDiffer(t *testing.T) {
	t.Parallel()
	r := sample()
	m, err := ServeResult(r)
	require.NoError(t, err)
	in := m["total_input_tokens"].(int)
	require.Positive(t, in)
	for _, tc := range []struct {
		total int
		diff  bool
	}{{in, false}, {in * 104 / 100, false}, {in * 10, true}, {in / 2, true}} {
		m["total_input_tokens"] = tc.total
		data, err := json.Marshal(m)
		require.NoError(t, err)
		back, err := DecodeServeResult(data, "r.json")
		require.NoError(t, err)
		pc, err := ComparePoint(back[0], r)
		require.NoError(t, err)
		var got []string
		for _, d := range pc.IdentityDiff {
			if strings.HasPrefix(d, "prompt tokens per request:") {
				got = append(got, d)
			}
		}
		if tc.diff {
			require.Len(t, got, 1, "total_input_tokens %d against %d", tc.total, in)
			require.Contains(t, got[0], "(other prompts)")
		} else {
			require.Empty(t, got, "total_input_tokens %d against %d", tc.total, in)
		}
	}
}
