package judgments

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// decodeSeeds are bodies the fast decoder must take (vLLM's shapes) and
// bodies it must leave to json.Unmarshal, each with whether it takes it.
var decodeSeeds = []struct {
	body string
	fast bool
}{
	{`{"choices":[{"logprobs":{"content":[{"token":"token_id:1","top_logprobs":[{"token":"token_id:1","logprob":-0.5},{"token":"token_id:2","logprob":null}]}]}}],"usage":{"prompt_tokens":480,"prompt_tokens_details":{"cached_tokens":32}}}`, true},
	{`null`, true},
	{` {"choices":[] , "usage":null} `, true},
	{`{"choices":null,"usage":{"prompt_tokens_details":null}}`, true},
	{`{"choices":[null,{"logprobs":null},{"logprobs":{}}],"x":[1,2.5e-3,"a\"\u00e9",true,false,null,{"y":{}}]}`, true},
	{`{"choices":[{"logprobs":{"content":[{"token":"\u0030\n\"\\\/\b\f\r\t\u00e9\u0000é"}]}}]}`, true},
	{`{"choices":[{"logprobs":{"content":[{"token":"\ud83d\ude00"}]}}]}`, false},   // a surrogate pair: json.Unmarshal's
	{`{"choices":[{"logprobs":{"content":[{"token":"` + "\xff" + `"}]}}]}`, false}, // bad UTF-8: json.Unmarshal replaces it
	{`{"choices":[{"logprobs":{"content":[{"token":"\u12"}]}}]}`, false},
	{`{"Choices":[]}`, false},                    // json.Unmarshal matches case-insensitively
	{`{"choices":[],"choices":null}`, false},     // a key given twice
	{`{"usage":{"prompt_tokens":480.0}}`, false}, // not an int: json.Unmarshal says so
	{`{"usage":{"prompt_tokens":1e999}}`, false},
	{`{"choices":[{"logprobs":{"content":[{"top_logprobs":[{"logprob":1e999}]}]}}]}`, false},
	{`{"choices":{}}`, false},
	{`{"choices":[]`, false}, // cut short
	{`{"choices":[]} x`, false},
	{`{"x":01}`, false},
	{`{"x":"a` + "\x01" + `"}`, false},
	{`[]`, false},
	{``, false},
}

// TestDecodeChatTakesVLLMBodies: every recorded vLLM body takes the fast
// path (else it would be dead code), and the seeds go the way they say.
func TestDecodeChatTakesVLLMBodies(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "vllm", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var resp chatResponse
		require.True(t, decodeChat(data, &resp), f)
		checkDecodeChat(t, data)
	}
	for _, s := range decodeSeeds {
		var resp chatResponse
		require.Equal(t, s.fast, decodeChat([]byte(s.body), &resp), s.body)
		checkDecodeChat(t, []byte(s.body))
	}
}

// checkDecodeChat: a body the fast decoder takes is one json.Unmarshal
// takes too, to the same result.
func checkDecodeChat(t *testing.T, data []byte) {
	var fast, slow chatResponse
	if !decodeChat(data, &fast) {
		return
	}
	require.NoError(t, json.Unmarshal(data, &slow), "fast decoder took a body json.Unmarshal refuses: %q", data)
	require.True(t, reflect.DeepEqual(slow, fast), "fast decoder read %q otherwise:\nfast %s\nslow %s", data, dump(fast), dump(slow))
}

func dump(r chatResponse) string {
	b, _ := json.Marshal(r)
	return string(b)
}

// FuzzDecodeChat holds the fast decoder to json.Unmarshal on any body:
//
//	go test ./judgments -run '^$' -fuzz '^FuzzDecodeChat$' -fuzztime 60s
func FuzzDecodeChat(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "vllm", "*.json"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range decodeSeeds {
		f.Add([]byte(s.body))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDecodeChat(t, data) })
}
