package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vetbench/vetbench/receipts/matrix"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// Tokens configures the token-throughput benchmark (BenchmarkTokens,
// vetbench tokens): Concurrency requests sent at once, each for a fixed
// OutputTokens with ignore_eos at temperature 0, Repeats times per point.
type Tokens struct {
	// Workloads are tokens.WorkloadText and/or tokens.WorkloadOneImage.
	Workloads []string
	// API is the endpoint the points stream from: tokens.APIChat (the
	// default) or tokens.APICompletions (vllm bench serve's
	// default backend; the text workload only).
	API string
	// Levels are the concurrency levels (requests sent at once).
	Levels       []int
	OutputTokens int
	Repeats      int
	// Warmup batches of Concurrency requests run before each point's
	// repeats, outside every figure.
	Warmup int
	// MaxFailed is the share of a point's requests that may fail or
	// come back short without failing the point (0: none may).
	MaxFailed float64
	// NumPrompts > 0 sends that many requests per repeat through Levels
	// refilled slots, as `vllm bench serve --max-concurrency C
	// --num-prompts N`; 0 keeps the closed batch (the published
	// receipts' mode). RequestRate (0 = inf) and Burstiness (0 = 1) are
	// vLLM's --request-rate and --burstiness for it.
	NumPrompts  int
	RequestRate float64
	Burstiness  float64
	// Goodput is vLLM's --goodput (ttft, tpot, e2el → ms);
	// MetricPercentiles its --metric-percentiles (empty: 99).
	Goodput           map[string]float64
	MetricPercentiles []float64
}

// Matrix configures the speed test matrix (BenchmarkMatrix, vetbench
// matrix): sustained decode at every context length × concurrency.
type Matrix struct {
	// Contexts are target prompt lengths in tokens; a context that does
	// not fit max_model_len − OutputTokens − 64 is trimmed to it.
	Contexts     []int
	Levels       []int
	Duration     time.Duration
	OutputTokens int
	// Targeting is how prompts hit a context length: "estimate" (one
	// calibration against usage.prompt_tokens) or "exact" (/tokenize).
	Targeting string
	// ReadyTimeout bounds the wait for a cell to be ready; 0 means by
	// context (60 s up to 32K, 120 s up to 64K, 180 s above).
	ReadyTimeout time.Duration
	// LoopDetection checks every stream for an exact periodic tail and
	// discards a cell that loops.
	LoopDetection bool
	// ScrapeInterval, Hold and Pause are the peer's waits (1 s between
	// /metrics readings, 3 s of readiness before the window, 2 s between
	// cells) when 0; below 0 means none. A twin at a time scale can
	// shorten them.
	ScrapeInterval, Hold, Pause time.Duration
	// Budget, when > 0, is the time the whole matrix may take (model time
	// on a time-scaled twin): each cell's warm-up gets what its share
	// leaves after the window and pause; cells past it are Skipped.
	Budget time.Duration
}

// Token and matrix variables.
const (
	EnvTokensWorkloads     = "VETBENCH_TOKENS_WORKLOADS"
	EnvTokensAPI           = "VETBENCH_TOKENS_API"
	EnvTokensLevels        = "VETBENCH_TOKENS_LEVELS"
	EnvTokensOutput        = "VETBENCH_TOKENS_OUTPUT"
	EnvTokensRepeats       = "VETBENCH_TOKENS_REPEATS"
	EnvTokensWarmup        = "VETBENCH_TOKENS_WARMUP"
	EnvTokensMaxFailed     = "VETBENCH_TOKENS_MAX_FAILED"
	EnvTokensNumPrompts    = "VETBENCH_TOKENS_NUM_PROMPTS"
	EnvTokensRequestRate   = "VETBENCH_TOKENS_REQUEST_RATE"
	EnvTokensBurstiness    = "VETBENCH_TOKENS_BURSTINESS"
	EnvTokensGoodput       = "VETBENCH_TOKENS_GOODPUT"
	EnvTokensPercentiles   = "VETBENCH_TOKENS_METRIC_PERCENTILES"
	EnvMatrixContexts      = "VETBENCH_MATRIX_CONTEXTS"
	EnvMatrixLevels        = "VETBENCH_MATRIX_LEVELS"
	EnvMatrixDuration      = "VETBENCH_MATRIX_DURATION"
	EnvMatrixOutput        = "VETBENCH_MATRIX_OUTPUT"
	EnvMatrixTargeting     = "VETBENCH_MATRIX_TARGETING"
	EnvMatrixReadyTimeout  = "VETBENCH_MATRIX_READY_TIMEOUT"
	EnvMatrixLoopDetection = "VETBENCH_MATRIX_LOOP_DETECTION"
	EnvMatrixScrape        = "VETBENCH_MATRIX_SCRAPE_INTERVAL"
	EnvMatrixHold          = "VETBENCH_MATRIX_HOLD"
	EnvMatrixPause         = "VETBENCH_MATRIX_PAUSE"
	EnvMatrixBudget        = "VETBENCH_MATRIX_BUDGET"
)

// Targeting modes of Matrix.Targeting.
const (
	TargetingEstimate = "estimate"
	TargetingExact    = "exact"
)

// Token and matrix defaults: the published receipt's method (c = 1…32,
// 128 tokens, 3 repeats) and the peer tool's matrix (8K…128K × 1…128,
// 30 s, 4096 tokens).
var (
	DefaultTokenWorkloads = []string{tokens.WorkloadText, tokens.WorkloadOneImage}
	DefaultTokenLevels    = []int{1, 4, 8, 16, 32}
	DefaultTokenOutput    = 128
	DefaultTokenRepeats   = 3
	DefaultTokenWarmup    = 1
	DefaultMatrixContexts = []int{8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10}
	DefaultMatrixLevels   = []int{1, 2, 4, 8, 16, 32, 64, 128}
	DefaultMatrixDuration = 30 * time.Second
	DefaultMatrixOutput   = 4096
)

func defaultTokens() Tokens {
	return Tokens{
		Workloads:    slices.Clone(DefaultTokenWorkloads),
		API:          tokens.APIChat,
		Levels:       slices.Clone(DefaultTokenLevels),
		OutputTokens: DefaultTokenOutput,
		Repeats:      DefaultTokenRepeats,
		Warmup:       DefaultTokenWarmup,
	}
}

func defaultMatrix() Matrix {
	return Matrix{
		Contexts:      slices.Clone(DefaultMatrixContexts),
		Levels:        slices.Clone(DefaultMatrixLevels),
		Duration:      DefaultMatrixDuration,
		OutputTokens:  DefaultMatrixOutput,
		Targeting:     TargetingEstimate,
		LoopDetection: true,
	}
}

func tokenSettings() []setting {
	return append(tokenPointSettings(), tokenServeSettings()...)
}

// tokenServeSettings are `vllm bench serve`'s load and figure options.
func tokenServeSettings() []setting {
	tok := []Scope{ScopeTokens}
	return []setting{
		{env: EnvTokensNumPrompts, flag: "num-prompts", key: "tokens.num_prompts", scopes: tok, def: "0",
			show:  func(c *Config) string { return unlessZero(c.Tokens.NumPrompts != 0, strconv.Itoa(c.Tokens.NumPrompts)) },
			usage: "`n` requests per repeat through -levels refilled slots, as vllm bench serve --max-concurrency C --num-prompts N; 0 sends closed batches (" + EnvTokensNumPrompts + ")",
			set:   func(c *Config, v string) (err error) { c.Tokens.NumPrompts, err = atLeast(v, 0); return err }},
		{env: EnvTokensRequestRate, flag: "request-rate", key: "tokens.request_rate", scopes: tok, def: "inf",
			show:  func(c *Config) string { return unlessZero(c.Tokens.RequestRate != 0, tomlFloat(c.Tokens.RequestRate)) },
			usage: "refilled slots: requests per `second` on vllm bench serve's gamma schedule, inf = all queued at once (" + EnvTokensRequestRate + ")",
			set: func(c *Config, v string) error {
				v = strings.TrimSpace(v)
				if v == "inf" || v == "0" {
					c.Tokens.RequestRate = 0
					return nil
				}
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || !(f > 0) || math.IsInf(f, 0) {
					return errors.New("want a positive number of requests per second, or inf")
				}
				c.Tokens.RequestRate = f
				return nil
			}},
		{env: EnvTokensBurstiness, flag: "burstiness", key: "tokens.burstiness", scopes: tok, def: "1",
			show:  func(c *Config) string { return unlessZero(c.Tokens.Burstiness != 0, tomlFloat(c.Tokens.Burstiness)) },
			usage: "refilled slots at a rate: the gamma `shape` of inter-arrival times, 1 = Poisson (" + EnvTokensBurstiness + ")",
			set: func(c *Config, v string) error {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || !(f >= 0) || math.IsInf(f, 0) {
					return errors.New("want a finite number > 0 (1 = Poisson; 0 means 1)")
				}
				c.Tokens.Burstiness = f
				return nil
			}},
		{env: EnvTokensGoodput, flag: "goodput", key: "tokens.goodput", scopes: tok,
			show: func(c *Config) string {
				return unlessZero(len(c.Tokens.Goodput) > 0, tomlString(FormatGoodput(c.Tokens.Goodput)))
			},
			usage: "vllm bench serve --goodput `SLOs` for request_goodput: \"ttft:MS tpot:MS e2el:MS\" (" + EnvTokensGoodput + ")",
			set: func(c *Config, v string) (err error) {
				c.Tokens.Goodput, err = ParseGoodput(v)
				return err
			}},
		{env: EnvTokensPercentiles, flag: "metric-percentiles", key: "tokens.metric_percentiles", sep: ",", scopes: tok, def: "99",
			show: func(c *Config) string {
				return unlessZero(len(c.Tokens.MetricPercentiles) > 0, tomlFloats(c.Tokens.MetricPercentiles))
			},
			usage: "comma-separated `percentiles` of TTFT, TPOT, ITL and E2EL, as vllm bench serve --metric-percentiles (" + EnvTokensPercentiles + ")",
			set: func(c *Config, v string) error {
				var out []float64
				for _, s := range splitList(v) {
					f, err := strconv.ParseFloat(s, 64)
					if err != nil || !(f >= 0 && f <= 100) {
						return fmt.Errorf("%q is not a percentile from 0 to 100", s)
					}
					out = append(out, f)
				}
				c.Tokens.MetricPercentiles = out
				return nil
			}},
	}
}

// ParseGoodput reads vllm bench serve's --goodput: KEY:VALUE pairs
// (space or comma separated), keys ttft, tpot, e2el, values milliseconds
// >= 0, as its parse_goodput and check_goodput_args accept them.
func ParseGoodput(v string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, pair := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' }) {
		k, val, ok := strings.Cut(pair, ":")
		f, err := strconv.ParseFloat(val, 64)
		if !ok || err != nil || strings.Contains(val, ":") {
			return nil, fmt.Errorf("%q: specify service level objectives as KEY:VALUE pairs, the value a number in milliseconds", pair)
		}
		switch {
		case k != "ttft" && k != "tpot" && k != "e2el":
			return nil, fmt.Errorf("%q: the objective name should be one of ttft, tpot, e2el", k)
		case f < 0 || math.IsNaN(f) || math.IsInf(f, 0):
			return nil, fmt.Errorf("%s:%v: the objective value should be a finite number >= 0", k, val)
		}
		out[k] = f
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// FormatGoodput writes SLOs as ParseGoodput reads them, keys sorted.
func FormatGoodput(m map[string]float64) string {
	var parts []string
	for _, k := range []string{"ttft", "tpot", "e2el"} {
		if v, ok := m[k]; ok {
			parts = append(parts, k+":"+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	return strings.Join(parts, " ")
}

// unlessZero is v when set, else "" (settings.toml leaves the key out: a
// closed batch says nothing of loads).
func unlessZero(set bool, v string) string {
	if !set {
		return ""
	}
	return v
}

func tomlFloats(fs []float64) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = tomlFloat(f)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// apiName is how the configuration spells an endpoint: chat or
// completions.
func apiName(api string) string {
	if api == tokens.APICompletions {
		return "completions"
	}
	return "chat"
}

func tokenPointSettings() []setting {
	tok := []Scope{ScopeTokens}
	return []setting{
		{env: EnvTokensWorkloads, flag: "workload", key: "tokens.workloads", sep: ",", scopes: tok,
			show: func(c *Config) string { return tomlStrings(c.Tokens.Workloads) }, def: strings.Join(DefaultTokenWorkloads, ","),
			usage: "comma-separated `workloads`: text, one_image (" + EnvTokensWorkloads + ")",
			set: func(c *Config, v string) error {
				var ws []string
				for _, w := range splitList(v) {
					if w != tokens.WorkloadText && w != tokens.WorkloadOneImage {
						return fmt.Errorf("workload %q: want %s and/or %s", w, tokens.WorkloadText, tokens.WorkloadOneImage)
					}
					if slices.Contains(ws, w) {
						return fmt.Errorf("workload %q given twice", w)
					}
					ws = append(ws, w)
				}
				if len(ws) == 0 {
					return errors.New("want at least one workload")
				}
				c.Tokens.Workloads = ws
				return nil
			}},
		{env: EnvTokensAPI, flag: "api", key: "tokens.api", scopes: tok,
			show: func(c *Config) string { return strconv.Quote(apiName(c.Tokens.API)) }, def: "chat",
			usage: "the `endpoint` the points stream from: chat (/v1/chat/completions) or completions (/v1/completions, as vllm bench serve's default backend; text only) (" + EnvTokensAPI + ")",
			set: func(c *Config, v string) error {
				switch strings.TrimSpace(v) {
				case "chat":
					c.Tokens.API = tokens.APIChat
				case "completions":
					c.Tokens.API = tokens.APICompletions
				default:
					return fmt.Errorf("api %q: want chat or completions", v)
				}
				return nil
			}},
		{env: EnvTokensLevels, flag: "levels", key: "tokens.levels", sep: ",", scopes: tok,
			show: func(c *Config) string { return tomlInts(c.Tokens.Levels) }, def: joinInts(DefaultTokenLevels),
			usage: "comma-separated concurrency `levels` (" + EnvTokensLevels + ")",
			set:   func(c *Config, v string) (err error) { c.Tokens.Levels, err = uniqueLevels(v); return err }},
		{env: EnvTokensOutput, flag: "output", key: "tokens.output", scopes: tok,
			show: func(c *Config) string { return strconv.Itoa(c.Tokens.OutputTokens) }, def: strconv.Itoa(DefaultTokenOutput),
			usage: "output `tokens` per request, ignore_eos (" + EnvTokensOutput + ")",
			set:   func(c *Config, v string) (err error) { c.Tokens.OutputTokens, err = atLeast(v, 1); return err }},
		{env: EnvTokensRepeats, flag: "repeats", key: "tokens.repeats", scopes: tok,
			show: func(c *Config) string { return strconv.Itoa(c.Tokens.Repeats) }, def: strconv.Itoa(DefaultTokenRepeats),
			usage: "`n` repeats per point (" + EnvTokensRepeats + ")",
			set:   func(c *Config, v string) (err error) { c.Tokens.Repeats, err = atLeast(v, 1); return err }},
		{env: EnvTokensWarmup, flag: "warmup", key: "tokens.warmup", scopes: tok,
			show: func(c *Config) string { return strconv.Itoa(c.Tokens.Warmup) }, def: strconv.Itoa(DefaultTokenWarmup),
			usage: "`n` warm-up batches before each point, outside every figure (" + EnvTokensWarmup + ")",
			set:   func(c *Config, v string) (err error) { c.Tokens.Warmup, err = atLeast(v, 0); return err }},
		{env: EnvTokensMaxFailed, flag: "max-failed", key: "tokens.max_failed", scopes: tok, def: "0",
			show:  func(c *Config) string { return tomlFloat(c.Tokens.MaxFailed) },
			usage: "accepted `share` of a point's requests that fail or come back short, 0..1 or a percentage (" + EnvTokensMaxFailed + ")",
			set: func(c *Config, v string) error {
				v = strings.TrimSpace(v)
				scale := 1.0
				if p, ok := strings.CutSuffix(v, "%"); ok {
					v, scale = strings.TrimSpace(p), 100
				}
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || math.IsNaN(f) || f < 0 || f/scale >= 1 {
					return errors.New("want a share from 0 to below 1 (0.05) or a percentage (5%)")
				}
				c.Tokens.MaxFailed = f / scale
				return nil
			}},
	}
}

// matrixSettings are vetbench matrix's.
func matrixSettings() []setting {
	return slices.Concat(matrixShapeSettings(), matrixPaceSettings())
}

// matrixShapeSettings say what a matrix measures: its contexts, levels, window and streams, and how prompts reach a context.
func matrixShapeSettings() []setting {
	mx := []Scope{ScopeMatrix}
	return []setting{
		{env: EnvMatrixContexts, flag: "contexts", key: "matrix.contexts", sep: ",", scopes: mx,
			show: func(c *Config) string { return tomlInts(c.Matrix.Contexts) }, def: "8K,16K,32K,64K,128K",
			usage: "comma-separated context `lengths` in tokens (8K = 8192) (" + EnvMatrixContexts + ")",
			set: func(c *Config, v string) error {
				var out []int
				for _, s := range splitList(v) {
					n, ok := matrix.ContextSize(strings.ToUpper(s))
					if !ok || n < 1 {
						return fmt.Errorf("%q is not a context length such as 8K, 123K, 1M or 5000", s)
					}
					if slices.Contains(out, n) {
						return fmt.Errorf("context %s given twice", s)
					}
					out = append(out, n)
				}
				if len(out) == 0 {
					return errors.New("want at least one context length")
				}
				c.Matrix.Contexts = out
				return nil
			}},
		{env: EnvMatrixLevels, flag: "levels", key: "matrix.levels", sep: ",", scopes: mx,
			show: func(c *Config) string { return tomlInts(c.Matrix.Levels) }, def: joinInts(DefaultMatrixLevels),
			usage: "comma-separated concurrency `levels` (" + EnvMatrixLevels + ")",
			set:   func(c *Config, v string) (err error) { c.Matrix.Levels, err = uniqueLevels(v); return err }},
		{env: EnvMatrixDuration, flag: "duration", key: "matrix.duration", scopes: mx,
			show: func(c *Config) string { return showWait(c.Matrix.Duration) }, def: DefaultMatrixDuration.String(),
			usage: "measured `window` of each cell (" + EnvMatrixDuration + ")",
			set: func(c *Config, v string) error {
				d, err := time.ParseDuration(strings.TrimSpace(v))
				if err != nil || d <= 0 {
					return errors.New("want a positive duration such as 30s")
				}
				c.Matrix.Duration = d
				return nil
			}},
		{env: EnvMatrixOutput, flag: "output", key: "matrix.output", scopes: mx,
			show: func(c *Config) string { return strconv.Itoa(c.Matrix.OutputTokens) }, def: strconv.Itoa(DefaultMatrixOutput),
			usage: "max_tokens of each stream, ignore_eos (" + EnvMatrixOutput + ")",
			set:   func(c *Config, v string) (err error) { c.Matrix.OutputTokens, err = atLeast(v, 2); return err }},
		{env: EnvMatrixTargeting, flag: "targeting", key: "matrix.targeting", scopes: mx,
			show: func(c *Config) string { return tomlString(c.Matrix.Targeting) }, def: TargetingEstimate,
			usage: "how prompts hit a context `mode`: estimate (usage.prompt_tokens) or exact (/tokenize) (" + EnvMatrixTargeting + ")",
			set: func(c *Config, v string) error {
				switch v = strings.TrimSpace(v); v {
				case TargetingEstimate, TargetingExact:
					c.Matrix.Targeting = v
					return nil
				}
				return errors.New("want estimate or exact")
			}},
	}
}

// matrixPaceSettings pace a matrix: readiness, scrapes, hold, pause, budget, and its loop detector.
func matrixPaceSettings() []setting {
	mx := []Scope{ScopeMatrix}
	return []setting{
		{env: EnvMatrixReadyTimeout, flag: "ready-timeout", key: "matrix.ready_timeout", scopes: mx,
			show: func(c *Config) string { return showWait(c.Matrix.ReadyTimeout) }, def: "by context",
			usage: "longest `wait` for a cell to be ready (" + EnvMatrixReadyTimeout + "; default 60s ≤32K, 120s ≤64K, else 180s)",
			set: func(c *Config, v string) error {
				d, err := time.ParseDuration(strings.TrimSpace(v))
				if err != nil || d <= 0 {
					return errors.New("want a positive duration such as 60s")
				}
				c.Matrix.ReadyTimeout = d
				return nil
			}},
		{env: EnvMatrixScrape, flag: "scrape-interval", key: "matrix.scrape_interval", scopes: mx,
			show: func(c *Config) string { return showWait(c.Matrix.ScrapeInterval) }, def: "1s",
			usage: "`interval` between /metrics readings (" + EnvMatrixScrape + ")",
			set:   wait(func(m *Matrix) *time.Duration { return &m.ScrapeInterval }, true)},
		{env: EnvMatrixHold, flag: "hold", key: "matrix.hold", scopes: mx,
			show: func(c *Config) string { return showWait(c.Matrix.Hold) }, def: "3s",
			usage: "how `long` a cell must stay ready before its window opens (" + EnvMatrixHold + ")",
			set:   wait(func(m *Matrix) *time.Duration { return &m.Hold }, false)},
		{env: EnvMatrixPause, flag: "pause", key: "matrix.pause", scopes: mx,
			show: func(c *Config) string { return showWait(c.Matrix.Pause) }, def: "2s",
			usage: "`rest` between cells (" + EnvMatrixPause + ")",
			set:   wait(func(m *Matrix) *time.Duration { return &m.Pause }, false)},
		{env: EnvMatrixBudget, flag: "budget", key: "matrix.budget", scopes: mx,
			show: func(c *Config) string { return showWait(max(c.Matrix.Budget, 0)) }, def: "none",
			usage: "`time` the whole matrix may take; each cell's warm-up gets its share (" + EnvMatrixBudget + "; 0: none)",
			set: func(c *Config, v string) error {
				d, err := time.ParseDuration(strings.TrimSpace(v))
				if err != nil || d < 0 {
					return errors.New("want a duration >= 0 such as 45m (0: none)")
				}
				c.Matrix.Budget = d
				return nil
			}},
		{env: EnvMatrixLoopDetection, flag: "loop-detection", key: "matrix.loop_detection", scopes: mx,
			show: func(c *Config) string { return strconv.FormatBool(c.Matrix.LoopDetection) }, def: "true", boolean: true,
			usage: "check every stream for a loop and discard a cell that loops (" + EnvMatrixLoopDetection + ")",
			set: func(c *Config, v string) error {
				b, err := strconv.ParseBool(strings.TrimSpace(v))
				if err != nil {
					return errors.New("want true or false")
				}
				c.Matrix.LoopDetection = b
				return nil
			}},
	}
}

// wait is a setting of a wait that may be 0 (none): ScrapeInterval
// takes > 0 only.
func wait(field func(*Matrix) *time.Duration, positive bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 || (positive && d == 0) {
			if positive {
				return errors.New("want a positive duration such as 1s")
			}
			return errors.New("want a duration >= 0 such as 3s")
		}
		if d == 0 {
			d = -1 // said: none (0 would mean the default)
		}
		*field(&c.Matrix) = d
		return nil
	}
}

// showWait is a wait for settings.toml: "" (left out) for the default,
// "0s" for none (read back as none).
func showWait(d time.Duration) string {
	switch {
	case d == 0:
		return ""
	case d < 0:
		return tomlString("0s")
	}
	return tomlString(d.String())
}

// MaxLevel bounds a concurrency level (run, tokens, matrix): four times
// the largest --max-num-seqs vLLM defaults to (1024). A point sends that
// many requests at once, each with its own prompt (a one_image prompt
// holds a ~200 KB data URL): tokens -levels 100000000 died out of memory.
const MaxLevel = 4096

// level reads one concurrency level: a whole number from 1 to MaxLevel.
func level(s string) (int, error) {
	n, err := strconv.Atoi(s)
	switch {
	case err != nil && (!errors.Is(err, strconv.ErrRange) || strings.HasPrefix(s, "-")), err == nil && n < 1:
		return 0, fmt.Errorf("%q is not a concurrency level >= 1", s)
	case err != nil || n > MaxLevel:
		return 0, fmt.Errorf("level %s is over %d (MaxLevel)", s, MaxLevel)
	}
	return n, nil
}

// uniqueLevels reads "1,4,8" as concurrency levels from 1 to MaxLevel; a
// level given twice is refused (its second point would replace the
// first's receipt).
func uniqueLevels(v string) ([]int, error) {
	var levels []int
	for _, s := range splitList(v) {
		n, err := level(s)
		if err != nil {
			return nil, err
		}
		if slices.Contains(levels, n) {
			return nil, fmt.Errorf("level %d given twice", n)
		}
		levels = append(levels, n)
	}
	if len(levels) == 0 {
		return nil, errors.New("want at least one concurrency level")
	}
	return levels, nil
}

func atLeast(v string, lo int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo {
		return 0, fmt.Errorf("want a whole number >= %d", lo)
	}
	return n, nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
