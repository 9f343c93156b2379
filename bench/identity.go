package bench

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/bench/config"
	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/speed"
)

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// SpeedConfig is what a run on ep measures, keyed as receipts/speed names
// the configuration lines a benchmark output carries (speed.ConfigLines):
// the target kind, the model asked and its served root, the server build
// (from /version), the twin's profile, time scale, slowdown and faults,
// the scoring mode, whether a judgment's questions fan out, the token benchmark's and the matrix's settings, and
// the slice digest of each set measured (none for a token run). A failed
// probe returns what is known and the error.
func SpeedConfig(ctx context.Context, ep Endpoint, cfg config.Config, sets []fixtures.Set) (map[string]string, error) {
	t := ep.Target
	out := map[string]string{
		speed.KeyHarness:     HarnessVersion,
		speed.KeyScoring:     string(cfg.Mode),
		speed.KeyFanOut:      onOff(cfg.FanOut),
		speed.KeyServerFlags: cfg.ServerFlags,
		speed.KeyTokens:      fmt.Sprintf("output=%d", cfg.Tokens.OutputTokens),
		speed.KeyMatrix:      fmt.Sprintf("duration=%s output=%d targeting=%s", cfg.Matrix.Duration, cfg.Matrix.OutputTokens, cfg.Matrix.Targeting),
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
	if len(sets) > 0 {
		fix := make([]string, len(sets))
		for i, set := range sets {
			fix[i] = set.Name + "=" + set.SliceSHA256()[:12]
		}
		out[speed.KeyFixture] = strings.Join(fix, " ")
	}
	// The run's request timeout bounds the probe: a server that does not
	// answer is the run's failure to report, not a hang here.
	if cfg.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.RequestTimeout)
		defer cancel()
	}
	info, err := probe.Server(ctx, http.DefaultClient, ep.BaseURL, ep.authorize)
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
