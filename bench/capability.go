package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/judgments"
)

// ErrTokenIDsIgnored says the server ignores logprob_token_ids (it is older
// than vLLM PR #43463), so token_ids scoring would fail every question.
var ErrTokenIDsIgnored = errors.New("the server ignores logprob_token_ids")

// checkTokenIDs asks the server, before anything is measured, whether it
// honours logprob_token_ids (probe.LogprobTokenIDs). One that does not
// stops the session, with what to do about it, unless the configuration
// allows falling back to top_logprobs: then the session scores that way and
// the receipts say why. A probe that fails (a 500, a dropped connection)
// proves nothing either way and is noted.
func (s *Session) checkTokenIDs(ctx context.Context, hc *http.Client, model string) error {
	if s.Client.Mode() != judgments.ModeTokenIDs {
		return nil
	}
	var ids []int
	for _, c := range s.Set.Spec.Controls() {
		ids = append(ids, s.Controls[c])
	}
	got, err := probe.LogprobTokenIDs(ctx, hc, s.Endpoint.BaseURL, s.Endpoint.Authorize, model, ids)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("probe logprob_token_ids: %w", ctx.Err())
	case err != nil:
		// A failing server tells nothing about the field: the run goes on
		// and fails, if it does, at its first question, with a receipt.
		s.Notes = append(s.Notes, "logprob_token_ids not checked before the run: "+err.Error())
		return nil
	}
	if got.Honoured {
		return nil
	}
	build := "build unknown"
	if s.Info.Version != "" {
		build = "vLLM " + s.Info.Version
	}
	why := fmt.Sprintf("scoring mode %s needs logprob_token_ids (vLLM >= %s, PR #43463), and this server (%s) ignores it: a one-token request asking for ids %v got %s of them back",
		judgments.ModeTokenIDs, probe.TokenIDsMinVersion, build, got.Asked, countWord(len(got.Asked)-len(got.Missing)))
	names := s.Options.Settings
	fallback := setting(names.ScoringFallback, "scoring fallback")
	if !s.Options.ScoringFallback {
		return &tokenIDsError{msg: fmt.Sprintf("%s; upgrade to vLLM >= %s, or on an older server set %s=%s to score from the top logprobs, or %s=true to let a run fall back by itself",
			why, probe.TokenIDsMinVersion, setting(names.Scoring, "scoring"), judgments.ModeTopLogprobs, fallback)}
	}
	s.Client = s.newClient(model, judgments.ModeTopLogprobs)
	s.Fallback = fmt.Sprintf("%s → %s: %s (%s=true)", judgments.ModeTokenIDs, judgments.ModeTopLogprobs, why, fallback)
	s.Notes = append(s.Notes, "scoring fell back to "+string(judgments.ModeTopLogprobs)+": "+why)
	return nil
}

// ErrRefused says the server refuses what every request of the set asks
// (more images than it takes a prompt): nothing of the set can be
// measured on it, so no receipt stands for a point never measured, and
// the run cannot give a verdict.
var ErrRefused = errors.New("the server refuses the set's requests")

// imagesRefused is ErrRefused in full when err is vLLM's refusal of the
// set's images (judgments.ImageLimit), with what to do; nil otherwise.
func (s *Session) imagesRefused(err error) error {
	limit, raisable, ok := judgments.ImageLimit(err)
	if !ok {
		return nil
	}
	most := 0
	for _, c := range s.Set.Cases {
		most = max(most, len(c.Item.Images))
	}
	fix := fmt.Sprintf("start vLLM with --limit-mm-per-prompt '{\"image\": %d}' or more", most)
	switch {
	case raisable:
	case limit == 0:
		fix = "the model takes no images: serve a vision-language model"
	default:
		fix = fmt.Sprintf("the model takes no more: serve one that takes %d", most)
	}
	return fmt.Errorf("%w: %s sends %d image(s) a request and the server takes at most %d (%v); %s", ErrRefused, s.Set.Name, most, limit, err, fix)
}

// tokenIDsError is ErrTokenIDsIgnored in full: why, and what to do.
type tokenIDsError struct{ msg string }

func (e *tokenIDsError) Error() string        { return e.msg }
func (e *tokenIDsError) Is(target error) bool { return target == ErrTokenIDsIgnored }

func countWord(n int) string {
	if n == 0 {
		return "none"
	}
	return fmt.Sprint(n)
}

// newClient is the session's client in mode m.
func (s *Session) newClient(model string, m judgments.Mode) *judgments.Client {
	return s.newClientAt(s.Endpoint.BaseURL, model, m)
}

// newClientAt is the session's client of the endpoint at base.
func (s *Session) newClientAt(base, model string, m judgments.Mode) *judgments.Client {
	return judgments.NewClient(base,
		judgments.WithModel(model),
		judgments.WithAPIKey(s.Endpoint.APIKey),
		judgments.WithHTTPClient(s.hc),
		judgments.WithMode(m),
		judgments.WithTopLogprobs(s.Options.TopLogprobs),
		judgments.WithRequestTimeout(s.Options.RequestTimeout),
		judgments.WithControlTimeout(s.Options.controlDeadline()),
		judgments.WithRequestIDPrefix(s.idPrefix),
		judgments.WithDispatch(s.Options.Dispatch),
	)
}

// cachedTokens sums the answers' usage.prompt_tokens_details.cached_tokens;
// nil when no answer carried it (the server runs without
// --enable-prompt-tokens-details, or is not vLLM).
func cachedTokens(o Outcome) *int {
	sum, seen := 0, false
	for _, r := range o.Results {
		for _, a := range r.Judgment.Answers {
			if a.CachedTokens != nil {
				sum += *a.CachedTokens
				seen = true
			}
		}
	}
	if !seen {
		return nil
	}
	return &sum
}
