package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/tally"
)

// resetCaches resets every endpoint's caches; the reset of several is one
// that took only where it took at each of them.
func (s *Session) resetCaches(ctx context.Context, ctl *http.Client) (receipts.CacheReset, []receipts.CacheReset, error) {
	var each []receipts.CacheReset
	for _, base := range s.bases() {
		r, err := probe.ResetCaches(ctx, ctl, base, s.Endpoint.Authorize)
		if err != nil {
			if len(s.replicas) > 0 {
				err = fmt.Errorf("endpoint %s: %w", judgments.RedactURL(base), err)
			}
			return r, nil, err
		}
		each = append(each, r)
	}
	if len(each) == 1 {
		return each[0], each, nil
	}
	all := each[0]
	var notes []string
	for i, r := range each {
		all.Requested = all.Requested && r.Requested
		all.Prefix, all.MM, all.Encoder = all.Prefix && r.Prefix, all.MM && r.MM, all.Encoder && r.Encoder
		if r.Note != "" {
			notes = append(notes, stripURL(s.bases()[i])+": "+r.Note)
		}
	}
	all.Note = strings.Join(notes, "; ")
	return all, each, nil
}

// scrapeAll reads every endpoint's /metrics; a failed reading is a
// Snapshot carrying its error.
func (s *Session) scrapeAll(ctx context.Context, ctl *http.Client) []scrape.Snapshot {
	var out []scrape.Snapshot
	for _, base := range s.bases() {
		snap, _ := scrape.Fetch(ctx, ctl, base+"/metrics", scrape.WithAuthorize(s.Endpoint.Authorize))
		out = append(out, snap)
	}
	return out
}

// scrapeErr is the first failed reading's error.
func scrapeErr(snaps []scrape.Snapshot) error {
	for _, s := range snaps {
		if s.Err != nil {
			return s.Err
		}
	}
	return nil
}

// windowServer is the window's server block: the one endpoint's deltas, or
// the total of several (tally.SumServers) with each endpoint's own block.
func (s *Session) windowServer(before, after []scrape.Snapshot, reset receipts.CacheReset, resets []receipts.CacheReset) (receipts.Server, []*receipts.Server) {
	if len(before) == 1 {
		srv := scrape.Diff(before[0], after[0])
		srv.CacheReset = &reset
		return srv, nil
	}
	parts := make([]*receipts.Server, len(before))
	names := make([]string, len(before))
	for i := range before {
		srv := scrape.Diff(before[i], after[i])
		if i < len(resets) {
			srv.CacheReset = &resets[i]
		} else {
			srv.CacheReset = &receipts.CacheReset{Arm: reset.Arm, Note: reset.Note}
		}
		parts[i] = &srv
		names[i] = stripURL(s.bases()[i])
	}
	total := tally.SumServers(names, parts)
	total.CacheReset = &reset
	return *total, parts
}

// clientCounts is what the client saw of the outcome's requests, for the
// reconciliation with the server's counters.
func clientCounts(o Outcome, tp receipts.Throughput) audit.ClientCounts {
	unanswered := 0
	for _, r := range o.Results {
		unanswered += r.Judgment.Requests - len(r.Judgment.Answers)
	}
	return audit.ClientCounts{Requests: tp.Requests, PromptTokens: tp.PromptTokens, Unanswered: unanswered, CachedTokens: cachedTokens(o)}
}
