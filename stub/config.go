package stub

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// Config is the twin's whole configuration: New and Start build an
// in-process twin from it, Args turns it into the vllmstub command line
// (which BindFlags parses back into a Config), and stub/container runs
// that command line in a container. Zero fields take the defaults named
// on them; New resolves and validates it once (Resolve).
type Config struct {
	// Profile is the served model and hardware; zero (no Name):
	// ProfileFast.
	Profile Profile
	// Model is the served model name; "": Profile.Model.
	Model string
	// TimeScale runs the twin s times faster than real time: every model
	// duration d sleeps d/s of wall time. /metrics still records d (model
	// seconds, as the profiled server would have measured), so scrapes of
	// a time-scaled twin read like the real server's; a client's
	// wall-clock latencies must be multiplied by s (and rates divided by
	// s) to compare. 0: 1 (real time). The engine's clock is the only
	// place it is applied.
	TimeScale float64
	// Slowdown multiplies every duration the server spends (engine steps,
	// scheduling, the API frontend; not the network) by f (1.2 = a 20%
	// slower server), so a speed gate can be shown to fire. 0: 1.
	Slowdown float64
	// BatchNoise bounds the noise added to each candidate logit by the
	// batch a request's prefill ran in; a request alone in its batch gets
	// none. 0: DefaultBatchNoise; NoBatchNoise turns it off.
	BatchNoise   float64
	NoBatchNoise bool
	// Spread is the answer model's confidence spread; zero: DefaultSpread.
	Spread Spread
	// Faults are injected failures (see Fault, ParseFault).
	Faults []Fault
	// DevMode mounts the cache reset endpoints, as VLLM_SERVER_DEV_MODE=1
	// does; without it they answer 404.
	DevMode bool
	// TransportAllowance takes d of wall time per request out of the
	// modelled network round trip: the wall time the real transport and
	// client add to every request (loopback HTTP, JSON) would otherwise
	// count TimeScale times in a client's model-time latency. Measure it
	// as the round trip of a trivial request (MeasureTransport); 0 takes
	// nothing out.
	TransportAllowance time.Duration
	// APIKeys require "Authorization: Bearer <key>" (one of them) as vllm
	// serve --api-key does: /v1/*, /tokenize, /detokenize and the reset
	// endpoints answer 401 {"error": "Unauthorized"} without it; /health,
	// /ping, /load, /version, /metrics and the docs stay public. Empty
	// keys are dropped; none turns authentication off.
	APIKeys []string
	// OffFormat makes a share of requests (chosen by their content, so the
	// same prompt always behaves the same) answer off-format: the greedy
	// token is a non-candidate ("The"), so in token_ids mode the response
	// carries N+1 entries, the sampled token first. The candidates'
	// relative logits, and so the answers, do not change.
	OffFormat float64
	// Legacy serves as a vLLM older than logprob_token_ids (PR #43463):
	// the field is ignored like any unknown one, so a token_ids request
	// gets no candidate logprobs, /version reports LegacyVersion, and
	// prompt_tokens_details is null when no prompt token was cached.
	Legacy bool
	// PromptTokensDetails fills usage.prompt_tokens_details as vllm serve
	// --enable-prompt-tokens-details does (the newest chat serving code:
	// cached_tokens always, 0 included; Legacy keeps the older shape).
	PromptTokensDetails bool
	// DataParallel runs n engines behind one API server, as vllm serve
	// --data-parallel-size n: each engine has its own scheduler and
	// caches, every /metrics series carries its engine label, and
	// requests are spread as vLLM's load balancer does (see balancer).
	// 0: 1.
	DataParallel int

	// Log receives the twin's own log lines (Start's serving line, an
	// engine that fell behind its model clock); nil: none. vllmstub logs
	// to its stderr; a container's output is followed back to it
	// (stub/container).
	Log io.Writer

	// Replay serves recorded distributions (NewReplay). In-process only:
	// a container gets the receipt file (vllmstub --replay).
	Replay *Replay
	// Adjust changes candidate logits before they are normalised (tests'
	// positive controls). In-process only.
	Adjust AdjustFunc
}

// AdjustFunc changes the candidate logits of one request before they are
// normalised: keys are the control token ids of the question's options
// (ControlTokenID), values logits. item and question come from the
// request's X-Request-Id (judgments.RequestID). Tests use it as a positive
// control: flip one verdict, shift one Noul.
type AdjustFunc func(item, question string, logits map[int]float64)

// Resolve is c with its zero fields' defaults filled in, validated: the
// configuration New serves.
func (c Config) Resolve() (Config, error) {
	if c.Profile.Name == "" {
		c.Profile = ProfileFast()
	}
	if c.Model == "" {
		c.Model = c.Profile.Model
	}
	if c.TimeScale == 0 {
		c.TimeScale = 1
	}
	if c.Slowdown == 0 {
		c.Slowdown = 1
	}
	if c.BatchNoise == 0 && !c.NoBatchNoise {
		c.BatchNoise = DefaultBatchNoise
	}
	if c.Spread == (Spread{}) {
		c.Spread = DefaultSpread
	}
	if c.DataParallel == 0 {
		c.DataParallel = 1
	}
	keys := c.APIKeys[:0:0]
	for _, k := range c.APIKeys {
		if k != "" {
			keys = append(keys, k)
		}
	}
	c.APIKeys = keys
	return c, c.Validate()
}

// Validate says what is wrong with c, every problem at once. Zero fields
// that stand for a default are valid.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	positive := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
	if c.Profile.Name != "" {
		if err := c.Profile.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.TimeScale != 0 && !positive(c.TimeScale) {
		bad("time scale %v: want a positive number", c.TimeScale)
	}
	if c.Slowdown != 0 && !positive(c.Slowdown) {
		bad("slowdown %v: want a positive number", c.Slowdown)
	}
	if !(c.BatchNoise >= 0) || math.IsInf(c.BatchNoise, 0) {
		bad("batch noise %v: want 0 or more", c.BatchNoise)
	}
	if c.NoBatchNoise && c.BatchNoise != 0 {
		bad("batch noise %v with NoBatchNoise: give one", c.BatchNoise)
	}
	if sp := c.Spread; !(sp.Confident >= 0 && sp.NearTie >= 0 && sp.Confident+sp.NearTie <= 1) {
		bad("spread %+v: fractions must be >= 0 and sum to at most 1", sp)
	}
	if c.TransportAllowance < 0 {
		bad("transport allowance %s: want 0 or more", c.TransportAllowance)
	}
	if !(c.OffFormat >= 0 && c.OffFormat <= 1) {
		bad("off-format share %v: want a fraction in [0, 1]", c.OffFormat)
	}
	if c.DataParallel < 0 || c.DataParallel > 64 {
		bad("data-parallel size %d: want 1..64", c.DataParallel)
	}
	return errors.Join(errs...)
}
