package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
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
	EnvScoring         = "VETBENCH_SCORING"
	EnvTopLogprobs     = "VETBENCH_TOP_LOGPROBS"
	EnvSets            = "VETBENCH_SETS"
	EnvLevels          = "VETBENCH_LEVELS"
	EnvArms            = "VETBENCH_ARMS"
	EnvTimeout         = "VETBENCH_TIMEOUT"
	EnvContinueOnError = "VETBENCH_CONTINUE_ON_ERROR"
	EnvOut             = "VETBENCH_OUT"
	EnvGoldenDir       = "VETBENCH_GOLDEN_DIR"
	EnvModelRevision   = "VETBENCH_MODEL_REVISION"
	EnvServerFlags     = "VETBENCH_SERVER_FLAGS"
	EnvGPUHourlyUSD    = "VETBENCH_GPU_HOURLY_USD"
	EnvLFWDir          = "VETBENCH_LFW_DIR"
	EnvCEDARDir        = "VETBENCH_CEDAR_DIR"
	EnvFixtureSeed     = "VETBENCH_FIXTURE_SEED"
	EnvFixtureSize     = "VETBENCH_FIXTURE_SIZE"
	EnvTypevetIDs      = "VETBENCH_TYPEVET_IDS"
)

// setting is one configuration value: where it may come from and the one
// function that parses it.
type setting struct {
	env     string // variable; "" when the environment does not set it
	flag    string // flag name; "" when there is no flag
	usage   string
	def     string // shown in the flag's help
	boolean bool   // a flag that may be given bare
	// scopes are the commands that have the flag; none means ScopeRun.
	scopes []Scope
	set    func(c *Config, v string) error
}

func (s setting) in(scope Scope) bool {
	if len(s.scopes) == 0 {
		return scope == ScopeRun
	}
	return slices.Contains(s.scopes, scope)
}

// settings lists every setting. A run file (issue 13) will name them by
// their flag or a key of their own and parse with the same set functions.
func settings() []setting {
	return append([]setting{
		{env: EnvEndpoint, set: func(c *Config, v string) error {
			v = strings.TrimRight(strings.TrimSpace(v), "/")
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return errors.New("want a base URL such as http://gpu-box:8000")
			}
			c.Target.Endpoint = v
			return nil
		}},
		{env: EnvModel, set: text(func(c *Config) *string { return &c.Target.Model })},
		{env: EnvAPIKey, set: func(c *Config, v string) error { c.Target.APIKey = v; return nil }},
		{env: EnvStub, set: func(c *Config, v string) error {
			switch k := receipts.TargetKind(strings.TrimSpace(v)); k {
			case receipts.TargetContainer, receipts.TargetInProcess:
				c.Twin.Placement = k
				return nil
			}
			return errors.New("want container or inprocess")
		}},
		{env: EnvStubProfile, set: text(func(c *Config) *string { return &c.Twin.Profile })},
		{env: EnvStubTimeScale, set: func(c *Config, v string) error {
			f, err := positive(v)
			if err != nil {
				return errors.New("want a number > 0")
			}
			c.Twin.TimeScale = f
			return nil
		}},
		{env: EnvStubSlowdown, set: func(c *Config, v string) error {
			f, err := positive(v)
			if err != nil {
				return errors.New("want a factor > 0, such as 1.2")
			}
			c.Twin.Slowdown = f
			return nil
		}},
		{env: EnvStubFaults, set: func(c *Config, v string) error {
			// ';'-separated: a fault spec itself holds ',' and '='.
			c.Twin.Faults = nil
			for _, spec := range strings.Split(v, ";") {
				if spec = strings.TrimSpace(spec); spec != "" {
					c.Twin.Faults = append(c.Twin.Faults, spec)
				}
			}
			return nil
		}},
		{env: EnvScoring, set: func(c *Config, v string) error {
			m, err := judgments.ParseMode(strings.TrimSpace(v))
			if err != nil {
				return err
			}
			c.Mode = m
			return nil
		}},
		{env: EnvTopLogprobs, set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				return errors.New("want a positive integer")
			}
			c.TopLogprobs = n
			return nil
		}},
		{env: EnvSets, flag: "sets", usage: "comma-separated `sets` (" + EnvSets + ")", def: strings.Join(DefaultSets, ","),
			set: func(c *Config, v string) error {
				names := splitList(v)
				if len(names) == 0 {
					return errors.New("want at least one set")
				}
				for _, n := range names {
					if !slices.Contains(sets.Names(), n) {
						return fmt.Errorf("unknown set %q (want %s)", n, strings.Join(sets.Names(), ", "))
					}
				}
				c.Sets = names
				return nil
			}},
		{env: EnvLevels, flag: "levels", usage: "comma-separated concurrency `levels` (" + EnvLevels + ")", def: "1,4,16,32",
			set: func(c *Config, v string) error {
				var levels []int
				for _, s := range splitList(v) {
					n, err := strconv.Atoi(s)
					if err != nil || n < 1 {
						return fmt.Errorf("%q is not a concurrency level >= 1", s)
					}
					levels = append(levels, n)
				}
				if len(levels) == 0 {
					return errors.New("want at least one concurrency level")
				}
				c.Levels = levels
				return nil
			}},
		{env: EnvArms, flag: "arms", usage: "cache `arms`: cold, warm or cold,warm (" + EnvArms + ")", def: "cold",
			set: func(c *Config, v string) error {
				var arms []receipts.Arm
				for _, s := range splitList(v) {
					a := receipts.Arm(s)
					if a != receipts.ArmCold && a != receipts.ArmWarm {
						return fmt.Errorf("arm %q: want cold and/or warm", s)
					}
					arms = append(arms, a)
				}
				if len(arms) == 0 {
					return errors.New("want cold and/or warm")
				}
				c.Arms = arms
				return nil
			}},
		{flag: "warmup", usage: "`n` judgments run before each measured window", def: strconv.Itoa(DefaultWarmup),
			set: func(c *Config, v string) error {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil || n < 0 {
					return errors.New("want a whole number >= 0")
				}
				c.Warmup = n
				return nil
			}},
		{env: EnvTimeout, set: func(c *Config, v string) error {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil || d <= 0 {
				return errors.New("want a positive duration such as 90s")
			}
			c.RequestTimeout = d
			return nil
		}},
		{env: EnvContinueOnError, set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return errors.New("want true or false (1 or 0)")
			}
			c.ContinueOnError = b
			return nil
		}},
		{env: EnvOut, flag: "out", usage: "receipt `directory` (" + EnvOut + ", default out/receipts)",
			scopes: []Scope{ScopeRun, ScopeTokens}, set: text(func(c *Config) *string { return &c.Out })},
		{env: EnvGoldenDir, set: text(func(c *Config) *string { return &c.GoldenDir })},
		{env: EnvModelRevision, set: text(func(c *Config) *string { return &c.ModelRevision })},
		{env: EnvServerFlags, set: func(c *Config, v string) error { c.ServerFlags = v; return nil }},
		{env: EnvGPUHourlyUSD, set: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return errors.New("not a number (want US dollars per hour, e.g. 2.49)")
			}
			if math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
				return errors.New("want a positive, finite price in US dollars per hour")
			}
			c.GPUHourlyUSD = f
			return nil
		}},
		{env: EnvLFWDir, set: text(func(c *Config) *string { return &c.Fixtures.LFWDir })},
		{env: EnvCEDARDir, set: text(func(c *Config) *string { return &c.Fixtures.CEDARDir })},
		{env: EnvFixtureSeed, set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 0 {
				return errors.New("want a whole number >= 0")
			}
			c.Fixtures.Seed = n
			return nil
		}},
		{env: EnvFixtureSize, set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				return errors.New("want a whole number >= 1")
			}
			c.Fixtures.Size = n
			return nil
		}},
		{env: EnvTypevetIDs, set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return errors.New("want true or false")
			}
			c.Fixtures.TypevetIDs = b
			return nil
		}},
	}, append(tokenSettings(), matrixSettings()...)...)
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
