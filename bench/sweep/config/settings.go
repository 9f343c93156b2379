package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vetbench/vetbench/fixtures/sets"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// Environment variables.
const (
	EnvEndpoint        = "VETBENCH_ENDPOINT"
	EnvModel           = "VETBENCH_MODEL"
	EnvAPIKey          = "VETBENCH_API_KEY"
	EnvStub            = "VETBENCH_STUB"
	EnvStubProfile     = "VETBENCH_STUB_PROFILE"
	EnvStubTimeScale   = "VETBENCH_STUB_TIME_SCALE"
	EnvStubSlowdown    = "VETBENCH_STUB_SLOWDOWN"
	EnvStubFaults      = "VETBENCH_STUB_FAULTS"
	EnvStubReplicas    = "VETBENCH_STUB_REPLICAS"
	EnvScoring         = "VETBENCH_SCORING"
	EnvTopLogprobs     = "VETBENCH_TOP_LOGPROBS"
	EnvSets            = "VETBENCH_SETS"
	EnvLevels          = "VETBENCH_LEVELS"
	EnvArms            = "VETBENCH_ARMS"
	EnvTimeout         = "VETBENCH_TIMEOUT"
	EnvControlTimeout  = "VETBENCH_CONTROL_TIMEOUT"
	EnvContinueOnError = "VETBENCH_CONTINUE_ON_ERROR"
	EnvMaxFailed       = "VETBENCH_MAX_FAILED"
	EnvOut             = "VETBENCH_OUT"
	EnvGoldenDir       = "VETBENCH_GOLDEN_DIR"
	EnvModelRevision   = "VETBENCH_MODEL_REVISION"
	EnvServerFlags     = "VETBENCH_SERVER_FLAGS"
	EnvServerEnv       = "VETBENCH_SERVER_ENV"
	EnvScoringFallback = "VETBENCH_SCORING_FALLBACK"
	EnvGPUHourlyUSD    = "VETBENCH_GPU_HOURLY_USD"
	EnvLFWDir          = "VETBENCH_LFW_DIR"
	EnvCEDARDir        = "VETBENCH_CEDAR_DIR"
	EnvFixtureSeed     = "VETBENCH_FIXTURE_SEED"
	EnvFixtureSize     = "VETBENCH_FIXTURE_SIZE"
	EnvTypevetIDs      = "VETBENCH_TYPEVET_IDS"
	EnvForce           = "VETBENCH_FORCE"
	EnvConfig          = "VETBENCH_CONFIG"
	EnvFanOut          = "VETBENCH_FANOUT" // VETBENCH_DISPATCH's older spelling
	EnvDispatch        = "VETBENCH_DISPATCH"
)

// setting is one configuration value: where it may come from, the one
// function that parses it and the one that writes it back.
type setting struct {
	env     string // variable; "" when the environment does not set it
	flag    string // flag name; "" when there is no flag
	key     string // run file key ("twin.profile"); "" when a file cannot set it
	usage   string
	def     string // shown in the flag's help
	boolean bool   // a flag that may be given bare
	// sep joins a run file's array into the text set parses; "" means the
	// setting takes one value, not an array.
	sep string
	set func(c *Config, v string) error
	// show is the setting's value in c as a TOML value, for settings.toml.
	show func(c *Config) string
	// redact, when set, is how a given value appears in errors: a value
	// that may hold a secret is never echoed with it.
	redact func(v string) string
	// scopes are the commands that have the flag; none means ScopeRun.
	scopes []Scope
}

func (s setting) in(scope Scope) bool {
	if len(s.scopes) == 0 {
		return scope == ScopeRun
	}
	return slices.Contains(s.scopes, scope)
}

// settings lists every setting. The run file names them by key and parses
// with the same set functions as the environment and the flags.
func settings() []setting {
	return slices.Concat(targetSettings(), twinSettings(), scoringSettings(), pointSettings(), timeoutSettings(), dispatchSettings(), budgetSettings(), pathSettings(),
		tokenSettings(), matrixSettings(), streamSettings(), loadSettings())
}

// targetSettings are the live server's: where it is, what it serves, how it was started.
func targetSettings() []setting {
	return []setting{
		{env: EnvEndpoint, flag: "endpoint", key: "target.endpoint", sep: ",", redact: redactURLs,
			usage: "comma-separated base `URLs` of live servers serving one model; several spread the judgments (" + EnvEndpoint + ")",
			set:   setEndpoints, show: func(c *Config) string {
				if len(c.Target.Replicas) == 0 {
					return tomlString(judgments.RedactURL(c.Target.Endpoint))
				}
				return tomlStrings(strings.Split(redactURLs(strings.Join(c.Target.Endpoints(), ",")), ","))
			}},
		{env: EnvModel, key: "target.model", set: text(func(c *Config) *string { return &c.Target.Model }),
			show: func(c *Config) string { return tomlString(c.Target.Model) }},
		// The API key has no flag (it would show in the process list) and
		// no run file key (files get copied and committed).
		{env: EnvAPIKey, set: func(c *Config, v string) error { c.Target.APIKey = v; return nil }},
		{env: EnvModelRevision, key: "target.model_revision", set: text(func(c *Config) *string { return &c.ModelRevision }),
			show: func(c *Config) string { return tomlString(c.ModelRevision) }},
		{env: EnvServerFlags, key: "target.server_flags", set: func(c *Config, v string) error { c.ServerFlags = v; return nil },
			show: func(c *Config) string { return tomlString(c.ServerFlags) }},
		{env: EnvServerEnv, key: "target.server_env", set: func(c *Config, v string) error { c.ServerEnv = strings.TrimSpace(v); return nil },
			show: func(c *Config) string { return tomlString(c.ServerEnv) }},
	}
}

// twinSettings place and shape the twin that stands in when no endpoint is given.
func twinSettings() []setting {
	return []setting{
		{env: EnvStub, key: "twin.placement", set: func(c *Config, v string) error {
			switch k := receipts.TargetKind(strings.TrimSpace(v)); k {
			case receipts.TargetContainer, receipts.TargetInProcess:
				c.Twin.Placement = k
				return nil
			}
			return errors.New("want container or inprocess")
		}, show: func(c *Config) string { return tomlString(string(c.Twin.Placement)) }},
		{env: EnvStubProfile, key: "twin.profile", set: text(func(c *Config) *string { return &c.Twin.Profile }),
			show: func(c *Config) string { return tomlString(c.Twin.Profile) }},
		{env: EnvStubTimeScale, key: "twin.time_scale", set: func(c *Config, v string) error {
			f, err := positive(v)
			if err != nil {
				return errors.New("want a number > 0")
			}
			c.Twin.TimeScale = f
			return nil
		}, show: func(c *Config) string { return tomlFloat(c.Twin.TimeScale) }},
		{env: EnvStubSlowdown, key: "twin.slowdown", set: func(c *Config, v string) error {
			f, err := positive(v)
			if err != nil {
				return errors.New("want a factor > 0, such as 1.2")
			}
			c.Twin.Slowdown = f
			return nil
		}, show: func(c *Config) string { return tomlFloat(c.Twin.Slowdown) }},
		{env: EnvStubFaults, key: "twin.faults", sep: ";", set: func(c *Config, v string) error {
			// ';'-separated: a fault spec itself holds ',' and '='.
			c.Twin.Faults = nil
			for _, spec := range strings.Split(v, ";") {
				if spec = strings.TrimSpace(spec); spec != "" {
					c.Twin.Faults = append(c.Twin.Faults, spec)
				}
			}
			return nil
		}, show: func(c *Config) string { return tomlStrings(c.Twin.Faults) }},
		{env: EnvStubReplicas, key: "twin.replicas", set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 || n > MaxReplicas {
				return fmt.Errorf("want a number of twins from 1 to %d", MaxReplicas)
			}
			c.Twin.Replicas = n
			return nil
		}, show: func(c *Config) string { return strconv.Itoa(c.Twin.Replicas) }},
	}
}

// scoringSettings say how an answer is read from the logprobs.
func scoringSettings() []setting {
	return []setting{
		{env: EnvScoring, key: "scoring", set: func(c *Config, v string) error {
			m, err := judgments.ParseMode(strings.TrimSpace(v))
			if err != nil {
				return err
			}
			c.Mode = m
			return nil
		}, show: func(c *Config) string { return tomlString(string(c.Mode)) }},
		{env: EnvScoringFallback, key: "scoring_fallback", set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return errors.New("want true or false (1 or 0)")
			}
			c.ScoringFallback = b
			return nil
		}, show: func(c *Config) string { return strconv.FormatBool(c.ScoringFallback) }},
		{env: EnvTopLogprobs, key: "top_logprobs", set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				return errors.New("want a positive integer")
			}
			c.TopLogprobs = n
			return nil
		}, show: func(c *Config) string { return strconv.Itoa(c.TopLogprobs) }},
	}
}

// pointSettings say what is measured: the sets, the levels, the cache arms, the warm-up.
func pointSettings() []setting {
	return []setting{
		{env: EnvSets, flag: "sets", key: "sets", sep: ",", usage: "comma-separated `sets` (" + EnvSets + ")", def: strings.Join(DefaultSets, ","),
			set: func(c *Config, v string) error {
				names := splitList(v)
				if len(names) == 0 {
					return errors.New("want at least one set")
				}
				for i, n := range names {
					if !slices.Contains(sets.Names(), n) {
						return fmt.Errorf("unknown set %q (want %s)", n, strings.Join(sets.Names(), ", "))
					}
					if slices.Contains(names[:i], n) {
						return fmt.Errorf("set %s given twice (its receipts would share a name)", n)
					}
				}
				c.Sets = names
				return nil
			}, show: func(c *Config) string { return tomlStrings(c.Sets) }},
		{env: EnvLevels, flag: "levels", key: "levels", sep: ",", usage: "comma-separated concurrency `levels` (" + EnvLevels + ")", def: "1,4,16,32",
			set: func(c *Config, v string) error {
				var levels []int
				for _, s := range splitList(v) {
					n, err := level(s)
					if err != nil {
						return err
					}
					if slices.Contains(levels, n) {
						return fmt.Errorf("level %d given twice (its receipts would share a name)", n)
					}
					levels = append(levels, n)
				}
				if len(levels) == 0 {
					return errors.New("want at least one concurrency level")
				}
				c.Levels = levels
				return nil
			}, show: func(c *Config) string { return tomlInts(c.Levels) }},
		{env: EnvArms, flag: "arms", key: "arms", sep: ",", usage: "cache `arms`: cold, warm or cold,warm (" + EnvArms + ")", def: "cold",
			set: func(c *Config, v string) error {
				var arms []receipts.Arm
				for _, s := range splitList(v) {
					a := receipts.Arm(s)
					if a != receipts.ArmCold && a != receipts.ArmWarm {
						return fmt.Errorf("arm %q: want cold and/or warm", s)
					}
					if slices.Contains(arms, a) {
						return fmt.Errorf("arm %s given twice (its receipts would share a name)", a)
					}
					arms = append(arms, a)
				}
				if len(arms) == 0 {
					return errors.New("want cold and/or warm")
				}
				c.Arms = arms
				return nil
			}, show: func(c *Config) string {
				s := make([]string, len(c.Arms))
				for i, a := range c.Arms {
					s[i] = string(a)
				}
				return tomlStrings(s)
			}},
		{flag: "warmup", key: "warmup", usage: "`n` judgments run before each measured window", def: strconv.Itoa(DefaultWarmup),
			set: func(c *Config, v string) error {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil || n < 0 {
					return errors.New("want a whole number >= 0")
				}
				c.Warmup = n
				return nil
			}, show: func(c *Config) string { return strconv.Itoa(c.Warmup) }},
	}
}

// timeoutSettings bound a request and a control, and say whether a failed pass stops the run.
func timeoutSettings() []setting {
	return []setting{
		{env: EnvTimeout, key: "timeout", set: func(c *Config, v string) error {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil || d <= 0 {
				return errors.New("want a positive duration such as 90s")
			}
			c.RequestTimeout = d
			return nil
		}, show: func(c *Config) string { return tomlString(c.RequestTimeout.String()) }},
		{env: EnvControlTimeout, key: "control_timeout", set: func(c *Config, v string) error {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil || d <= 0 {
				return errors.New("want a positive duration such as 10s")
			}
			c.ControlTimeout = d
			return nil
		}, show: func(c *Config) string {
			if c.ControlTimeout == 0 {
				return "" // derived from timeout (Config.ControlDeadline)
			}
			return tomlString(c.ControlTimeout.String())
		}},
		{env: EnvContinueOnError, key: "continue_on_error", set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return errors.New("want true or false (1 or 0)")
			}
			c.ContinueOnError = b
			return nil
		}, show: func(c *Config) string { return strconv.FormatBool(c.ContinueOnError) }},
	}
}

// dispatchSettings say how the judgments of a point are sent.
func dispatchSettings() []setting {
	return []setting{
		{env: EnvDispatch, flag: "dispatch", key: "dispatch", def: string(judgments.DispatchInOrder),
			usage: "how a judgment's requests are sent: in-order, fan-out (its questions at once) or typevet (every control tokenized anew first, as typevet's client does) (" + EnvDispatch + ")",
			set: func(c *Config, v string) error {
				d, err := judgments.ParseDispatch(v)
				if err != nil {
					return errors.New("want in-order, fan-out or typevet")
				}
				c.Dispatch = d
				return nil
			}, show: func(c *Config) string { return tomlString(string(c.Dispatch)) }},
		// fan_out is dispatch's older spelling: true is fan-out, false in
		// order; settings.toml writes dispatch.
		{env: EnvFanOut, flag: "fan-out", key: "fan_out", boolean: true,
			usage: "send the questions of a judgment at once: -dispatch fan-out (" + EnvFanOut + ")",
			set: func(c *Config, v string) error {
				b, err := strconv.ParseBool(strings.TrimSpace(v))
				if err != nil {
					return errors.New("want true or false (1 or 0)")
				}
				c.Dispatch = judgments.DispatchInOrder
				if b {
					c.Dispatch = judgments.DispatchFanOut
				}
				return nil
			}},
	}
}

// budgetSettings are what a point may lose to failures and what an hour of the GPU costs.
func budgetSettings() []setting {
	return []setting{
		{env: EnvMaxFailed, flag: "max-failed", key: "max_failed", usage: "accepted `share` of failed judgments per point, 0..1 or a percentage (" + EnvMaxFailed + ")", def: "0",
			set: func(c *Config, v string) error {
				v = strings.TrimSpace(v)
				scale := 1.0
				if p, ok := strings.CutSuffix(v, "%"); ok {
					v, scale = strings.TrimSpace(p), 100
				}
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || math.IsNaN(f) || f < 0 || f/scale > 1 {
					return errors.New("want a share from 0 to 1 (0.05) or a percentage (5%)")
				}
				c.MaxFailed = f / scale
				return nil
			}, show: func(c *Config) string { return tomlFloat(c.MaxFailed) }},
		{env: EnvGPUHourlyUSD, key: "gpu_hourly_usd", set: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return errors.New("not a number (want US dollars per hour, e.g. 2.49)")
			}
			if math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
				return errors.New("want a positive, finite price in US dollars per hour")
			}
			c.GPUHourlyUSD = f
			return nil
		}, show: func(c *Config) string {
			if c.GPUHourlyUSD == 0 {
				return "" // none: left out, as no price is not a price of 0
			}
			return tomlFloat(c.GPUHourlyUSD)
		}},
	}
}

// pathSettings say where results land and where the fixtures come from.
func pathSettings() []setting {
	return []setting{
		// Out has a key, but settings.toml leaves it out: the file lies in
		// that directory, and a copy reused for the next run must not name it.
		{env: EnvOut, flag: "out", key: "out", scopes: []Scope{ScopeRun, ScopeTokens, ScopeMatrix}, usage: "run `directory`: receipts/, bench.txt and settings.toml go in it (" + EnvOut + "; default a new out/runs/<id>)",
			set: text(func(c *Config) *string { return &c.Out })},
		// Force is a decision made each time, never kept in a file.
		{env: EnvForce, flag: "force", boolean: true, scopes: []Scope{ScopeRun, ScopeTokens, ScopeMatrix}, usage: "write into a named run directory that already holds results, replacing them (matrix: -json and -csv files too; " + EnvForce + ")",
			set: func(c *Config, v string) error {
				b, err := strconv.ParseBool(strings.TrimSpace(v))
				if err != nil {
					return errors.New("want true or false (1 or 0)")
				}
				c.Force = b
				return nil
			}},
		{env: EnvConfig, flag: "config", scopes: []Scope{ScopeRun, ScopeTokens, ScopeMatrix}, usage: "run `file` (TOML) with settings; the environment and flags override it (" + EnvConfig + ")",
			set: text(func(c *Config) *string { return &c.File })},
		{env: EnvGoldenDir, key: "golden_dir", set: text(func(c *Config) *string { return &c.GoldenDir }),
			show: func(c *Config) string { return tomlString(c.GoldenDir) }},
		{env: EnvLFWDir, key: "fixtures.lfw_dir", set: text(func(c *Config) *string { return &c.Fixtures.LFWDir }),
			show: func(c *Config) string { return tomlString(c.Fixtures.LFWDir) }},
		{env: EnvCEDARDir, key: "fixtures.cedar_dir", set: text(func(c *Config) *string { return &c.Fixtures.CEDARDir }),
			show: func(c *Config) string { return tomlString(c.Fixtures.CEDARDir) }},
		{env: EnvFixtureSeed, key: "fixtures.seed", set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 0 {
				return errors.New("want a whole number >= 0")
			}
			c.Fixtures.Seed = n
			return nil
		}, show: func(c *Config) string { return strconv.FormatInt(c.Fixtures.Seed, 10) }},
		{env: EnvFixtureSize, key: "fixtures.size", set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				return errors.New("want a whole number >= 1")
			}
			c.Fixtures.Size = n
			return nil
		}, show: func(c *Config) string {
			if c.Fixtures.Size == 0 {
				return "" // the full set
			}
			return strconv.Itoa(c.Fixtures.Size)
		}},
		{env: EnvTypevetIDs, key: "fixtures.typevet_ids", set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return errors.New("want true or false")
			}
			c.Fixtures.TypevetIDs = b
			return nil
		}, show: func(c *Config) string { return strconv.FormatBool(c.Fixtures.TypevetIDs) }},
	}
}

// text sets a string field, trimmed.
func text(field func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error { *field(c) = strings.TrimSpace(v); return nil }
}

func positive(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(f > 0) || math.IsInf(f, 0) {
		return 0, errors.New("not a positive number")
	}
	return f, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }
