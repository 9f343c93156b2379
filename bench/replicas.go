package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
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
