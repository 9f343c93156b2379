// Package tokens holds the token-throughput receipt: what one point
// (workload × concurrency × output length) of a streaming decode benchmark
// measured over its repeats, as a versioned JSON document
// (vetbench.tokens/v1). It computes the point's figures from its runs in
// one place (Summarize), writes receipts atomically without overwriting,
// reads them back validated, reads the published token-throughput format
// as a baseline, and compares a baseline point with a candidate point.
package tokens

import (
	"fmt"
	"time"

	"github.com/vetbench/vetbench/receipts"
)

// Schema names the receipt format; a reader refuses any other value.
const Schema = "vetbench.tokens/v1"

// Sources of a receipt.
const (
	SourceVetbench = "vetbench"
	// SourcePublished marks a point read from the published
	// token-throughput format (see ReadPublished).
	SourcePublished = "published"
)

// Workloads.
const (
	WorkloadText     = "text"
	WorkloadOneImage = "one_image"
)

// Cache isolation of Identity.CacheIsolation: how a point was kept from
// reading cache entries another point (or run) left.
const (
	// CacheUniquePrompts: every request's prompt starts with a tag of its own.
	CacheUniquePrompts = "unique_prompts"
	// CacheReset: the server's caches were reset before each point.
	CacheReset = "cache_reset"
	// CacheSharedPrompts: prompts repeat between points and runs, so later
	// points read what earlier ones cached (the cache pitfall, on purpose).
	CacheSharedPrompts = "shared_prompts"
)

// Receipt is one point of a token-throughput run.
type Receipt struct {
	Schema   string          `json:"schema"`
	Source   string          `json:"source"`
	RunID    string          `json:"run_id,omitempty"`
	Started  time.Time       `json:"started_utc,omitzero"`
	Finished time.Time       `json:"finished_utc,omitzero"`
	Target   receipts.Target `json:"target"`
	Identity Identity        `json:"identity"`
	Point    Point           `json:"point"`
	Runs     []Run           `json:"runs"`
	Summary  Summary         `json:"summary"`
	// Stopped is nil when every repeat ran.
	Stopped *Stopped `json:"stopped"`
	// Method is the published format's method sentence, verbatim.
	Method   string   `json:"method,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// Point is what was asked: a workload at a concurrency, each request for a
// fixed number of output tokens, Repeats times.
type Point struct {
	Workload    string `json:"workload"`
	Concurrency int    `json:"concurrency"`
	// OutputTokens is asked per request (max_tokens with ignore_eos).
	OutputTokens int `json:"output_tokens"`
	Repeats      int `json:"repeats"`
	// SLO is the per-request target goodput is counted against; nil when
	// none was stated.
	SLO *SLO `json:"slo,omitempty"`
}

// SLO is a token run's per-request service-level objective, as vllm bench
// serve --goodput takes it: a request is good when it meets every target
// given (TTFT, TPOT; 0 = not given).
type SLO struct {
	TTFTMs float64 `json:"ttft_ms,omitempty"`
	TPOTMs float64 `json:"tpot_ms,omitempty"`
	// Target is the stated share of requests that must be good (0 = none).
	Target float64 `json:"target,omitempty"`
}

// Goodput is a point's requests against its SLO.
type Goodput struct {
	// Within counts the requests that met every target; Of every request
	// of the point (failed and short ones are never good).
	Within int `json:"within"`
	Of     int `json:"of"`
	// Share is Within ÷ Of; PerSecond is Within ÷ Σ run wall seconds
	// (vllm bench serve's request_goodput).
	Share     float64 `json:"share"`
	PerSecond float64 `json:"per_second"`
	// Met says whether Share reached the SLO's Target; nil without one.
	Met *bool `json:"met,omitempty"`
}

// Key identifies a point within a run, for matching baseline and candidate.
type Key struct {
	Workload     string
	Concurrency  int
	OutputTokens int
}

func (k Key) String() string {
	return fmt.Sprintf("workload=%s/c=%d/output=%d", k.Workload, k.Concurrency, k.OutputTokens)
}

// Key is the receipt's point key.
func (r *Receipt) Key() Key {
	return Key{Workload: r.Point.Workload, Concurrency: r.Point.Concurrency, OutputTokens: r.Point.OutputTokens}
}

// Identity is what must be equal for two points to be comparable, besides
// the point's workload and output length. An empty field is unrecorded,
// and a comparison says so instead of calling it equal.
type Identity struct {
	// Model names the weights (the served root, like receipts.Weights).
	Model       string `json:"model,omitempty"`
	ServerBuild string `json:"server_build,omitempty"`
	// ServerFlags are as the user stated them.
	ServerFlags string `json:"server_flags,omitempty"`
	GPU         string `json:"gpu,omitempty"`
	// Profile holds server settings as key=value facts: the published
	// format's profile (flattened: limit_mm_per_prompt.image), or
	// vllm:cache_config_info labels.
	Profile map[string]string `json:"profile,omitempty"`
	// Sampling is how output was asked ("temperature=0 ignore_eos=true").
	Sampling string `json:"sampling,omitempty"`
	// PromptDigest is the hex sha256 over every prompt and image sent.
	PromptDigest string `json:"prompt_digest,omitempty"`
	// CacheIsolation says how points were kept from sharing a prefix:
	// CacheUniquePrompts, CacheReset, CacheSharedPrompts, or "" when
	// unrecorded.
	CacheIsolation string `json:"cache_isolation,omitempty"`
	HarnessVersion string `json:"harness_version,omitempty"`
	// Digest is the sha256 over the identity fields (IdentityDigest).
	Digest string `json:"digest"`
}

// Run is one repeat: Concurrency requests sent at once, measured from the
// first send to the end of the last stream.
type Run struct {
	// GeneratedTokens is the server's count over the run's requests.
	GeneratedTokens int `json:"generated_tokens"`
	// VerifiedTokens counts only requests that produced exactly the asked
	// tokens and no error.
	VerifiedTokens int     `json:"verified_tokens"`
	WallSeconds    float64 `json:"wall_seconds"`
	// OutputTokS is GeneratedTokens ÷ WallSeconds.
	OutputTokS        float64  `json:"output_tok_s"`
	GPUMemoryMiBAfter *float64 `json:"gpu_memory_mib_after,omitempty"`
	Failed            int      `json:"failed"`
	Short             int      `json:"short"`
	// Requests are the run's requests (empty for a published point).
	Requests []Request `json:"requests,omitempty"`
	// LittlesLaw checks the run's mean requests in flight against
	// throughput × mean latency (bench/audit); nil when not checked.
	LittlesLaw *receipts.LittlesLaw `json:"littles_law,omitempty"`
}

// Request is one streamed request of a run.
type Request struct {
	ID           string `json:"id,omitempty"`
	PromptTokens int    `json:"prompt_tokens"`
	OutputTokens int    `json:"output_tokens"`
	// TTFTSeconds is nil when no token arrived; ITLSeconds (time between
	// tokens) when fewer than two did.
	TTFTSeconds  *float64 `json:"ttft_seconds"`
	ITLSeconds   *float64 `json:"itl_seconds"`
	E2ESeconds   float64  `json:"e2e_seconds"`
	FinishReason string   `json:"finish_reason,omitempty"`
	// Error is set for a failed or short request; ErrorClass is its
	// stable name (stream.ErrorClass: "short", "cut", "http_500", ...).
	Error      string `json:"error,omitempty"`
	ErrorClass string `json:"error_class,omitempty"`
}

// Summary is the point's figures, computed from its runs by Summarize.
type Summary struct {
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
	Short    int `json:"short"`
	// TotalVerifiedOutputTokens sums the runs' VerifiedTokens.
	TotalVerifiedOutputTokens int `json:"total_verified_output_tokens"`
	// AggregateOutputTokS is Σ generated tokens ÷ Σ run wall seconds:
	// output tokens over end-to-end batch time.
	AggregateOutputTokS float64 `json:"aggregate_output_tok_s"`
	// PerRequestOutputTokS is AggregateOutputTokS ÷ concurrency (the
	// published format's definition).
	PerRequestOutputTokS float64 `json:"per_request_output_tok_s"`
	// MeanCompletionSeconds is the mean run wall time: how long a batch
	// took to complete.
	MeanCompletionSeconds float64 `json:"mean_completion_seconds"`
	// MeanTPOTMs is MeanCompletionSeconds ÷ output tokens, in ms.
	MeanTPOTMs       float64  `json:"mean_tpot_ms"`
	PeakGPUMemoryMiB *float64 `json:"peak_observed_gpu_memory_mib,omitempty"`
	// Per-request distributions over the requests without error (nil
	// without request samples): time to first token; time between
	// tokens; vllm bench serve's TPOT, (e2e − ttft) ÷ (n − 1); end to end;
	// and output tokens ÷ end to end per request.
	TTFTMs            *Dist `json:"ttft_ms,omitempty"`
	ITLMs             *Dist `json:"itl_ms,omitempty"`
	TPOTMs            *Dist `json:"tpot_ms,omitempty"`
	E2EMs             *Dist `json:"e2e_ms,omitempty"`
	RequestOutputTokS *Dist `json:"request_output_tok_s,omitempty"`
	// Goodput counts the requests within the point's SLO; nil when none
	// was stated or there are no request samples.
	Goodput *Goodput `json:"goodput,omitempty"`
}

// Dist summarises samples: mean and linear-interpolated percentiles
// (numpy's default, as vllm bench serve computes them).
type Dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// Stopped says why a point ended before its last repeat.
type Stopped struct {
	// Reason is "error", "canceled" or "timeout".
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Runs is how many repeats completed (and are in Runs).
	Runs int `json:"runs"`
}

// Failures is the point's failed plus short requests.
func (r *Receipt) Failures() int { return r.Summary.Failed + r.Summary.Short }
