package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/tally"
)

// ErrReplicaDrift: the endpoints of one session do not serve the same
// model from the same build, so their answers would not be one experiment.
var ErrReplicaDrift = errors.New("endpoints differ")

// ErrSeveralEndpoints: a measurement of one server's figures (token
// throughput, the speed matrix) was given several endpoints.
var ErrSeveralEndpoints = errors.New("several endpoints")

// replica is one of the endpoints a session spreads its judgments over.
type replica struct {
	base   string // no trailing slash
	client *judgments.Client
}

// addReplicas probes Endpoint.Replicas after the first endpoint is set up:
// each must serve the same models (ids, roots, context lengths) from the
// same build (/version) and tokenize the controls to the same ids, or the
// session fails with ErrReplicaDrift naming the endpoint and what differs.
// A replica of another build is not tolerated as "drift listed in the
// receipt": answers and speed depend on it, and a receipt pins one build.
func (s *Session) addReplicas(ctx context.Context, model string) error {
	if len(s.Endpoint.Replicas) == 0 {
		return nil
	}
	s.replicas = []replica{{base: s.Endpoint.BaseURL, client: s.Client}}
	first := judgments.RedactURL(s.Endpoint.BaseURL)
	for _, raw := range s.Endpoint.Replicas {
		base := strings.TrimRight(raw, "/")
		shown := judgments.RedactURL(base)
		if slices.ContainsFunc(s.replicas, func(r replica) bool { return r.base == base }) {
			return fmt.Errorf("endpoint %s is given twice: its requests would count twice", shown)
		}
		info, err := probe.Server(ctx, s.controlClient(), base, s.Endpoint.Authorize)
		if err != nil {
			return fmt.Errorf("probe endpoint %s: %w", shown, err)
		}
		if err := info.Check(model); err != nil {
			return fmt.Errorf("%w: endpoint %s: %w", ErrReplicaDrift, shown, err)
		}
		if a, b := served(s.Info.Served), served(info.Served); a != b {
			return fmt.Errorf("%w: endpoint %s serves %s, endpoint %s serves %s: one model across endpoints", ErrReplicaDrift, first, a, shown, b)
		}
		if s.Info.Version != info.Version {
			return fmt.Errorf("%w: endpoint %s runs build %q, endpoint %s runs %q: one build across endpoints", ErrReplicaDrift, first, s.Info.Version, shown, info.Version)
		}
		c := s.newClientAt(base, model, s.Client.Mode())
		if s.Controls != nil {
			ids, err := c.Tokenize(ctx, s.Set.Spec.Controls())
			if err != nil {
				return fmt.Errorf("endpoint %s: pin control tokens: %w", shown, err)
			}
			if !maps.Equal(ids, s.Controls) {
				return fmt.Errorf("%w: endpoint %s tokenizes the controls to %v, endpoint %s to %v: another tokenizer", ErrReplicaDrift, first, s.Controls, shown, ids)
			}
		}
		s.replicas = append(s.replicas, replica{base: base, client: c})
	}
	return nil
}

func served(ms []receipts.ServedModel) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%s (root %q, max_model_len %d)", m.ID, m.Root, m.MaxModelLen)
	}
	return strings.Join(parts, ", ")
}

// bases are the session's endpoints' base URLs, the first endpoint first.
func (s *Session) bases() []string {
	if len(s.replicas) == 0 {
		return []string{s.Endpoint.BaseURL}
	}
	out := make([]string, len(s.replicas))
	for i, r := range s.replicas {
		out[i] = r.base
	}
	return out
}

// judges are the session's clients, one per endpoint.
func (s *Session) judges() []*judgments.Client {
	if len(s.replicas) == 0 {
		return []*judgments.Client{s.Client}
	}
	out := make([]*judgments.Client, len(s.replicas))
	for i, r := range s.replicas {
		out[i] = r.client
	}
	return out
}

// windowJudge is what the window's pool calls: the client, or a Balancer
// over the endpoints' clients (returned too, nil for one endpoint).
func (s *Session) windowJudge() (Judge, *Balancer) {
	if len(s.replicas) == 0 {
		return s.Client, nil
	}
	js := make([]Judge, len(s.replicas))
	for i, r := range s.replicas {
		js[i] = r.client
	}
	b := NewBalancer(js...)
	return b, b
}

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

// endpointFigures splits the window's outcome by the endpoint that took
// each judgment: each endpoint's throughput (over the window's whole wall
// time, from the same receipts/tally code as the total), its server block
// and its reconciliation. nil for one endpoint; an outcome the balancer
// cannot split (an item judged twice) gets none either, and a warning.
func (s *Session) endpointFigures(set fixtures.Set, o Outcome, c int, bal *Balancer, parts []*receipts.Server) ([]receipts.EndpointFigures, string) {
	if bal == nil {
		return nil, ""
	}
	split := make([]Outcome, len(parts))
	for i := range split {
		split[i] = Outcome{Wall: o.Wall, StopIndex: o.StopIndex, StopErr: o.StopErr, Canceled: o.Canceled}
	}
	for _, r := range o.Results {
		i, ok := bal.Took(set.Cases[r.Index].Item.ID)
		if !ok || i >= len(split) {
			return nil, fmt.Sprintf("per-endpoint figures left out: item %s cannot be assigned to one endpoint", set.Cases[r.Index].ID)
		}
		split[i].Results = append(split[i].Results, r)
	}
	out := make([]receipts.EndpointFigures, len(parts))
	for i, part := range split {
		_, tp, _ := figures(set, part, c)
		rc := audit.Reconcile(clientCounts(part, tp), parts[i])
		out[i] = receipts.EndpointFigures{Endpoint: stripURL(s.bases()[i]), Throughput: tp, Server: parts[i], Reconciliation: &rc}
	}
	return out, ""
}
