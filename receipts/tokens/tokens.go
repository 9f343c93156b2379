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
const Schema = "vetbench.tokens/v2"

// SchemaV1 is the format before `vllm bench serve`'s figures: its
// mean_tpot_ms, tpot_ms and itl_ms carried vLLM's names with other
// definitions, and its requests lack the per-chunk record vLLM's figures
// need. ReadBaseline refuses it with a message that says so.
const SchemaV1 = "vetbench.tokens/v1"

// Sources of a receipt.
const (
	SourceVetbench = "vetbench"
	// SourcePublished marks a point read from the published
	// token-throughput format (see ReadPublished).
	SourcePublished = "published"
	// SourceVLLM marks a point read from a `vllm bench serve
	// --save-result` file (see DecodeServeResult).
	SourceVLLM = "vllm_bench_serve"
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
	// NumPrompts, when > 0, makes every repeat send NumPrompts requests
	// through Concurrency refilled slots, as `vllm bench serve
	// --max-concurrency C --num-prompts N` does; 0 is the closed batch
	// (Concurrency requests sent at once, the published receipts' mode).
	NumPrompts int `json:"num_prompts,omitempty"`
	// RequestRate is `vllm bench serve --request-rate` for a refilled run:
	// requests per second on a gamma schedule of shape Burstiness (0 =
	// inf, all at once); Seed seeds it.
	RequestRate float64 `json:"request_rate,omitempty"`
	Burstiness  float64 `json:"burstiness,omitempty"`
	Seed        int64   `json:"seed,omitempty"`
	// SLO is the per-request target the receipt's own goodput share is
	// counted against; nil when none was stated.
	SLO *SLO `json:"slo,omitempty"`
	// ServeGoodput is `vllm bench serve --goodput` (keys ttft, tpot,
	// e2el; values in ms) for request_goodput; nil when not given.
	ServeGoodput map[string]float64 `json:"serve_goodput,omitempty"`
	// MetricPercentiles are `--metric-percentiles`; empty means 99.
	MetricPercentiles []float64 `json:"metric_percentiles,omitempty"`
}

// Requests is how many requests one repeat sends.
func (p Point) Requests() int {
	if p.NumPrompts > 0 {
		return p.NumPrompts
	}
	return p.Concurrency
}

// Percentiles is MetricPercentiles, or 99 (vLLM's default) when empty.
func (p Point) Percentiles() []float64 {
	if len(p.MetricPercentiles) == 0 {
		return []float64{99}
	}
	return p.MetricPercentiles
}

// SLO is a token run's per-request service-level objective for the
// receipt's own goodput share: a request is good when it produced exactly
// the asked tokens and meets every target given (TTFT to the first text,
// TPOT as (e2e − first text) ÷ (n − 1); 0 = not given). It is not `vllm
// bench serve --goodput` (see Point.ServeGoodput and Serve.RequestGoodput,
// which count good requests per second by vLLM's definitions).
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
	// (not vllm bench serve's request_goodput: failures and exact length
	// count here; see Serve.RequestGoodput).
	Share     float64 `json:"share"`
	PerSecond float64 `json:"per_second"`
	// Met says whether Share reached the SLO's Target; nil without one.
	Met *bool `json:"met,omitempty"`
}

// Key identifies a point within a run, for matching baseline and candidate.
type Key struct {
	Workload     string `json:"workload"`
	Concurrency  int    `json:"concurrency"`
	OutputTokens int    `json:"output_tokens"`
	// NumPrompts is 0 for a closed batch.
	NumPrompts int `json:"num_prompts"`
}

func (k Key) String() string {
	s := fmt.Sprintf("workload=%s/c=%d/output=%d", k.Workload, k.Concurrency, k.OutputTokens)
	if k.NumPrompts > 0 {
		s += fmt.Sprintf("/num-prompts=%d", k.NumPrompts)
	}
	return s
}

// Key is the receipt's point key.
func (r *Receipt) Key() Key {
	return Key{Workload: r.Point.Workload, Concurrency: r.Point.Concurrency, OutputTokens: r.Point.OutputTokens, NumPrompts: r.Point.NumPrompts}
}

// Identity is what must be equal for two points to be comparable, besides
// the point's workload and output length. An empty field is unrecorded,
// and a comparison says so instead of calling it equal.
// The endpoints a point can stream from (Identity.API).
const (
	APIChat        = "/v1/chat/completions"
	APICompletions = "/v1/completions"
)

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
	// API is the endpoint the point streamed from: APIChat (vetbench's
	// own points; vllm bench serve --backend openai-chat) or
	// APICompletions (--backend openai or vllm, its default: a prompt
	// without the chat template, so other prompt tokens); "" unrecorded.
	API string `json:"api,omitempty"`
	// Digest is the sha256 over the identity fields (IdentityDigest).
	Digest string `json:"digest"`
}

// Run is one repeat: Concurrency requests sent at once (or NumPrompts
// through Concurrency refilled slots), measured from the first send to the
// end of the last stream.
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
	// FirstTextSeconds is send to the first chunk with text (content or
	// reasoning), nil when none arrived; TimeBetweenTokensSeconds is
	// (last − first text arrival) ÷ (output tokens − 1), nil below two
	// tokens; E2ESeconds is send to the end of the stream ([DONE]).
	FirstTextSeconds         *float64 `json:"first_text_seconds"`
	TimeBetweenTokensSeconds *float64 `json:"time_between_tokens_seconds"`
	E2ESeconds               float64  `json:"e2e_seconds"`
	// The request as `vllm bench serve` records it
	// (endpoint_request_func.py): StartSeconds is the send time from the
	// run's start; TTFTSeconds send to the first chunk with choices (nil
	// when none came: vLLM's failed request); ITLSeconds every later
	// chunk's gap, one per chunk whatever tokens it carried;
	// LatencySeconds send to the last chunk with choices.
	StartSeconds   float64   `json:"start_seconds"`
	TTFTSeconds    *float64  `json:"ttft_seconds"`
	ITLSeconds     []float64 `json:"itl_seconds"`
	LatencySeconds float64   `json:"latency_seconds"`
	FinishReason   string    `json:"finish_reason,omitempty"`
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
	// MeanBatchMsPerToken is MeanCompletionSeconds ÷ output tokens, in
	// ms: the published receipts' "mean_tpot_ms" (batch wall time, TTFT
	// included, divided by n), named apart from vLLM's TPOT. 0 for a
	// refilled run, where no batch completes.
	MeanBatchMsPerToken float64  `json:"mean_batch_ms_per_token"`
	PeakGPUMemoryMiB    *float64 `json:"peak_observed_gpu_memory_mib,omitempty"`
	// Per-request distributions over the requests without error (nil
	// without request samples): send to the first text; time between
	// tokens (one average per request); send to the end of the stream;
	// and output tokens ÷ that per request. vLLM's TTFT, TPOT, ITL and
	// E2EL are in Serve, by its definitions.
	FirstTextMs         *Dist `json:"first_text_ms,omitempty"`
	TimeBetweenTokensMs *Dist `json:"time_between_tokens_ms,omitempty"`
	E2EMs               *Dist `json:"e2e_ms,omitempty"`
	RequestOutputTokS   *Dist `json:"request_output_tok_s,omitempty"`
	// Goodput counts the requests within the point's SLO; nil when none
	// was stated or there are no request samples.
	Goodput *Goodput `json:"goodput,omitempty"`
	// Serve is the figures `vllm bench serve` prints and saves, by its
	// definitions and under its --save-result names; nil without request
	// samples (a published point).
	Serve *Serve `json:"vllm_bench_serve,omitempty"`
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
