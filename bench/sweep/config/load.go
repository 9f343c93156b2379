package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// OpenLoop is the open-loop load: judgments arriving at stated rates
// instead of c kept in flight. No rates is the closed loop.
type OpenLoop struct {
	// Rates are the arrival rates to measure, judgments per second; each is
	// a point of the sweep (instead of Levels).
	Rates []float64
	// Burstiness is the gamma shape of the inter-arrival times, as vllm
	// bench serve --burstiness: 1 Poisson, below 1 burstier, +Inf constant;
	// 0 means DefaultBurstiness.
	Burstiness float64
	// MaxConcurrency caps the judgments in flight; later arrivals wait in
	// the client queue. 0 = no cap.
	MaxConcurrency int
	// Seed seeds the arrival schedule (recorded in the receipt).
	Seed int64
}

// On says whether the run is an open loop.
func (o OpenLoop) On() bool { return len(o.Rates) > 0 }

// Shape is Burstiness, DefaultBurstiness when unset.
func (o OpenLoop) Shape() float64 {
	if o.Burstiness == 0 {
		return DefaultBurstiness
	}
	return o.Burstiness
}

// SLO is a stated service-level objective: a latency target per judgment
// and, optionally, the share of judgments that must be within it.
type SLO struct {
	// Latency is the per-judgment target (response time: client queue and
	// service); 0 = none.
	Latency time.Duration
	// TTFT and TPOT are a token run's per-request targets (time to first
	// token; time per output token after the first, vllm bench serve's
	// TPOT); 0 = none. A request is good when it meets every one given.
	TTFT, TPOT time.Duration
	// Goodput is the share (0..1] of finished judgments (token runs:
	// requests) that must be within the targets; 0 = none stated (goodput
	// is still reported).
	Goodput float64
}

// Open-loop and SLO variables.
const (
	EnvRate           = "VETBENCH_RATE"
	EnvBurstiness     = "VETBENCH_BURSTINESS"
	EnvMaxConcurrency = "VETBENCH_MAX_CONCURRENCY"
	EnvLoadSeed       = "VETBENCH_LOAD_SEED"
	EnvSLO            = "VETBENCH_SLO"
	EnvSLOGoodput     = "VETBENCH_SLO_GOODPUT"
	EnvSLOTTFT        = "VETBENCH_SLO_TTFT"
	EnvSLOTPOT        = "VETBENCH_SLO_TPOT"
)

// DefaultBurstiness is a Poisson process, vllm bench serve's default.
const DefaultBurstiness = 1.0

// loadSettings are the open loop's and the latency targets'.
func loadSettings() []setting {
	return slices.Concat(openLoopSettings(), sloSettings())
}

// openLoopSettings drive an open loop: arrival rates, burstiness, the concurrency cap, the schedule's seed.
func openLoopSettings() []setting {
	return []setting{
		{env: EnvRate, flag: "rate", key: "load.rate", sep: ",", usage: "open loop: comma-separated arrival `rates` in judgments/s, one point each (" + EnvRate + "; unset: closed loop at -levels)",
			set: func(c *Config, v string) error {
				var rates []float64
				for _, s := range splitList(v) {
					f, err := strconv.ParseFloat(s, 64)
					if err != nil || !(f > 0) || math.IsInf(f, 0) {
						return fmt.Errorf("%q is not a rate > 0 (judgments per second)", s)
					}
					if slices.Contains(rates, f) {
						return fmt.Errorf("rate %g given twice (its receipts would share a name)", f)
					}
					rates = append(rates, f)
				}
				if len(rates) == 0 {
					return errors.New("want at least one rate")
				}
				c.OpenLoop.Rates = rates
				return nil
			}, show: func(c *Config) string {
				if !c.OpenLoop.On() {
					return ""
				}
				parts := make([]string, len(c.OpenLoop.Rates))
				for i, r := range c.OpenLoop.Rates {
					parts[i] = tomlFloat(r)
				}
				return "[" + strings.Join(parts, ", ") + "]"
			}},
		{env: EnvBurstiness, flag: "burstiness", key: "load.burstiness", usage: "open loop: gamma `shape` of inter-arrival times: 1 Poisson, <1 burstier, inf constant (" + EnvBurstiness + ")", def: "1",
			set: func(c *Config, v string) error {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || !(f > 0) {
					return errors.New("want a number > 0 (1 = Poisson) or inf (constant arrivals)")
				}
				c.OpenLoop.Burstiness = f
				return nil
			}, show: func(c *Config) string {
				switch b := c.OpenLoop.Shape(); {
				case !c.OpenLoop.On() && c.OpenLoop.Burstiness == 0:
					return "" // a closed loop: nothing said
				case math.IsInf(b, 1):
					return "inf"
				default:
					return tomlFloat(b)
				}
			}},
		{env: EnvMaxConcurrency, flag: "max-concurrency", key: "load.max_concurrency", usage: "open loop: cap on judgments in flight, `n`; later arrivals wait in the client (" + EnvMaxConcurrency + "; 0 = no cap)", def: "0",
			set: func(c *Config, v string) error {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil || n < 0 {
					return errors.New("want a whole number >= 0 (0 = no cap)")
				}
				c.OpenLoop.MaxConcurrency = n
				return nil
			}, show: func(c *Config) string { return strconv.Itoa(c.OpenLoop.MaxConcurrency) }},
		{env: EnvLoadSeed, flag: "load-seed", key: "load.seed", usage: "open loop: `seed` of the arrival schedule (" + EnvLoadSeed + ")", def: "0",
			set: func(c *Config, v string) error {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil || n < 0 {
					return errors.New("want a whole number >= 0")
				}
				c.OpenLoop.Seed = n
				return nil
			}, show: func(c *Config) string { return strconv.FormatInt(c.OpenLoop.Seed, 10) }},
	}
}

// sloSettings are the targets goodput is counted against.
func sloSettings() []setting {
	return []setting{
		{env: EnvSLO, flag: "slo", key: "slo.latency", usage: "per-judgment latency `target` (e.g. 2s) goodput is counted against (" + EnvSLO + ")",
			set: duration(func(c *Config) *time.Duration { return &c.SLO.Latency }), show: showDuration(func(c *Config) time.Duration { return c.SLO.Latency })},
		{env: EnvSLOTTFT, flag: "slo-ttft", key: "slo.ttft", scopes: []Scope{ScopeTokens}, usage: "token runs: per-request time-to-first-token `target` (e.g. 500ms) goodput is counted against (" + EnvSLOTTFT + ")",
			set: duration(func(c *Config) *time.Duration { return &c.SLO.TTFT }), show: showDuration(func(c *Config) time.Duration { return c.SLO.TTFT })},
		{env: EnvSLOTPOT, flag: "slo-tpot", key: "slo.tpot", scopes: []Scope{ScopeTokens}, usage: "token runs: per-request time-per-output-token `target` (e.g. 50ms) goodput is counted against (" + EnvSLOTPOT + ")",
			set: duration(func(c *Config) *time.Duration { return &c.SLO.TPOT }), show: showDuration(func(c *Config) time.Duration { return c.SLO.TPOT })},
		{env: EnvSLOGoodput, flag: "slo-goodput", scopes: []Scope{ScopeRun, ScopeTokens}, key: "slo.goodput", usage: "`share` of judgments that must be within -slo, 0..1 or a percentage; a point below it fails (" + EnvSLOGoodput + ")",
			set: func(c *Config, v string) error {
				v = strings.TrimSpace(v)
				scale := 1.0
				if p, ok := strings.CutSuffix(v, "%"); ok {
					v, scale = strings.TrimSpace(p), 100
				}
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || !(f > 0) || f/scale > 1 {
					return errors.New("want a share above 0 and up to 1 (0.95) or a percentage (95%)")
				}
				c.SLO.Goodput = f / scale
				return nil
			}, show: func(c *Config) string {
				if c.SLO.Goodput == 0 {
					return ""
				}
				return tomlFloat(c.SLO.Goodput)
			}},
	}
}

// duration parses a positive duration into a field.
func duration(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return errors.New("want a positive duration such as 2s or 750ms")
		}
		*field(c) = d
		return nil
	}
}

// showDuration writes a duration field back; 0 (unset) is left out.
func showDuration(field func(*Config) time.Duration) func(*Config) string {
	return func(c *Config) string {
		if d := field(c); d != 0 {
			return tomlString(d.String())
		}
		return ""
	}
}

// checkLoad refuses what the settings cannot mean together: a goodput
// target without a target it counts against.
func checkLoad(c *Config) error {
	if c.SLO.Goodput > 0 && c.SLO.Latency == 0 && c.SLO.TTFT == 0 && c.SLO.TPOT == 0 {
		return fmt.Errorf("%s is set but neither %s, %s nor %s is: a goodput target needs the latency target it counts against", EnvSLOGoodput, EnvSLO, EnvSLOTTFT, EnvSLOTPOT)
	}
	return nil
}
