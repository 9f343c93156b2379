package judgments

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRecordedResponses feeds bodies shaped as vLLM's serving code builds
// them (testdata/vllm/README.md) to the scoring code.
func TestRecordedResponses(t *testing.T) {
	noul := checksQuestions()[0] // payee_matches: (false, true) = controls 0, 1
	ctrl := Controls{"0": 236770, "1": 236771}
	cached := func(n int) *int { return &n }
	for _, tc := range []struct {
		file    string
		mode    Mode
		label   string
		sampled string
		off     bool
		cached  *int
		err     error
	}{
		{file: "ids_sampled_candidate.json", mode: ModeTokenIDs, label: "true", sampled: "token_id:236771"},
		{file: "ids_sampled_off_format.json", mode: ModeTokenIDs, label: "true", sampled: "token_id:818", off: true},
		{file: "ids_clamped.json", mode: ModeTokenIDs, label: "true", sampled: "token_id:236771"},
		{file: "ids_unrequested.json", mode: ModeTokenIDs, err: ErrUnexpectedToken},
		{file: "ids_older_server.json", mode: ModeTokenIDs, err: ErrMissingCandidate},
		{file: "ids_cached_tokens.json", mode: ModeTokenIDs, label: "true", sampled: "token_id:236771", cached: cached(432)},
		{file: "ids_cached_zero.json", mode: ModeTokenIDs, label: "true", sampled: "token_id:236771", cached: cached(0)},
		{file: "top_sampled_first_kth_dropped.json", mode: ModeTopLogprobs, label: "true", sampled: "0"},
		{file: "top_text_rank_order.json", mode: ModeTopLogprobs, label: "true", sampled: "1"},
		{file: "no_logprobs.json", mode: ModeTokenIDs, err: ErrNoLogprobs},
	} {
		t.Run(tc.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "vllm", tc.file))
			require.NoError(t, err)
			a, err := ScoreResponse(noul, body, ctrl, tc.mode)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.Empty(t, a.Label, "no verdict is invented")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.label, a.Label)
			require.Equal(t, tc.sampled, a.Sampled)
			require.Equal(t, tc.off, a.OffFormat)
			require.Equal(t, tc.cached, a.CachedTokens)
			require.Equal(t, 447, a.PromptTokens)
			sum := 0.0
			for _, p := range a.Probabilities {
				sum += p
			}
			require.InDelta(t, 1, sum, 1e-12)
		})
	}
}
