package probe_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/stub"
)

// The probe against the twin as vLLM now (it honours logprob_token_ids)
// and as a server older than PR #43463 (it ignores the field).
func TestLogprobTokenIDs(t *testing.T) {
	ids := []int{stub.TokenDigit0, stub.TokenDigit0 + 1}
	for _, tc := range []struct {
		name     string
		twin     stub.Config
		honoured bool
	}{
		{"current", stub.Config{}, true},
		{"older", stub.Config{Legacy: true}, false},
		// The N+1 shape (greedy token not asked) is still honoured.
		{"off-format", stub.Config{OffFormat: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := stub.Start(tc.twin)
			require.NoError(t, err)
			t.Cleanup(func() { _ = rs.Close() })
			got, err := probe.LogprobTokenIDs(t.Context(), nil, rs.URL(), nil, rs.Model(), ids)
			require.NoError(t, err)
			require.Equal(t, tc.honoured, got.Honoured)
			require.Equal(t, ids, got.Asked)
			if !tc.honoured {
				require.Equal(t, ids, got.Missing)
			}
		})
	}
}

// A server with --api-key: the probe says what the 401 means, never the key.
func TestProbesUnauthorized(t *testing.T) {
	rs, err := stub.Start(stub.Config{APIKeys: []string{"k-right"}, DevMode: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rs.Close() })
	bearer := func(k string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+k) }
	}
	for _, tc := range []struct {
		auth func(*http.Request)
		want string
	}{
		{nil, "the server wants an API key (VETBENCH_API_KEY)"},
		{bearer("k-wrong"), "the key was refused"},
	} {
		_, err := probe.Server(t.Context(), nil, rs.URL(), tc.auth)
		require.ErrorIs(t, err, judgments.ErrUnauthorized)
		require.ErrorContains(t, err, tc.want)
		require.NotContains(t, err.Error(), "k-wrong")
		_, err = probe.LogprobTokenIDs(t.Context(), nil, rs.URL(), tc.auth, rs.Model(), []int{1})
		require.ErrorContains(t, err, tc.want)
		_, err = probe.ResetCaches(t.Context(), nil, rs.URL(), tc.auth)
		require.ErrorContains(t, err, tc.want)
	}
	info, err := probe.Server(t.Context(), nil, rs.URL(), bearer("k-right"))
	require.NoError(t, err)
	require.Equal(t, stub.Version, info.Version, "/version is public")
}
