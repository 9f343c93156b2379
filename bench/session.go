package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// Session is one endpoint and one set, ready to be measured: the server
// probed and the controls tokenized once per run, never per judgment.
type Session struct {
	Endpoint Endpoint
	Options  Options
	Set      fixtures.Set
	Client   *judgments.Client
	Info     probe.Info
	Controls judgments.Controls
	// control is the HTTP client of the probe, resets, scrapes and health
	// checks: the judgments' connections, each call bounded by
	// Options.ControlTimeout.
	control *http.Client
	// Notes are facts about the session worth a line in the receipt.
	Notes []string
	// Fallback says why the session scores in another mode than the one
	// configured (the server ignores logprob_token_ids); empty when not.
	Fallback string
	// OnProgress, when set, is told how far each measured window has got
	// (see Progress); the caller renders it. It must be cheap.
	OnProgress func(Progress)

	hc       *http.Client
	idPrefix string
	// replicas are the endpoints judgments are spread over, the first
	// endpoint first; nil for one (replicas.go).
	replicas []replica

	// Test seams (export_test.go): the pool's and sampler's clock, the
	// pool's held hook, and a wrapper around the judge in the window.
	clock func() time.Time
	held  func(i int)
	wrap  func(Judge) Judge
}

// NewSession probes the endpoint and pins the control tokens. o gives the
// run settings (scoring mode, timeouts, what the receipt pins).
func NewSession(ctx context.Context, ep Endpoint, set fixtures.Set, o Options) (*Session, error) {
	if ep.Target.Kind == "" {
		return nil, errors.New("endpoint: no target kind (live, container or inprocess) for the receipts")
	}
	if err := set.Spec.Validate(); err != nil {
		return nil, err
	}
	ep.BaseURL = strings.TrimRight(ep.BaseURL, "/")
	tr := o.Transport
	if tr == nil {
		tr = judgments.NewTransport(InFlight(o, set))
	}
	// Both clients mask the key in what the server sends and follow no
	// redirect out of the endpoint's origin.
	key := judgments.Secret(ep.APIKey)
	hc := key.Guard(&http.Client{Transport: tr})
	control := key.Guard(&http.Client{Transport: tr, Timeout: o.controlDeadline()})
	kind := ep.Target.Kind
	info, err := probe.Server(ctx, control, ep.BaseURL, ep.Authorize)
	if err != nil {
		return nil, fmt.Errorf("probe %s target: %w", kind, err)
	}
	model := ep.Model
	if model == "" && len(info.Served) > 0 {
		model = info.Served[0].ID
	}
	if err := info.Check(model); err != nil {
		return nil, fmt.Errorf("%s target: %w", kind, err)
	}
	s := &Session{Endpoint: ep, Options: o, Set: set, Info: info, control: control, Notes: append(append([]string(nil), ep.Notes...), info.Notes...),
		hc: hc, idPrefix: "vetbench-" + newRunID()[:8]}
	s.Client = s.newClient(model, o.Mode)
	s.Controls, err = s.Client.Tokenize(ctx, set.Spec.Controls())
	if err != nil {
		// Text-matched scoring needs no ids; a server without /tokenize is
		// fine there, and the receipt says the ids are not pinned.
		if o.Mode != judgments.ModeTopLogprobs || !errors.Is(err, judgments.ErrNoTokenizer) {
			return nil, fmt.Errorf("pin control tokens: %w", err)
		}
		s.Controls = nil
		s.Notes = append(s.Notes, "server has no /tokenize: control token ids not pinned (top_logprobs matches on text)")
	}
	// The capability probe is a chat request: bounded as one.
	if err := s.checkTokenIDs(ctx, key.Guard(&http.Client{Transport: tr, Timeout: o.RequestTimeout}), model); err != nil {
		return nil, fmt.Errorf("%s target: %w", kind, err)
	}
	if err := s.addReplicas(ctx, model); err != nil {
		return nil, fmt.Errorf("%s target: %w", kind, err)
	}
	return s, nil
}

// controlClient is the session's bounded client (a Session built by hand
// gets one on the judgments' transport).
func (s *Session) controlClient() *http.Client {
	if s.control == nil {
		s.control = judgments.Secret(s.Endpoint.APIKey).Guard(&http.Client{Transport: s.Client.HTTPClient().Transport, Timeout: s.Options.controlDeadline()})
	}
	return s.control
}

// receipt starts a receipt with everything known before the run.
func (s *Session) receipt(c int) *receipts.Receipt {
	rec := &receipts.Receipt{
		Schema:  receipts.Schema,
		Source:  receipts.SourceVetbench,
		Set:     s.Set.Name,
		RunID:   newRunID(),
		Started: time.Now().UTC(),
		Target:  s.Endpoint.Receipt(),
		Pins: receipts.Pins{
			Model:            s.Client.Model(),
			ModelRevision:    s.Options.ModelRevision,
			ScoringMode:      string(s.Client.Mode()),
			ScoringFallback:  s.Fallback,
			Controls:         s.Controls,
			Concurrency:      c,
			QuestionDispatch: dispatch(s.Client.Dispatch()),
			Fixture: receipts.FixturePins{
				Dataset:     s.Set.Pins.Dataset,
				Source:      s.Set.Pins.Source,
				Seed:        s.Set.Pins.Seed,
				Items:       len(s.Set.Cases),
				SliceSHA256: s.Set.SliceSHA256(),
				Extra:       s.Set.Pins.Extra,
			},
		},
		Identity: receipts.Identity{
			PromptDigests:  s.Set.Spec.PromptDigests(),
			FixtureDigests: s.Set.Digests(),
			HarnessVersion: HarnessVersion,
			ServerFlags:    s.Options.ServerFlags,
			ServerEnv:      s.Options.ServerEnv,
		},
		// Set before the run so that a receipt of a run that never got to
		// its window (a failed warmup) is still a valid receipt.
		Throughput: receipts.Throughput{Concurrency: c},
		Warnings:   append([]string(nil), s.Notes...),
	}
	if s.Client.Mode() == judgments.ModeTopLogprobs {
		rec.Pins.TopLogprobs = s.Options.TopLogprobs
	}
	s.Info.Pin(&rec.Pins)
	return rec
}

// dispatch is how the session's client sends a judgment's requests, as
// receipts name it.
func dispatch(d judgments.Dispatch) receipts.Dispatch {
	switch d {
	case judgments.DispatchFanOut:
		return receipts.DispatchFanOut
	case judgments.DispatchTypevet:
		return receipts.DispatchTypevet
	}
	return receipts.DispatchSequential
}

// InFlight is the most requests a session of set has in flight at once:
// the judgments in flight (o.InFlight), times the questions of a judgment
// with fan-out. The transport keeps an idle connection for each.
func InFlight(o Options, set fixtures.Set) int {
	n := max(o.InFlight, 1)
	if o.Dispatch == judgments.DispatchFanOut {
		n *= max(len(set.Spec.Questions), 1)
	}
	return n
}

func newRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
