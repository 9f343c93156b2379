package sweep

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/speed"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// SpeedConfig is what a run on ep measures, keyed as receipts/speed names
// the configuration lines a benchmark output carries (speed.ConfigLines):
// the target kind, the model asked and its served root, the server build
// (from /version), the twin's profile, time scale, slowdown and faults,
// the scoring mode, how a judgment's requests are dispatched, the token benchmark's and the matrix's settings, and
// the slice digest of each set measured (none for a token run). A failed
// probe returns what is known and the error.
func SpeedConfig(ctx context.Context, ep bench.Endpoint, cfg config.Config, sets []fixtures.Set) (map[string]string, error) {
	t := ep.Target
	out := map[string]string{
		speed.KeyHarness:     bench.HarnessVersion,
		speed.KeyScoring:     string(cfg.Mode),
		speed.KeyDispatch:    string(cfg.Dispatch),
		speed.KeyServerFlags: cfg.ServerFlags,
		speed.KeyTokens:      tokensKey(cfg.Tokens),
		speed.KeyMatrix:      fmt.Sprintf("duration=%s output=%d targeting=%s", cfg.Matrix.Duration, cfg.Matrix.OutputTokens, cfg.Matrix.Targeting),
	}
	// Recorded only when said, so that closed-loop outputs without an SLO
	// keep the identity they had before open loops existed.
	if cfg.OpenLoop.On() {
		out[speed.KeyLoad] = fmt.Sprintf("open burstiness=%g max-concurrency=%d seed=%d", cfg.OpenLoop.Shape(), cfg.OpenLoop.MaxConcurrency, cfg.OpenLoop.Seed)
	}
	// The targets change the goodput figure; the stated goodput changes
	// only the verdict, and is left out.
	var targets []string
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"latency", cfg.SLO.Latency}, {"ttft", cfg.SLO.TTFT}, {"tpot", cfg.SLO.TPOT}} {
		if t.d > 0 {
			targets = append(targets, t.name+"="+t.d.String())
		}
	}
	if len(targets) > 0 {
		out[speed.KeySLO] = strings.Join(targets, " ")
	}
	if t.Kind == receipts.TargetLive || t.Kind == receipts.TargetTypevet {
		out[speed.KeyTarget] = "live"
	} else {
		out[speed.KeyTarget] = "twin"
		out[speed.KeyTwinProfile] = t.Profile
		out[speed.KeyTimeScale] = strconv.FormatFloat(max(t.TimeScale, 1), 'g', -1, 64)
		out[speed.KeySlowdown] = strconv.FormatFloat(cfg.Twin.Slowdown, 'g', -1, 64)
		out[speed.KeyTwinFaults] = strings.Join(cfg.Twin.Faults, ";")
	}
	if n := len(ep.Replicas) + 1; n > 1 {
		out[speed.KeyEndpoints] = strconv.Itoa(n)
	}
	if len(sets) > 0 {
		fix := make([]string, len(sets))
		for i, set := range sets {
			fix[i] = set.Name + "=" + set.SliceSHA256()[:12]
		}
		out[speed.KeyFixture] = strings.Join(fix, " ")
	}
	// The control timeout bounds each probe: a server that does not
	// answer is the run's failure to report, found in the control
	// timeout, not in a judgment's. The client masks the key in what the
	// server sends (a /version that echoes it) and leaves no origin.
	control := judgments.Secret(ep.APIKey).Guard(&http.Client{Timeout: cfg.ControlDeadline()})
	info, err := probe.Server(ctx, control, ep.BaseURL, ep.Authorize)
	if err != nil {
		return out, err
	}
	model := ep.Model
	if model == "" && len(info.Served) > 0 {
		model = info.Served[0].ID
	}
	out[speed.KeyModel] = model
	pins := receipts.Pins{Model: model}
	info.Pin(&pins)
	out[speed.KeyServedRoot] = receipts.Weights(pins)
	out[speed.KeyServerBuild] = info.Version
	return out, nil
}

// tokensKey is the token benchmark's identity line: its output length,
// and the completions endpoint when it streams from it (the chat line of
// earlier outputs is unchanged, so they still compare).
func tokensKey(t config.Tokens) string {
	k := fmt.Sprintf("output=%d", t.OutputTokens)
	if t.API == tokens.APICompletions {
		k += " api=completions"
	}
	return k
}
