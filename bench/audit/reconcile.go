package audit

import (
	"fmt"
	"strings"

	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/receipts"
)

// Verdicts of a reconciliation; an unknown one reads "unknown: <why>".
const (
	VerdictOK       = "ok"
	VerdictMismatch = "shared server or lost requests"
)

// ClientCounts is what the client saw inside the measured window, counted per
// chat request (a judgment asks one request per question).
type ClientCounts struct {
	// Requests answered with HTTP 200, whatever became of the judgment
	// afterwards (a scoring failure after a 200 still cost the server a
	// request).
	Requests int
	// PromptTokens is the sum of usage.prompt_tokens over those answers.
	PromptTokens int
	// Unanswered are requests sent that got no 200 (timeouts, transport
	// errors, 4xx/5xx): the server may have finished them (vLLM counts an
	// aborted request under finished_reason="abort") or never seen them.
	Unanswered int
	// CachedTokens is the sum of usage.prompt_tokens_details.cached_tokens
	// over the answers; nil when the server sent none.
	CachedTokens *int
}

// Reconcile compares the server's window deltas with the client's counts.
//
// Nothing but this client should talk to the server during the window, so
// the check is exact: request_success must equal the answered requests and
// prompt_tokens the sum of usage.prompt_tokens (vLLM counts the whole prompt,
// cached tokens included, as usage does; typevet's H100 receipts match to
// the token). The one slack is Unanswered: each may or may not be counted, so
// the server's requests may lie anywhere in [Requests, Requests+Unanswered]
// and its prompt tokens may exceed the client's (by how much is unknown).
// More on the server means another client shared it (its traffic is in every
// server figure of the run); less means requests the server did not record
// (another replica answered, or the counters belong to another server).
// Requests running or waiting on the server at either edge of the window
// (beyond the client's own unanswered ones after it) are another client's
// too, even when the counts happen to agree.
func Reconcile(c ClientCounts, srv *receipts.Server) receipts.Reconciliation {
	out := receipts.Reconciliation{
		ClientRequests:     c.Requests,
		ClientPromptTokens: c.PromptTokens,
		ClientUnanswered:   c.Unanswered,
	}
	if srv == nil {
		out.Verdict = "unknown: no server metrics"
		return out
	}
	reqs, okR := srv.Counters[scrape.RequestSuccess]
	toks, okT := srv.Counters[scrape.PromptTokens]
	if !okR || !okT {
		out.Verdict = fmt.Sprintf("unknown: server counters unavailable (%s)", srv.Status)
		return out
	}
	out.ServerRequests, out.ServerPromptTokens = reqs, toks

	var details []string
	lo, hi := float64(c.Requests), float64(c.Requests+c.Unanswered)
	switch {
	case reqs > hi:
		details = append(details, fmt.Sprintf("the server finished %.0f requests, the client sent %d (%d answered, %d unanswered): %.0f from another client",
			reqs, c.Requests+c.Unanswered, c.Requests, c.Unanswered, reqs-hi))
	case reqs < lo:
		details = append(details, fmt.Sprintf("the server finished %.0f requests but the client got %d answers: %.0f not recorded by this server",
			reqs, c.Requests, lo-reqs))
	}
	ct := float64(c.PromptTokens)
	switch {
	case toks < ct:
		details = append(details, fmt.Sprintf("the server counted %.0f prompt tokens, the client's answers report %d: %.0f missing", toks, c.PromptTokens, ct-toks))
	case toks > ct && c.Unanswered == 0:
		details = append(details, fmt.Sprintf("the server counted %.0f prompt tokens, the client's answers report %d: %.0f from elsewhere", toks, c.PromptTokens, toks-ct))
	}
	// A request of another client that spans the whole window shows in no
	// counter delta, yet it shared the GPU: the gauges at the edges see it.
	// (On typevet's H100 runs both read 0 before and after every window.)
	if n := busy(srv, func(p receipts.GaugePair) *float64 { return p.Before }); n > 0 {
		details = append(details, fmt.Sprintf("the server had %.0f request(s) running or waiting when the window opened", n))
	}
	if n := busy(srv, func(p receipts.GaugePair) *float64 { return p.After }); n > float64(c.Unanswered) {
		details = append(details, fmt.Sprintf("the server still had %.0f request(s) running or waiting after the window (the client left %d unanswered)", n, c.Unanswered))
	}
	details = append(details, reconcileCached(c, srv, &out)...)
	if len(details) == 0 {
		out.OK, out.Verdict = true, VerdictOK
		if c.Unanswered > 0 {
			out.Detail = fmt.Sprintf("within the slack of %d unanswered request(s)", c.Unanswered)
		}
		return out
	}
	out.Verdict = VerdictMismatch
	out.Detail = strings.Join(details, "; ")
	return out
}

// busy sums the running and waiting gauges at one edge of the window; 0 when
// they were not read.
func busy(srv *receipts.Server, edge func(receipts.GaugePair) *float64) float64 {
	var n float64
	for _, k := range []string{scrape.GaugeRequestsRunning, scrape.GaugeRequestsWaiting} {
		if v := edge(srv.Gauges[k]); v != nil {
			n += *v
		}
	}
	return n
}

// reconcileCached compares the per-request cached tokens with the prefix
// cache hits /metrics counted. A request's num_cached_tokens is its local
// and external (KV connector) hit at its first scheduling
// (vllm/v1/core/sched/scheduler.py), and since vllm#48860 the counters
// record that same lookup once, at admission (preempted re-lookups go to
// separate counters), so the two agree to the token; on older servers a
// request that waited for KV blocks was counted again at every step.
func reconcileCached(c ClientCounts, srv *receipts.Server, out *receipts.Reconciliation) []string {
	if c.CachedTokens == nil {
		return nil
	}
	hits, ok := srv.Counters[scrape.PrefixCacheHits]
	if !ok {
		return nil
	}
	hits += srv.Extra[scrape.ExtraExternalHits]
	client := *c.CachedTokens
	out.ClientCachedTokens, out.ServerCachedTokens = &client, &hits
	ct := float64(client)
	switch {
	case hits < ct:
		return []string{fmt.Sprintf("the answers report %d cached prompt tokens, the server's prefix-cache hits %.0f: %.0f not counted by this server", client, hits, ct-hits)}
	case hits > ct && c.Unanswered == 0:
		return []string{fmt.Sprintf("the server counted %.0f prefix-cache hits, the answers report %d cached prompt tokens: %.0f from elsewhere (another client, or a server before vllm#48860 counting a request waiting for KV blocks at every step)", hits, client, hits-ct)}
	}
	return nil
}
