// Package receipts holds the receipt: what one run of one set at one
// concurrency level measured and answered, as a versioned JSON document.
// It reads and writes receipts (atomically, validated), says whether two
// are the same experiment (identity), and keeps goldens. Decisions live
// below it: receipts/answers compares answers, receipts/quality scores
// them against gold, receipts/speed gates benchmark speed;
// receipts/typevet imports typevet's receipts into the same model.
package receipts

import (
	"time"

	"github.com/vetbench/vetbench/judgments"
)

// Schema names the receipt format; a reader refuses any other value.
const Schema = "vetbench.receipt/v1"

// Sources of a receipt.
const (
	SourceVetbench = "vetbench"
	SourceTypevet  = "typevet"
)

// Receipt is one run of one set at one concurrency level.
type Receipt struct {
	Schema   string    `json:"schema"`
	Source   string    `json:"source"`
	Set      string    `json:"set"`
	RunID    string    `json:"run_id,omitempty"`
	Started  time.Time `json:"started_utc"`
	Finished time.Time `json:"finished_utc"`
	Target   Target    `json:"target"`
	Pins     Pins      `json:"pins"`
	Identity Identity  `json:"identity"`
	// Stopped is nil for a run that went through the whole set.
	Stopped    *Stopped   `json:"stopped"`
	Throughput Throughput `json:"throughput"`
	// Server holds /metrics deltas over the measured window; nil when the
	// server exposes none or the scrape was not taken.
	Server *Server `json:"server,omitempty"`
	// Checks are the run's self-checks (Little's law, reconciliation).
	Checks *Checks `json:"checks,omitempty"`
	// Endpoints are the figures of each endpoint when the judgments were
	// spread over several (replicas); nil for one. Throughput, Server and
	// Checks above are then the totals, and the endpoints' counts add up
	// to them (receipts/tally.SumServers).
	Endpoints []EndpointFigures `json:"endpoints,omitempty"`
	// Cost per 1,000 judgments, when an hourly GPU price was stated.
	Cost    *Cost    `json:"cost,omitempty"`
	Quality *Quality `json:"quality,omitempty"`
	// OffFormat counts answers whose sampled token was no candidate; nil
	// when no answer recorded its sampled token.
	OffFormat *OffFormat `json:"off_format,omitempty"`
	Items     []Item     `json:"items"`
	// Warnings are shown to the reader, never fatal.
	Warnings []string `json:"warnings,omitempty"`
}

// Target says what answered: a live server, the twin in a container, or the
// twin in-process. It never holds credentials.
type Target struct {
	Kind     TargetKind `json:"kind"`
	Endpoint string     `json:"endpoint,omitempty"`
	// Endpoints lists every base URL the judgments were spread over, the
	// first being Endpoint; nil for one endpoint.
	Endpoints []string `json:"endpoints,omitempty"`
	// Profile and TimeScale describe the twin; TimeScale > 1 means the twin
	// ran faster than real time and speeds are not real-time figures.
	Profile   string  `json:"profile,omitempty"`
	TimeScale float64 `json:"time_scale,omitempty"`
	Replay    string  `json:"replay,omitempty"`
}

// TargetKind says what answered a run.
type TargetKind string

// Target kinds.
const (
	TargetLive      TargetKind = "live"
	TargetContainer TargetKind = "container"
	TargetInProcess TargetKind = "inprocess"
	// TargetTypevet marks a receipt imported from typevet (a live vLLM).
	TargetTypevet TargetKind = "typevet"
)

// Pins are what the answers depend on besides the prompts and images.
type Pins struct {
	Model         string        `json:"model"`
	ModelRevision string        `json:"model_revision,omitempty"`
	Served        []ServedModel `json:"served,omitempty"`
	ServerBuild   string        `json:"server_build,omitempty"`
	ScoringMode   string        `json:"scoring_mode"`
	// ScoringFallback says why ScoringMode is not the mode asked for: the
	// server ignores logprob_token_ids and the user allowed top_logprobs.
	ScoringFallback string         `json:"scoring_fallback,omitempty"`
	TopLogprobs     int            `json:"top_logprobs,omitempty"`
	Controls        map[string]int `json:"control_token_ids,omitempty"`
	Concurrency     int            `json:"concurrency"`
	// Load is how judgments were offered; nil is the closed loop (and all
	// receipts from before open loops).
	Load *Load `json:"load,omitempty"`
	// QuestionDispatch says how each judgment's questions were sent (see
	// Dispatch). Like concurrency it is no part of the identity: answers
	// must not depend on it. Empty: not recorded (typevet, older receipts).
	QuestionDispatch Dispatch    `json:"question_dispatch,omitempty"`
	Fixture          FixturePins `json:"fixture"`
}

// Dispatch is how a judgment's questions are sent.
type Dispatch string

// Dispatches.
const (
	// DispatchSequential: one after another, as typevet asks them.
	DispatchSequential Dispatch = "sequential"
	// DispatchFanOut: all at once (VETBENCH_DISPATCH=fan-out).
	DispatchFanOut Dispatch = "fan_out"
	// DispatchTypevet: as typevet's client sends them: every control
	// tokenized anew before each judgment (one /tokenize each), then the
	// questions one after another (VETBENCH_DISPATCH=typevet). Receipts
	// imported from typevet carry it.
	DispatchTypevet Dispatch = "typevet"
)

// ServedModel is one entry of /v1/models.
type ServedModel struct {
	ID          string `json:"id"`
	Root        string `json:"root,omitempty"`
	MaxModelLen int    `json:"max_model_len,omitempty"`
}

// FixturePins name the slice of the set that was asked.
type FixturePins struct {
	Dataset     string            `json:"dataset"`
	Source      string            `json:"source"` // synthetic | real
	Seed        int64             `json:"seed"`
	Items       int               `json:"items"`
	SliceSHA256 string            `json:"slice_sha256"`
	Extra       map[string]string `json:"extra,omitempty"`
}

// Identity is what must be equal for two receipts to be comparable.
type Identity struct {
	PromptDigests  map[string]string `json:"prompt_digests"`
	FixtureDigests map[string]string `json:"fixture_digests,omitempty"`
	HarnessVersion string            `json:"harness_version,omitempty"`
	// ServerFlags are as the user stated them (VETBENCH_SERVER_FLAGS).
	ServerFlags string `json:"server_flags,omitempty"`
	// ServerEnv is the server's environment as the user stated it
	// (VETBENCH_SERVER_ENV, e.g. VLLM_BATCH_INVARIANT=1): it changes
	// answers or speed, and no request can see it.
	ServerEnv string `json:"server_env,omitempty"`
	// CacheConfig are the labels of vllm:cache_config_info, when exposed.
	CacheConfig map[string]string `json:"cache_config,omitempty"`
	Digest      string            `json:"digest"`
	// Upstream keeps identity facts the writing system recorded about
	// itself (typevet: its identity_digest and issue), verbatim. They are
	// shown, never compared: they cover code and run details that do not
	// decide answers.
	Upstream map[string]string `json:"upstream,omitempty"`
}

// Stopped says why a run ended before the end of its set.
type Stopped struct {
	// Index is the slice position of the item that stopped the run.
	Index      int        `json:"index"`
	Item       string     `json:"item"`
	Question   string     `json:"question,omitempty"`
	Reason     StopReason `json:"reason"`
	ErrorClass string     `json:"error_class,omitempty"`
	Message    string     `json:"message"`
	// Discarded counts judgments that finished after the stop index; they are
	// kept in Items with Discarded set but count in no figure.
	Discarded int `json:"discarded"`
}

// StopReason says why a run stopped early.
type StopReason string

// Stop reasons.
const (
	// StopError: a judgment failed (HTTP error, missing candidate, ...).
	StopError StopReason = "error"
	// StopCanceled: the run was cancelled (Ctrl-C, SIGTERM).
	StopCanceled StopReason = "canceled"
	// StopTimeout: a request ran past the per-request timeout.
	StopTimeout StopReason = "timeout"
)

// Throughput is the client's view of the measured window.
type Throughput struct {
	Concurrency int     `json:"concurrency"`
	WallSeconds float64 `json:"wall_seconds"`
	Judgments   int     `json:"judgments"`
	Images      int     `json:"images"`
	Requests    int     `json:"requests"`
	Failed      int     `json:"failed"`
	Discarded   int     `json:"discarded"`
	// FailedByClass counts the failed judgments by error class
	// (judgments/errclass: "timeout", "http_500", …); nil when none failed.
	FailedByClass      map[string]int `json:"failed_by_class,omitempty"`
	JudgmentsPerSecond float64        `json:"judgments_per_second"`
	ImagesPerSecond    float64        `json:"images_per_second"`
	// Latency is each kept judgment's service time: from the start of its
	// first request to the end of its last.
	Latency      Latency `json:"latency_seconds"`
	PromptTokens int     `json:"prompt_tokens"`
	// ClientQueue (arrival → start of the first request) and Response
	// (arrival → end of the last: queue + service) are an open loop's; nil
	// in a closed loop, where a judgment starts as it is handed out.
	ClientQueue *Latency `json:"client_queue_seconds,omitempty"`
	Response    *Latency `json:"response_seconds,omitempty"`
	// ArrivalLag is how late the client offered an open loop's judgments
	// against their schedule (the schedule's time → arrival); near 0 when
	// the client kept up.
	ArrivalLag *Latency `json:"arrival_lag_seconds,omitempty"`
	// SLO is goodput against a stated latency target; nil when none was
	// stated.
	SLO *SLO `json:"slo,omitempty"`
}

// SLO is a window's goodput against a per-judgment latency target. The
// target applies to the response time (arrival → end; in a closed loop
// that is the service time); a failed judgment is never within it.
type SLO struct {
	// LatencySeconds is the target: a judgment is good when its response
	// time is at most this.
	LatencySeconds float64 `json:"latency_seconds"`
	// Within counts the kept judgments within the target; Of is the
	// judgments that finished (kept and failed; discarded ones are a stop's).
	Within int `json:"within"`
	Of     int `json:"of"`
	// Goodput is Within ÷ Of (0 when nothing finished); GoodPerSecond is
	// Within ÷ the window's wall time (vLLM's request_goodput).
	Goodput       float64 `json:"goodput"`
	GoodPerSecond float64 `json:"good_per_second"`
	// Target is the stated goodput the run must reach (0..1; 0 = none
	// stated) and Met whether it did (nil without a target).
	Target float64 `json:"target,omitempty"`
	Met    *bool   `json:"met,omitempty"`
}

// Load says how judgments were offered: nil or closed loop (c in flight, a
// new one as one ends), or an open loop at a stated rate.
type Load struct {
	// Mode is LoadClosed or LoadOpen.
	Mode string `json:"mode"`
	// Rate is the open loop's arrival rate in judgments per second.
	Rate float64 `json:"rate,omitempty"`
	// Process is "poisson" (burstiness 1), "gamma" (another burstiness) or
	// "constant" (burstiness +Inf: every 1/rate).
	Process string `json:"process,omitempty"`
	// Burstiness is the gamma shape; left out for a constant process.
	Burstiness float64 `json:"burstiness,omitempty"`
	// MaxConcurrency caps the judgments in flight; arrivals beyond it wait
	// in the client queue. 0 = no cap.
	MaxConcurrency int `json:"max_concurrency"`
	// Seed is the schedule's seed: the same seed, the same arrivals.
	Seed int64 `json:"seed"`
}

// Load modes.
const (
	LoadClosed = "closed_loop"
	LoadOpen   = "open_loop"
)

// Latency holds nearest-rank percentiles of per-judgment latency.
type Latency struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
}

// Item is one judgment's outcome.
type Item struct {
	ID string `json:"id"`
	// Group is the variant (checks), kind (signatures) or class (faces).
	Group string `json:"group,omitempty"`
	// Gold maps question id to the labels counted as correct.
	Gold           map[string][]string `json:"gold,omitempty"`
	Answers        []judgments.Answer  `json:"answers"`
	LatencySeconds float64             `json:"latency_seconds"`
	// QueueSeconds is an open loop's wait in the client queue before the
	// first request (arrival → start); LatencySeconds follows it.
	QueueSeconds float64 `json:"queue_seconds,omitempty"`
	// ArrivalLagSeconds is how late the client offered it against its
	// schedule (open loop).
	ArrivalLagSeconds float64 `json:"arrival_lag_seconds,omitempty"`
	InputTokens       int     `json:"input_tokens"`
	// Error is set when the judgment failed, also when it is discarded
	// (it finished after a stop); such an item has no answers (it failed
	// closed). ErrorClass names the failure (judgments/errclass).
	Error      string `json:"error,omitempty"`
	ErrorClass string `json:"error_class,omitempty"`
	Discarded  bool   `json:"discarded,omitempty"`
}

// Answer returns the item's answer to question q.
func (it Item) Answer(q string) (judgments.Answer, bool) {
	for _, a := range it.Answers {
		if a.Question == q {
			return a, true
		}
	}
	return judgments.Answer{}, false
}

// Server holds /metrics deltas over the measured window (see bench/scrape).
type Server struct {
	// Status is "ok", or why the figures are missing ("unknown: ...").
	Status             string                `json:"status"`
	PrefixCacheHitRate *float64              `json:"prefix_cache_hit_rate"`
	MMCacheHitRate     *float64              `json:"mm_cache_hit_rate"`
	Counters           map[string]float64    `json:"counters,omitempty"`
	Histograms         map[string]Histogram  `json:"histograms,omitempty"`
	Gauges             map[string]GaugePair  `json:"gauges,omitempty"`
	CacheReset         *CacheReset           `json:"cache_reset,omitempty"`
	Problems           []string              `json:"problems,omitempty"`
	Extra              map[string]float64    `json:"extra,omitempty"`
	Engines            map[string]EngineInfo `json:"engines,omitempty"`
}

// EngineInfo is what one data-parallel engine reported, when there are
// several. Each engine has its own prefix cache, so a hit rate is per
// engine first: the overall rate is the engines' hits over their queries.
type EngineInfo struct {
	RequestSuccess     float64  `json:"request_success"`
	PrefixCacheQueries float64  `json:"prefix_cache_queries"`
	PrefixCacheHits    float64  `json:"prefix_cache_hits"`
	PrefixCacheHitRate *float64 `json:"prefix_cache_hit_rate"`
}

// Histogram is a histogram delta: count, sum and two percentile estimates.
type Histogram struct {
	Status string  `json:"status"`
	Count  float64 `json:"count"`
	Sum    float64 `json:"sum"`
	// UpperBound percentiles are the upper edge of the first bucket that
	// reaches the rank (typevet's estimate); Interpolated are linear within
	// that bucket. Nil when the rank lies in +Inf or count is 0.
	UpperBound   *Quantiles `json:"bucket_upper_bound,omitempty"`
	Interpolated *Quantiles `json:"interpolated,omitempty"`
}

// Quantiles are p50/p95/p99 estimates.
type Quantiles struct {
	P50 *float64 `json:"p50"`
	P95 *float64 `json:"p95"`
	P99 *float64 `json:"p99"`
}

// GaugePair is a gauge read before and after the window.
type GaugePair struct {
	Before *float64 `json:"before"`
	After  *float64 `json:"after"`
}

// CacheReset records the reset taken before the measured window.
type CacheReset struct {
	Requested bool `json:"requested"`
	Prefix    bool `json:"prefix"`
	MM        bool `json:"mm"`
	// Encoder is /reset_encoder_cache (cached vision-encoder outputs).
	Encoder bool   `json:"encoder"`
	Note    string `json:"note,omitempty"`
	Arm     Arm    `json:"arm,omitempty"`
}

// Arm is a measurement's cache arm.
type Arm string

// Arms.
const (
	// ArmCold resets the server's caches before the measured window (see
	// CacheReset for whether each reset took).
	ArmCold Arm = "cold"
	// ArmWarm does not: the caches are as earlier traffic left them.
	ArmWarm Arm = "warm"
)

// EndpointFigures are one endpoint's share of a window spread over several:
// the judgments it answered (rates over the window's whole wall time, so the
// endpoints' rates add up to the total), its own /metrics deltas and its
// reconciliation.
type EndpointFigures struct {
	// Endpoint is the base URL, without credentials.
	Endpoint       string          `json:"endpoint"`
	Throughput     Throughput      `json:"throughput"`
	Server         *Server         `json:"server,omitempty"`
	Reconciliation *Reconciliation `json:"reconciliation,omitempty"`
}

// Checks are the run's measurement self-checks.
type Checks struct {
	// LittlesLaw is over the pool's slots: L = judgments in service, W =
	// service time (start → end).
	LittlesLaw *LittlesLaw `json:"littles_law,omitempty"`
	// LittlesLawResponse is an open loop's over the whole client: L =
	// judgments arrived and not yet done (queued or in service), W =
	// response time (arrival → end); nil in a closed loop, where the two
	// are the same.
	LittlesLawResponse *LittlesLaw     `json:"littles_law_response,omitempty"`
	Reconciliation     *Reconciliation `json:"reconciliation,omitempty"`
}

// LittlesLaw compares sampled mean in-flight judgments with throughput × mean latency.
type LittlesLaw struct {
	// W names the time W is: "service" (start → end) or "response"
	// (arrival → end); empty in receipts from before open loops (service).
	W            string  `json:"w,omitempty"`
	MeanInFlight float64 `json:"mean_in_flight"`
	Predicted    float64 `json:"predicted"`
	RelError     float64 `json:"rel_error"`
	Samples      int     `json:"samples"`
	OK           bool    `json:"ok"`
	// Concurrency is the pool size the sampler was told (see bench/audit).
	Concurrency int `json:"concurrency,omitempty"`
	// WindowSeconds is the sampler's own window, Open to Close.
	WindowSeconds float64 `json:"window_seconds,omitempty"`
	// Saturation is mean in-flight ÷ concurrency from the moment the pool
	// first filled until the feeder ran out of work; nil when the pool never
	// had to refill (no more judgments than slots) or Drain was not marked.
	Saturation *float64 `json:"saturation"`
	// IdleFraction is the share of the window with nothing in flight.
	IdleFraction float64 `json:"idle_fraction"`
	// Problems say why OK is false, one sentence each.
	Problems []string `json:"problems,omitempty"`
}

// Reconciliation compares the server's counters with what the client sent.
type Reconciliation struct {
	ClientRequests     int     `json:"client_requests"`
	ServerRequests     float64 `json:"server_requests"`
	ClientPromptTokens int     `json:"client_prompt_tokens"`
	ServerPromptTokens float64 `json:"server_prompt_tokens"`
	OK                 bool    `json:"ok"`
	Verdict            string  `json:"verdict"`
	// ClientUnanswered are requests sent whose answer the client never got
	// (timeouts, transport errors, 5xx): the server may or may not have
	// finished them, so they widen the accepted server count.
	ClientUnanswered int `json:"client_unanswered,omitempty"`
	// ClientCachedTokens is the sum of usage.prompt_tokens_details
	// .cached_tokens over the answers, when the server sent it (vllm serve
	// --enable-prompt-tokens-details); ServerCachedTokens the prefix-cache
	// hits /metrics counted in the window (local and external, in tokens),
	// which the per-request figures must add up to.
	ClientCachedTokens *int     `json:"client_cached_tokens,omitempty"`
	ServerCachedTokens *float64 `json:"server_cached_tokens,omitempty"`
	// Detail says what differs, in numbers.
	Detail string `json:"detail,omitempty"`
}

// Cost is the price of judgments at a stated hourly GPU price.
type Cost struct {
	GPUHourlyUSD   float64 `json:"gpu_hourly_usd"`
	SecondsPer1000 float64 `json:"seconds_per_1000_judgments"`
	USDPer1000     float64 `json:"usd_per_1000_judgments"`
}

// Quality are per-set answer figures against gold labels.
type Quality struct {
	Items               int                `json:"items"`
	Accuracy            float64            `json:"accuracy"`
	AccuracyByGroup     map[string]float64 `json:"accuracy_by_group,omitempty"`
	CannotTellRate      float64            `json:"cannot_tell_rate"`
	NoulChoiceAgreement *float64           `json:"noul_choice_agreement"`
	AgreementCounted    int                `json:"agreement_counted"`
	NoulAccuracy        map[string]float64 `json:"noul_accuracy,omitempty"`
	ScoreMeanByGroup    map[string]float64 `json:"score_mean_by_group,omitempty"`
	// Unscored counts items that neither failed nor were discarded but
	// carry no verdict answer or no verdict gold; they are in no figure.
	Unscored int `json:"unscored,omitempty"`
	// NoulROCAUC and NoulECE are typevet's per-Noul ranking and calibration
	// figures against the Noul's gold (Mann–Whitney AUC with average ranks;
	// ECE over 10 equal-width bins of P(true)). A Noul whose gold has one
	// class only has no AUC.
	NoulROCAUC map[string]float64 `json:"noul_roc_auc,omitempty"`
	NoulECE    map[string]float64 `json:"noul_ece,omitempty"`
	// NoulAcceptRateByGroup is, per Noul and group, the share of P(true) >=
	// 0.5 (typevet's noul_accept_rate by kind, the skilled-forgery false
	// accept).
	NoulAcceptRateByGroup map[string]map[string]float64 `json:"noul_accept_rate_by_group,omitempty"`
	// VerdictCounts counts verdict labels per group (typevet's
	// verdict_counts by kind; kind accuracy and false-clear rates follow).
	VerdictCounts map[string]map[string]int `json:"verdict_counts,omitempty"`
}
