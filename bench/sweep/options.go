package sweep

import (
	"slices"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/sweep/config"
)

// SessionOptions are what a run's configuration tells a measuring session:
// the one place a config.Config becomes bench.Options.
func SessionOptions(cfg config.Config) bench.Options {
	inFlight := slices.Max(append([]int{1}, cfg.Levels...))
	if cfg.OpenLoop.On() {
		inFlight = max(cfg.OpenLoop.MaxConcurrency, 1)
	}
	return bench.Options{
		Mode: cfg.Mode, TopLogprobs: cfg.TopLogprobs, ScoringFallback: cfg.ScoringFallback, Dispatch: cfg.Dispatch,
		RequestTimeout: cfg.RequestTimeout, ControlTimeout: cfg.ControlDeadline(),
		ContinueOnError: cfg.ContinueOnError, MaxFailed: cfg.MaxFailed, InFlight: inFlight,
		Burstiness: cfg.OpenLoop.Shape(), Seed: cfg.OpenLoop.Seed,
		SLOLatency: cfg.SLO.Latency, SLOGoodput: cfg.SLO.Goodput, GPUHourlyUSD: cfg.GPUHourlyUSD,
		ModelRevision: cfg.ModelRevision, ServerFlags: cfg.ServerFlags, ServerEnv: cfg.ServerEnv,
		Settings: bench.Settings{ContinueOnError: config.EnvContinueOnError, MaxFailed: config.EnvMaxFailed,
			Scoring: config.EnvScoring, ScoringFallback: config.EnvScoringFallback},
	}
}

// Points are the sweep's points for one set, in order: each level × arm
// for the closed loop, or each rate × arm for an open loop (capped at
// OpenLoop.MaxConcurrency).
func Points(cfg config.Config) []bench.Point {
	var out []bench.Point
	if cfg.OpenLoop.On() {
		for _, r := range cfg.OpenLoop.Rates {
			for _, arm := range cfg.Arms {
				out = append(out, bench.Point{Rate: r, Concurrency: cfg.OpenLoop.MaxConcurrency, Arm: arm, Warmup: cfg.Warmup})
			}
		}
		return out
	}
	for _, c := range cfg.Levels {
		for _, arm := range cfg.Arms {
			out = append(out, bench.Point{Concurrency: c, Arm: arm, Warmup: cfg.Warmup})
		}
	}
	return out
}
