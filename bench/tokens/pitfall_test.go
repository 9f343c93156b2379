package tokens_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/tokens"
	"github.com/vetbench/vetbench/bench/tokens/tokenstest"
	rtokens "github.com/vetbench/vetbench/receipts/tokens"
)

// The shared ladder re-sends identical prompts from point to point, the
// unique one never; the receipts say which.
func TestCachePitfallLadders(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{})
	shared, unique := runner(t, srv, tokens.WithSharedPrompts()), runner(t, srv)
	ins, err := tokens.CachePitfall(t.Context(), shared, unique, point(rtokens.WorkloadText, 0, 4, 1, 1), []int{1, 2})
	require.NoError(t, err)
	require.Len(t, ins, 2)
	for _, in := range ins {
		require.Equal(t, rtokens.CacheSharedPrompts, in.Shared.Identity.CacheIsolation)
		require.Equal(t, rtokens.CacheUniquePrompts, in.Unique.Identity.CacheIsolation)
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
	require.NoError(t, tokens.WriteInflation(&b, ins))
	require.Contains(t, b.String(), "inflation")
	require.Len(t, strings.Split(strings.TrimSpace(b.String()), "\n"), 3)

	_, err = tokens.CachePitfall(t.Context(), unique, shared, point(rtokens.WorkloadText, 0, 4, 1, 1), []int{1})
	require.ErrorContains(t, err, "want a shared-prompt runner")
}
