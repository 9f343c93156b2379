package tokens

import (
	"encoding/json"
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
