package stub_test

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/stub"
)

// TestStreamChunksAsMarshalled: every chunk the twin streams, in the
// shapes its features make (continuous usage, logprobs and top_logprobs,
// speculative multi-token chunks, --stream-interval, reasoning under
// both key spellings, the usage-only chunk), is byte for byte what
// encoding/json makes of the same chunk.
func TestStreamChunksAsMarshalled(t *testing.T) {
	usage := `"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true},"ignore_eos":true,`
	for _, tc := range []struct {
		name  string
		edit  func(*stub.Profile)
		extra string
	}{
		{"plain", func(*stub.Profile) {}, `"stream":true,`},
		{"usage logprobs", func(*stub.Profile) {}, usage + `"logprobs":true,"top_logprobs":3,`},
		{"speculative", func(p *stub.Profile) {
			p.Speculative = &stub.Speculative{Method: "mtp", NumSpeculativeTokens: 3, Acceptance: []float64{0.9, 0.8, 0.7}}
		}, usage + `"logprobs":true,`},
		{"stream interval", func(p *stub.Profile) { p.StreamInterval = 4 }, usage},
		{"reasoning", func(p *stub.Profile) { p.Reasoning = &stub.Reasoning{Parser: "deepseek_r1"} }, usage},
		{"reasoning_content", func(p *stub.Profile) {
			p.Reasoning = &stub.Reasoning{Parser: "deepseek_r1"}
			p.VLLMVersion = "0.10.2"
		}, usage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tw := featureTwin(t, tc.edit)
				code, evs := tw.events(t, chatBody(tw.Model(), 40, tc.extra))
				require.Equal(t, http.StatusOK, code, evs)
				require.Equal(t, "[DONE]", evs[len(evs)-1])
				for _, ev := range evs[:len(evs)-1] {
					want, err := stub.RemarshalChunk(ev)
					require.NoError(t, err, ev)
					require.Equal(t, want, ev)
				}
				if strings.Contains(tc.name, "reasoning") {
					require.Contains(t, strings.Join(evs, "\n"), `"`+tc.name+`":`)
				}
			})
		})
	}
}
