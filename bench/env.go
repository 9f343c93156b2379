package bench

import (
	"errors"
	"fmt"
	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/stub"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/vetbench/vetbench/judgments"
)

// Env is the run's configuration as the user gave it in VETBENCH_*
// variables. Read it once at the edge (a test's TestMain, the CLI) and pass it
// down; nothing below reads the environment.
type Env struct {
	// Endpoint is a live server's base URL (VETBENCH_ENDPOINT); empty selects the twin.
	Endpoint string
	Model    string // VETBENCH_MODEL; for a live server, empty = the first of /v1/models
	APIKey   string // VETBENCH_API_KEY; sent as a bearer token, never recorded
	// Stub is "container", "inprocess" or "" (container when Docker answers).
	Stub string
	// Profile and TimeScale configure the twin (VETBENCH_STUB_PROFILE,
	// VETBENCH_STUB_TIME_SCALE).
	Profile   string
	TimeScale float64
	// Slowdown multiplies the twin's server-side time (VETBENCH_STUB_SLOWDOWN,
	// e.g. 1.2): a candidate made slower on purpose, to see the speed gate fire.
	Slowdown float64
	// Faults are twin fault specs (VETBENCH_STUB_FAULTS, ';'-separated, see
	// stub.ParseFault), to see how a run fails.
	Faults []stub.Fault
	Mode   judgments.Mode // VETBENCH_SCORING: token_ids (default) or top_logprobs
	// TopLogprobs is top_logprobs in top_logprobs mode (VETBENCH_TOP_LOGPROBS).
	TopLogprobs int
	Sets        []string // VETBENCH_SETS, default checks,faces,signatures
	Levels      []int    // VETBENCH_LEVELS, default 1,4,16,32
	// Out is where receipts are written (VETBENCH_OUT, default out/receipts).
	Out            string
	RequestTimeout time.Duration // VETBENCH_TIMEOUT, default 120s
	// ContinueOnError records a failed judgment and goes on
	// (VETBENCH_CONTINUE_ON_ERROR=1) instead of stopping the run.
	ContinueOnError bool
	// Arms are the cache arms per point (VETBENCH_ARMS): cold resets the
	// server's caches before the window, warm does not. Default cold.
	Arms          []string
	ModelRevision string // VETBENCH_MODEL_REVISION
	ServerFlags   string // VETBENCH_SERVER_FLAGS, as the user states them
	GPUHourlyUSD  float64
	// GoldenDir holds the golden receipts (VETBENCH_GOLDEN_DIR, default
	// receipts/golden in the module).
	GoldenDir string
}

// Defaults used when a variable is unset.
var (
	DefaultSets   = []string{"checks", "faces", "signatures"}
	DefaultLevels = []int{1, 4, 16, 32}
)

// EnvFrom reads the configuration through getenv (os.Getenv in production).
func EnvFrom(getenv func(string) string) (Env, error) {
	e := Env{
		Endpoint:       strings.TrimRight(getenv("VETBENCH_ENDPOINT"), "/"),
		Model:          getenv("VETBENCH_MODEL"),
		APIKey:         getenv("VETBENCH_API_KEY"),
		Stub:           getenv("VETBENCH_STUB"),
		Profile:        getenv("VETBENCH_STUB_PROFILE"),
		Mode:           judgments.ModeTokenIDs,
		TopLogprobs:    judgments.DefaultTopLogprobs,
		Sets:           DefaultSets,
		Levels:         DefaultLevels,
		Out:            getenv("VETBENCH_OUT"),
		RequestTimeout: 120 * time.Second,
		Arms:           []string{"cold"},
		ModelRevision:  getenv("VETBENCH_MODEL_REVISION"),
		ServerFlags:    getenv("VETBENCH_SERVER_FLAGS"),
		GoldenDir:      getenv("VETBENCH_GOLDEN_DIR"),
		TimeScale:      1,
	}
	var errs []error
	bad := func(name, v string, err error) {
		errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
	}
	switch e.Stub {
	case "", "container", "inprocess":
	default:
		bad("VETBENCH_STUB", e.Stub, fmt.Errorf("want container or inprocess"))
	}
	if v := getenv("VETBENCH_SCORING"); v != "" {
		m, err := judgments.ParseMode(v)
		if err != nil {
			bad("VETBENCH_SCORING", v, err)
		}
		e.Mode = m
	}
	if v := getenv("VETBENCH_TOP_LOGPROBS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			bad("VETBENCH_TOP_LOGPROBS", v, fmt.Errorf("want a positive integer"))
		}
		e.TopLogprobs = n
	}
	if v := getenv("VETBENCH_SETS"); v != "" {
		e.Sets = splitList(v)
	}
	if v := getenv("VETBENCH_LEVELS"); v != "" {
		e.Levels = nil
		for _, s := range splitList(v) {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				bad("VETBENCH_LEVELS", v, fmt.Errorf("%q is not a concurrency level >= 1", s))
				continue
			}
			e.Levels = append(e.Levels, n)
		}
	}
	if v := getenv("VETBENCH_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			bad("VETBENCH_TIMEOUT", v, fmt.Errorf("want a positive duration such as 90s"))
		}
		e.RequestTimeout = d
	}
	if v := getenv("VETBENCH_CONTINUE_ON_ERROR"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("VETBENCH_CONTINUE_ON_ERROR", v, err)
		}
		e.ContinueOnError = b
	}
	if v := getenv("VETBENCH_ARMS"); v != "" {
		e.Arms = splitList(v)
		for _, a := range e.Arms {
			if a != "cold" && a != "warm" {
				bad("VETBENCH_ARMS", v, fmt.Errorf("arm %q: want cold and/or warm", a))
			}
		}
	}
	if v := getenv("VETBENCH_STUB_TIME_SCALE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			bad("VETBENCH_STUB_TIME_SCALE", v, fmt.Errorf("want a number > 0"))
		}
		e.TimeScale = f
	}
	if v := getenv("VETBENCH_STUB_SLOWDOWN"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			bad("VETBENCH_STUB_SLOWDOWN", v, fmt.Errorf("want a factor > 0, such as 1.2"))
		}
		e.Slowdown = f
	}
	if v := getenv("VETBENCH_STUB_FAULTS"); v != "" {
		for _, spec := range strings.Split(v, ";") {
			if spec = strings.TrimSpace(spec); spec == "" {
				continue
			}
			f, err := stub.ParseFault(spec)
			if err != nil {
				bad("VETBENCH_STUB_FAULTS", v, err)
				continue
			}
			e.Faults = append(e.Faults, f)
		}
	}
	if usd, ok, err := audit.GPUHourly(getenv); err != nil {
		errs = append(errs, err)
	} else if ok {
		e.GPUHourlyUSD = usd
	}
	if len(errs) > 0 {
		return Env{}, fmt.Errorf("bad configuration: %w", errors.Join(errs...))
	}
	return e, nil
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
