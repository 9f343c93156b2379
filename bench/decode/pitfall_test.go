package decode_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/decode/tokenstest"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// The shared ladder re-sends identical prompts from point to point, the
// unique one never; the receipts say which.
func TestCachePitfallLadders(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{})
	shared, unique := runner(t, srv, decode.WithSharedPrompts()), runner(t, srv)
	ins, err := decode.CachePitfall(t.Context(), shared, unique, point(tokens.WorkloadText, 0, 4, 1, 1), []int{1, 2})
	require.NoError(t, err)
	require.Len(t, ins, 2)
	for _, in := range ins {
		require.Equal(t, tokens.CacheSharedPrompts, in.Shared.Identity.CacheIsolation)
		require.Equal(t, tokens.CacheUniquePrompts, in.Unique.Identity.CacheIsolation)
	}
	texts := map[string]int{}
	for _, q := range srv.Requests() {
		texts[q.Text]++
	}
	// Shared: c=1 sends prompt 1 twice (warm-up, run); c=2 prompts 1 and 2
	// twice each. Unique: 6 prompts, once each.
	var repeated []int
	for _, n := range texts {
		if n > 1 {
			repeated = append(repeated, n)
		}
	}
	require.ElementsMatch(t, []int{4, 2}, repeated)
	require.Len(t, texts, 2+6)

	var b strings.Builder
	require.NoError(t, decode.WriteInflation(&b, ins))
	require.Contains(t, b.String(), "inflation")
	require.Len(t, strings.Split(strings.TrimSpace(b.String()), "\n"), 3)

	_, err = decode.CachePitfall(t.Context(), unique, shared, point(tokens.WorkloadText, 0, 4, 1, 1), []int{1})
	require.ErrorContains(t, err, "want a shared-prompt runner")
}

func TestPitfallReport(t *testing.T) {
	t.Parallel()
	rec := func(tokS float64) *tokens.Receipt {
		r := &tokens.Receipt{}
		r.Summary.AggregateOutputTokS = tokS
		return r
	}
	rep := decode.NewPitfallReport()
	rep.Add("text", []decode.Inflation{{Concurrency: 4, Shared: rec(150), Unique: rec(100), Rel: 0.5, TTFTRel: -0.25}})
	rep.Add("one_image", nil)
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.JSONEq(t, `{"schema":"vetbench.tokens-pitfall/v1","workloads":[
		{"workload":"text","levels":[{"concurrency":4,"shared_tok_s":150,"unique_tok_s":100,"inflation":0.5,"ttft_relative":-0.25}]},
		{"workload":"one_image","levels":[]}]}`, string(b))
}
