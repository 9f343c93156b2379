package stub

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The twin's command line: one table says, for each Config field that a
// command line carries, its vllmstub flag, how to parse it and how to
// write it, so BindFlags (vllmstub's parsing) and Args (what
// stub/container runs) cannot drift apart. Dev mode and API keys travel
// in the environment, as vllm serve reads them (VLLM_SERVER_DEV_MODE,
// VLLM_API_KEY): a key stays out of the command line and `docker inspect`.

// Environment variables the twin reads, as vllm serve does.
const (
	EnvDevMode = "VLLM_SERVER_DEV_MODE"
	EnvAPIKey  = "VLLM_API_KEY"
)

// twinFlag is one flag of the table.
type twinFlag struct {
	name, usage string
	isBool      bool
	set         func(c *Config, v string) error
	// get is the flag's value in c, and whether it differs from the
	// default (only those are written).
	get func(c Config) (string, bool)
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func floatFlag(name, usage string, field func(c *Config) *float64, def float64) twinFlag {
	return twinFlag{name: name, usage: usage,
		set: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			*field(c) = f
			return err
		},
		get: func(c Config) (string, bool) { v := *field(&c); return fmtFloat(v), v != def }}
}

// positiveFlag is a factor whose default is 1; on the command line 0 is
// refused, not read as the default.
func positiveFlag(name, usage string, field func(c *Config) *float64) twinFlag {
	f := floatFlag(name, usage+" (default 1)", field, 1)
	set := f.set
	f.set = func(c *Config, v string) error {
		if err := set(c, v); err != nil {
			return err
		}
		if x := *field(c); !(x > 0) || math.IsInf(x, 0) {
			return fmt.Errorf("%s %v: want a positive number", strings.ReplaceAll(name, "-", " "), x)
		}
		return nil
	}
	return f
}

func boolFlag(name, usage string, field func(c *Config) *bool) twinFlag {
	return twinFlag{name: name, usage: usage, isBool: true,
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			*field(c) = b
			return err
		},
		get: func(c Config) (string, bool) { return "true", *field(&c) }}
}

// twinFlags is the table, in vllmstub's -h order.
var twinFlags = []twinFlag{
	{name: "profile-json", usage: "a whole stub.Profile as JSON (replaces --profile)",
		set: func(c *Config, v string) error { return json.Unmarshal([]byte(v), &c.Profile) },
		get: func(c Config) (string, bool) { b, _ := json.Marshal(c.Profile); return string(b), true }},
	{name: "served-model-name", usage: "model name the API serves (default: the profile's, or MODEL)",
		set: func(c *Config, v string) error { c.Model = v; return nil },
		get: func(c Config) (string, bool) { return c.Model, c.Model != c.Profile.Model }},
	positiveFlag("time-scale", "run this many times faster than real time (metrics stay in model seconds)",
		func(c *Config) *float64 { return &c.TimeScale }),
	positiveFlag("slowdown", "multiply every server-side duration: engine steps and frontend, not the network (1.2 = 20% slower server)",
		func(c *Config) *float64 { return &c.Slowdown }),
	{name: "batch-noise", usage: fmt.Sprintf("bound on each candidate logit's batch noise; 0 = off (default %g)", DefaultBatchNoise),
		set: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(v, 64)
			c.BatchNoise, c.NoBatchNoise = f, f == 0 && err == nil
			return err
		},
		get: func(c Config) (string, bool) {
			if c.NoBatchNoise {
				return "0", true
			}
			return fmtFloat(c.BatchNoise), c.BatchNoise != DefaultBatchNoise
		}},
	{name: "answer-spread", usage: fmt.Sprintf("answer model's CONFIDENT,NEARTIE fractions (default %g,%g)", DefaultSpread.Confident, DefaultSpread.NearTie),
		set: func(c *Config, v string) error {
			a, b, ok := strings.Cut(v, ",")
			conf, err1 := strconv.ParseFloat(a, 64)
			tie, err2 := strconv.ParseFloat(b, 64)
			if !ok || err1 != nil || err2 != nil {
				return fmt.Errorf("%q: want CONFIDENT,NEARTIE fractions", v)
			}
			c.Spread = Spread{Confident: conf, NearTie: tie}
			return nil
		},
		get: func(c Config) (string, bool) {
			return fmtFloat(c.Spread.Confident) + "," + fmtFloat(c.Spread.NearTie), c.Spread != DefaultSpread
		}},
	{name: "transport-allowance", usage: "wall time per request taken out of the modelled round trip",
		set: func(c *Config, v string) (err error) { c.TransportAllowance, err = time.ParseDuration(v); return err },
		get: func(c Config) (string, bool) { return c.TransportAllowance.String(), c.TransportAllowance != 0 }},
	{name: "fault", usage: "inject a fault, KIND[:key=value,...] (repeatable; see stub.ParseFault)",
		set: func(c *Config, v string) error {
			f, err := ParseFault(v)
			c.Faults = append(c.Faults, f)
			return err
		}},
	{name: "api-key", usage: "require this bearer token on /v1/*, /tokenize and the resets (vllm serve --api-key; also " + EnvAPIKey + ", comma-separated keys)",
		set: func(c *Config, v string) error { c.APIKeys = splitKeys(v); return nil }},
	boolFlag("enable-prompt-tokens-details", "fill usage.prompt_tokens_details (cached_tokens)",
		func(c *Config) *bool { return &c.PromptTokensDetails }),
	{name: "data-parallel-size", usage: "engines behind the API server, each with its own caches and engine label",
		set: func(c *Config, v string) (err error) { c.DataParallel, err = strconv.Atoi(v); return err },
		get: func(c Config) (string, bool) { return strconv.Itoa(c.DataParallel), c.DataParallel > 1 }},
	floatFlag("off-format-share", "share of answers whose greedy token is no candidate (twin's own)",
		func(c *Config) *float64 { return &c.OffFormat }, 0),
	boolFlag("legacy-server", "serve as a vLLM before logprob_token_ids (PR #43463): ignore the field (twin's own)",
		func(c *Config) *bool { return &c.Legacy }),
}

// BindFlags registers the twin's flags on fs, each setting its field of
// c when parsed. vllmstub adds vllm serve's profile flags (--profile,
// --max-model-len, ...) itself; after parsing, ReadEnv, then New
// validates.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	for _, f := range twinFlags {
		set := func(v string) error { return f.set(c, v) }
		if f.isBool {
			fs.BoolFunc(f.name, f.usage, set)
		} else {
			fs.Func(f.name, f.usage, set)
		}
	}
}

// ReadEnv reads dev mode and, when no --api-key was given, the API keys
// from the environment, as vllm serve does.
func (c *Config) ReadEnv(getenv func(string) string) {
	c.DevMode = truthy(getenv(EnvDevMode))
	if len(c.APIKeys) == 0 {
		c.APIKeys = splitKeys(getenv(EnvAPIKey))
	}
}

// Args is the command line and environment that make vllmstub serve what
// New(c) would: the whole profile as --profile-json, every other flag
// whose value is not the default, and the environment for dev mode and
// API keys. Replay and Adjust hold values no command line can carry and
// are refused (errors.ErrUnsupported): a replay crosses as a file
// (vllmstub --replay), an adjust hook not at all.
func (c Config) Args() (args []string, env map[string]string, err error) {
	c, err = c.Resolve()
	if err != nil {
		return nil, nil, fmt.Errorf("stub: %w", err)
	}
	if c.Replay != nil {
		return nil, nil, fmt.Errorf("stub: Config.Replay cannot reach another process; pass the receipt file to vllmstub --replay: %w", errors.ErrUnsupported)
	}
	if c.Adjust != nil {
		return nil, nil, fmt.Errorf("stub: Config.Adjust cannot reach another process: %w", errors.ErrUnsupported)
	}
	for _, f := range twinFlags {
		switch {
		case f.name == "fault":
			for _, ft := range c.Faults {
				args = append(args, "--fault", ft.String())
			}
		case f.get == nil:
		case f.isBool:
			if _, on := f.get(c); on {
				args = append(args, "--"+f.name)
			}
		default:
			if v, differs := f.get(c); differs {
				args = append(args, "--"+f.name, v)
			}
		}
	}
	env = map[string]string{}
	if c.DevMode {
		env[EnvDevMode] = "1"
	}
	if len(c.APIKeys) > 0 {
		env[EnvAPIKey] = strings.Join(c.APIKeys, ",")
	}
	return args, env, nil
}

func splitKeys(s string) []string {
	var keys []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

func truthy(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
