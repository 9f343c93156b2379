// Package config is a run's configuration, parsed once. Load fills a Config
// in one step from layers, each overriding the one before: the defaults, a
// run file (File, TOML; named by -config or VETBENCH_CONFIG), the
// environment (Env), and the command line (Flags). Every setting is parsed
// by one function whatever layer it comes from, and an error names the
// file key, variable or flag it came from. WriteSettings writes a Config
// back as a run file. Nothing below the edge (a test's TestMain, the CLI)
// reads the environment: the Config is passed down.
package config

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/vetbench/vetbench/fixtures/sets"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// Config is everything a run is told.
type Config struct {
	Target Target
	Twin   Twin
	// Sets are the image sets to measure, Fixtures how to build them.
	Sets     []string
	Fixtures sets.Options
	// Levels are the concurrency levels (judgments in flight).
	Levels []int
	// Arms are the cache arms per point: cold resets the server's caches
	// before the window, warm does not.
	Arms []receipts.Arm
	// Warmup judgments run before each measured window, outside every figure.
	Warmup         int
	RequestTimeout time.Duration
	// ControlTimeout bounds each probe, cache reset, /metrics scrape and
	// health check; 0 means DefaultControlTimeout, or RequestTimeout when
	// that is shorter (see ControlDeadline).
	ControlTimeout time.Duration
	// ContinueOnError records a failed judgment and goes on instead of
	// stopping the run at it.
	ContinueOnError bool
	// Dispatch is how a judgment's requests are sent: in order, its
	// questions at once (fan-out), or as typevet's client sends them
	// (judgments.Dispatch); receipts and the speed identity say which.
	Dispatch judgments.Dispatch
	// MaxFailed is the share of a point's judgments (0..1) that may fail
	// with the point still passing; 0, the default, accepts none.
	MaxFailed float64
	Mode      judgments.Mode
	// TopLogprobs is top_logprobs in top_logprobs mode.
	TopLogprobs int
	// Out is the run directory the user named (receipts/, bench.txt and
	// settings.toml go in it); empty means a new one under out/runs (the
	// caller resolves it, see bench/sweep/rundir).
	Out string
	// Force lets a run write into a named directory that already holds
	// results, replacing them.
	Force bool
	// File is the run file the settings were read from, if any.
	File string
	// GoldenDir holds the golden receipts; empty means receipts/golden in
	// the module.
	GoldenDir     string
	ModelRevision string
	// ServerFlags are the server's flags as the user states them (part of
	// a receipt's identity).
	ServerFlags string
	// ServerEnv is the server's environment as the user states it, e.g.
	// "VLLM_BATCH_INVARIANT=1" (part of a receipt's identity: it changes
	// answers or speed, and no request can see it).
	ServerEnv string
	// ScoringFallback lets a token_ids run fall back to top_logprobs when
	// the server ignores logprob_token_ids (older than vLLM PR #43463);
	// without it such a run stops before measuring. The receipt says which.
	ScoringFallback bool
	// GPUHourlyUSD is the stated hourly price of the serving machine; 0
	// means none (no cost in receipts).
	GPUHourlyUSD float64
	// Tokens configures the token-throughput benchmark, Matrix the speed
	// test matrix (see tokens.go).
	Tokens Tokens
	Matrix Matrix
	// Stream bounds each stream of both (see stream.go).
	Stream Stream
	// OpenLoop is the open-loop load (rates instead of levels), SLO the
	// stated latency target and goodput (see load.go).
	OpenLoop OpenLoop
	SLO      SLO
}

// Target is a live server; an empty Endpoint selects the twin.
type Target struct {
	Endpoint string // base URL without a trailing slash
	// Replicas are further base URLs serving the same model (replicas, or
	// data-parallel servers not behind one router): the judgments are
	// spread over Endpoint and these. Empty for one endpoint.
	Replicas []string
	// Model is sent in requests; empty means the first model the server lists.
	Model string
	// APIKey is sent as a bearer token, never recorded, and only ever read
	// from the environment (a flag would show in the process list).
	APIKey string
}

// Twin configures the twin when there is no live endpoint.
type Twin struct {
	// Placement is receipts.TargetContainer or receipts.TargetInProcess;
	// empty means a container when a Docker daemon answers, else in-process
	// (and the receipt says so).
	Placement receipts.TargetKind
	// Profile names the twin's timing profile; empty is the twin's default.
	Profile string
	// TimeScale > 1 runs the twin that many times faster than real time.
	TimeScale float64
	// Slowdown multiplies the twin's server-side time (e.g. 1.2): a
	// candidate made slower on purpose, to see the speed gate fire.
	Slowdown float64
	// Faults are fault specs as stub.ParseFault reads them, to see how a
	// run fails; bench/sweep/target parses them.
	Faults []string
	// Replicas is how many twins to start (default 1); several are
	// measured as several endpoints, each with its own engine and caches.
	Replicas int
}

// Endpoints are every base URL of the target, Endpoint first; nil for the
// twin.
func (t Target) Endpoints() []string {
	if t.Endpoint == "" {
		return nil
	}
	return append([]string{t.Endpoint}, t.Replicas...)
}

// Defaults.
var (
	DefaultSets           = []string{sets.Checks, sets.Faces, sets.Signatures}
	DefaultLevels         = []int{1, 4, 16, 32}
	DefaultArms           = []receipts.Arm{receipts.ArmCold}
	DefaultRequestTimeout = 120 * time.Second
	DefaultControlTimeout = 10 * time.Second
	DefaultWarmup         = 1
)

// Default is the configuration nothing has been said about.
func Default() Config {
	return Config{
		Twin:           Twin{TimeScale: 1, Slowdown: 1, Replicas: 1},
		Sets:           append([]string(nil), DefaultSets...),
		Levels:         append([]int(nil), DefaultLevels...),
		Arms:           append([]receipts.Arm(nil), DefaultArms...),
		Warmup:         DefaultWarmup,
		RequestTimeout: DefaultRequestTimeout,
		Mode:           judgments.ModeTokenIDs,
		Dispatch:       judgments.DispatchInOrder,
		TopLogprobs:    judgments.DefaultTopLogprobs,
		Tokens:         defaultTokens(),
		Matrix:         defaultMatrix(),
		Stream:         defaultStream(),
	}
}

// ControlDeadline is how long one probe, cache reset, /metrics scrape or
// health check may wait: ControlTimeout when set, else the shorter of
// DefaultControlTimeout and RequestTimeout (a user who asks requests to
// give up after 2 s is not kept waiting 10 s on a scrape).
func (c Config) ControlDeadline() time.Duration {
	if c.ControlTimeout > 0 {
		return c.ControlTimeout
	}
	if c.RequestTimeout > 0 && c.RequestTimeout < DefaultControlTimeout {
		return c.RequestTimeout
	}
	return DefaultControlTimeout
}

// Source is one layer of configuration: it sets what it states on c and
// leaves the rest. Errors name where the value came from.
type Source func(c *Config) error

// Load is Default() with each source applied in order, later ones winning:
// Load(Env(os.Getenv), Flags(fs)). Every source is applied and every bad
// value reported at once. When the sources name a run file (-config,
// VETBENCH_CONFIG) it is read first, so that the sources override it:
// defaults < file < environment < flags.
func Load(sources ...Source) (Config, error) {
	c, err := apply(sources)
	if err != nil || c.File == "" {
		return c, err
	}
	return apply(append([]Source{File(c.File)}, sources...))
}

func apply(sources []Source) (Config, error) {
	c := Default()
	var errs []error
	for _, s := range sources {
		if err := s(&c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := checkLoad(&c); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("bad configuration: %w", errors.Join(errs...))
	}
	return c, nil
}

// Env reads the VETBENCH_* variables through getenv (os.Getenv at the
// edge). Unset or blank means "not said here". A set VETBENCH_* variable
// vetbench does not know is an error naming the nearest known one (a
// typo never passes silently); VETBENCH_X_* are the user's own.
func Env(getenv func(string) string) Source {
	return func(c *Config) error {
		var errs []error
		if err := unknownVars(environ(), getenv); err != nil {
			errs = append(errs, err)
		}
		for _, s := range settings() {
			if s.env == "" {
				continue
			}
			v := getenv(s.env)
			if isBlank(v) {
				continue
			}
			if err := s.set(c, v); err != nil {
				if s.redact != nil {
					v = s.redact(v)
				}
				errs = append(errs, fmt.Errorf("%s=%q: %w", s.env, v, err))
			}
		}
		return errors.Join(errs...)
	}
}

// Flags defines the run's flags (vetbench run) on fs and returns the
// source that applies the ones given on the command line. Call fs.Parse
// before Load.
func Flags(fs *flag.FlagSet) Source { return ScopeFlags(fs, ScopeRun) }

// Scope names the command whose flags a setting has: a flag name means one
// setting per command (-levels is the judgments' levels for run, the
// token benchmark's for tokens).
type Scope string

// Scopes.
const (
	ScopeRun    Scope = "run"
	ScopeTokens Scope = "tokens"
	ScopeMatrix Scope = "matrix"
)

// ScopeFlags defines the flags of one command's settings on fs and returns
// the source that applies the ones given. Every setting is still read from
// its variable by Env, whatever the command.
func ScopeFlags(fs *flag.FlagSet, scope Scope) Source {
	values := map[string]*flagValue{}
	byFlag := map[string]setting{}
	for _, s := range settings() {
		if s.flag == "" || !s.in(scope) {
			continue
		}
		v := &flagValue{def: s.def, bool: s.boolean}
		values[s.flag] = v
		byFlag[s.flag] = s
		fs.Var(v, s.flag, s.usage)
	}
	return func(c *Config) error {
		var errs []error
		// Visit walks only the flags that were set, in name order.
		fs.Visit(func(f *flag.Flag) {
			v, ok := values[f.Name]
			if !ok {
				return
			}
			s := byFlag[f.Name]
			if err := s.set(c, v.raw); err != nil {
				shown := v.raw
				if s.redact != nil {
					shown = s.redact(shown)
				}
				errs = append(errs, fmt.Errorf("-%s %q: %w", f.Name, shown, err))
			}
		})
		return errors.Join(errs...)
	}
}

// flagValue keeps a flag's text until Load parses it with the setting's
// own parser, so a flag and its variable are read by the same code.
type flagValue struct {
	raw, def string
	set      bool
	bool     bool
}

func (v *flagValue) String() string {
	if v == nil || !v.set {
		if v != nil {
			return v.def
		}
		return ""
	}
	return v.raw
}

func (v *flagValue) Set(s string) error { v.raw, v.set = s, true; return nil }

// IsBoolFlag lets a boolean setting be given as a bare -name.
func (v *flagValue) IsBoolFlag() bool { return v.bool }

// Resolve anchors the relative paths c names (out, the golden directory,
// the run file, the LFW and CEDAR folders) at base: a test binary runs in
// its package's directory, and the suite takes them from the module root,
// where make and go test are run. Absolute paths are left as they are.
func (c *Config) Resolve(base string) {
	for _, p := range []*string{&c.Out, &c.GoldenDir, &c.File, &c.Fixtures.LFWDir, &c.Fixtures.CEDARDir} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
}
