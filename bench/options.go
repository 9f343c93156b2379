package bench

import (
	"net/http"
	"time"

	"github.com/vetbench/vetbench/judgments"
)

// Options are what a session is told: how to score, how long to wait, when
// a point fails, what its receipts pin. The measuring code reads no run
// configuration; bench/sweep maps one onto these (sweep.SessionOptions),
// in one place.
type Options struct {
	// Mode is how answers are scored; TopLogprobs the top_logprobs asked
	// in top_logprobs mode. ScoringFallback lets a token_ids session fall
	// back to top_logprobs when the server ignores logprob_token_ids.
	Mode            judgments.Mode
	TopLogprobs     int
	ScoringFallback bool
	// Dispatch is how a judgment's requests are sent ("": in order).
	Dispatch judgments.Dispatch
	// RequestTimeout bounds each judgment request; ControlTimeout each
	// probe, cache reset, /metrics scrape and health check (0: 10 s).
	RequestTimeout, ControlTimeout time.Duration
	// ContinueOnError records a failed judgment and goes on; MaxFailed is
	// the share (0..1) of a point's judgments that may fail with the point
	// still passing.
	ContinueOnError bool
	MaxFailed       float64
	// InFlight is the most judgments the run holds in flight at once (its
	// highest level, an open loop's cap): the transport keeps an idle
	// connection for each of their requests.
	InFlight int
	// Burstiness (the gamma shape; 0: Poisson) and Seed shape an open
	// loop's arrivals.
	Burstiness float64
	Seed       int64
	// SLOLatency is a stated per-judgment latency target (0: none),
	// SLOGoodput the share that must meet it (0: none stated).
	SLOLatency time.Duration
	SLOGoodput float64
	// GPUHourlyUSD is the stated hourly price of the serving machine (0:
	// no cost in receipts).
	GPUHourlyUSD float64
	// ModelRevision, ServerFlags and ServerEnv are what the user states
	// about the server, pinned in every receipt.
	ModelRevision, ServerFlags, ServerEnv string
	// Transport, when set, carries every request of the session: the run's
	// one transport per target, shared by its sessions and runners (nil: a
	// transport of the session's own, sized to InFlight).
	Transport http.RoundTripper
	// Settings name the settings a message points the user to (the
	// configuration's variables); zero values name them generically.
	Settings Settings
}

// Settings are the names under which the user sets what a message is about.
type Settings struct {
	ContinueOnError, MaxFailed, Scoring, ScoringFallback string
}

// DefaultControlTimeout bounds a control request when Options say nothing.
const DefaultControlTimeout = 10 * time.Second

// controlDeadline is ControlTimeout, DefaultControlTimeout when unset.
func (o Options) controlDeadline() time.Duration {
	if o.ControlTimeout > 0 {
		return o.ControlTimeout
	}
	return DefaultControlTimeout
}

// setting is a setting's name for a message, or what when unnamed.
func setting(name, what string) string {
	if name == "" {
		return what
	}
	return name
}
