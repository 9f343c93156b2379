package audit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/receipts"
)

// server returns window deltas as scrape.Diff would report them.
func server(requests, promptTokens float64) *receipts.Server {
	return &receipts.Server{Status: scrape.StatusOK, Counters: map[string]float64{
		scrape.RequestSuccess: requests,
		scrape.PromptTokens:   promptTokens,
	}}
}

// withGauges sets running/waiting before and after the window.
func withGauges(s *receipts.Server, runBefore, waitBefore, runAfter, waitAfter float64) *receipts.Server {
	p := func(v float64) *float64 { return &v }
	s.Gauges = map[string]receipts.GaugePair{
		scrape.GaugeRequestsRunning: {Before: p(runBefore), After: p(runAfter)},
		scrape.GaugeRequestsWaiting: {Before: p(waitBefore), After: p(waitAfter)},
	}
	return s
}

func TestReconcile(t *testing.T) {
	// typevet's CEDAR c16 run: 60 judgments × 3 questions, 122730 prompt
	// tokens on both sides.
	clean := ClientCounts{Requests: 180, PromptTokens: 122730}
	tests := []struct {
		name    string
		client  ClientCounts
		server  *receipts.Server
		ok      bool
		verdict string
		detail  string
	}{
		{"exact match", clean, server(180, 122730), true, VerdictOK, ""},
		{"a second client's 3 requests", clean, server(183, 124770), false, VerdictMismatch,
			"the server finished 183 requests, the client sent 180 (180 answered, 0 unanswered): 3 from another client; the server counted 124770 prompt tokens, the client's answers report 122730: 2040 from elsewhere"},
		{"a second client's tokens only (same count, other prompts)", clean, server(180, 122731), false, VerdictMismatch,
			"the server counted 122731 prompt tokens, the client's answers report 122730: 1 from elsewhere"},
		{"requests the server did not record", clean, server(177, 120684), false, VerdictMismatch,
			"the server finished 177 requests but the client got 180 answers: 3 not recorded by this server; the server counted 120684 prompt tokens, the client's answers report 122730: 2046 missing"},
		{"timeouts within the slack", ClientCounts{Requests: 178, PromptTokens: 121366, Unanswered: 2}, server(180, 122730), true, VerdictOK,
			"within the slack of 2 unanswered request(s)"},
		{"timeouts never reached the engine", ClientCounts{Requests: 178, PromptTokens: 121366, Unanswered: 2}, server(178, 121366), true, VerdictOK,
			"within the slack of 2 unanswered request(s)"},
		{"more than the slack", ClientCounts{Requests: 178, PromptTokens: 121366, Unanswered: 2}, server(181, 123000), false, VerdictMismatch,
			"the server finished 181 requests, the client sent 180 (178 answered, 2 unanswered): 1 from another client"},
		{"another client's request spans the window", clean, withGauges(server(180, 122730), 1, 0, 1, 0), false, VerdictMismatch,
			"the server had 1 request(s) running or waiting when the window opened; the server still had 1 request(s) running or waiting after the window (the client left 0 unanswered)"},
		{"a request queued after the window", clean, withGauges(server(180, 122730), 0, 0, 0, 2), false, VerdictMismatch,
			"the server still had 2 request(s) running or waiting after the window (the client left 0 unanswered)"},
		{"own timed-out request still running after", ClientCounts{Requests: 179, PromptTokens: 122048, Unanswered: 1}, withGauges(server(179, 122048), 0, 0, 1, 0), true, VerdictOK,
			"within the slack of 1 unanswered request(s)"},
		{"idle at both edges", clean, withGauges(server(180, 122730), 0, 0, 0, 0), true, VerdictOK, ""},
		{"no server figures", clean, nil, false, "unknown: no server metrics", ""},
		{"server figures unknown", clean, &receipts.Server{Status: "unknown: scrape failed"}, false, "unknown: server counters unavailable (unknown: scrape failed)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Reconcile(tt.client, tt.server)
			require.Equal(t, tt.ok, got.OK)
			require.Equal(t, tt.verdict, got.Verdict)
			require.Equal(t, tt.detail, got.Detail)
			require.Equal(t, tt.client.Requests, got.ClientRequests)
			require.Equal(t, tt.client.PromptTokens, got.ClientPromptTokens)
			require.Equal(t, tt.client.Unanswered, got.ClientUnanswered)
			if tt.server != nil && tt.server.Counters != nil {
				require.Equal(t, tt.server.Counters[scrape.RequestSuccess], got.ServerRequests)
				require.Equal(t, tt.server.Counters[scrape.PromptTokens], got.ServerPromptTokens)
			}
		})
	}
}

// The answers' cached_tokens (prompt_tokens_details) must add up to the
// prefix-cache hits /metrics counted, local and external.
func TestReconcileCachedTokens(t *testing.T) {
	n := func(v int) *int { return &v }
	withHits := func(local, external float64) *receipts.Server {
		s := server(180, 122730)
		s.Counters[scrape.PrefixCacheHits] = local
		if external > 0 {
			s.Extra = map[string]float64{scrape.ExtraExternalHits: external}
		}
		return s
	}
	clean := ClientCounts{Requests: 180, PromptTokens: 122730}
	for _, tc := range []struct {
		name   string
		cached *int
		server *receipts.Server
		ok     bool
		detail string
	}{
		{"agree", n(67008), withHits(67008, 0), true, ""},
		{"agree with a KV connector", n(107008), withHits(67008, 40000), true, ""},
		{"server counted more", n(67000), withHits(67008, 0), false, "the server counted 67008 prefix-cache hits, the answers report 67000 cached prompt tokens: 8 from elsewhere"},
		{"server counted fewer", n(67100), withHits(67008, 0), false, "the answers report 67100 cached prompt tokens, the server's prefix-cache hits 67008: 92 not counted"},
		{"not sent", nil, withHits(67008, 0), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clean
			c.CachedTokens = tc.cached
			got := Reconcile(c, tc.server)
			require.Equal(t, tc.ok, got.OK, got.Detail)
			require.Contains(t, got.Detail, tc.detail)
			if tc.cached != nil {
				require.Equal(t, *tc.cached, *got.ClientCachedTokens)
				require.NotNil(t, got.ServerCachedTokens)
			} else {
				require.Nil(t, got.ClientCachedTokens)
			}
		})
	}
}
