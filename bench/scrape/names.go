package scrape

import "github.com/vetbench/vetbench/receipts/tally"

// Keys of receipts.Server.Counters (deltas over the window). They are
// typevet's keys, so imported and native receipts compare. The four the hit
// rates are ratios of are tally's, where the ratios are computed.
const (
	PrefixCacheQueries = tally.PrefixCacheQueries // tokens looked up in the local prefix cache
	PrefixCacheHits    = tally.PrefixCacheHits    // tokens found there
	MMCacheQueries     = tally.MMCacheQueries     // multimodal items looked up
	MMCacheHits        = tally.MMCacheHits        // multimodal items found
	PromptTokens       = "prompt_tokens"          // whole prompts, cached tokens included
	PromptTokensCached = "prompt_tokens_cached"   // local + external cached prompt tokens
	GenerationTokens   = "generation_tokens"
	RequestSuccess     = "request_success" // finished requests, every finished_reason
	Preemptions        = "preemptions"
)

// Keys of receipts.Server.Histograms.
const (
	HistE2E       = "e2e"
	HistQueue     = "queue"
	HistPrefill   = "prefill"
	HistInference = "inference"
	HistDecode    = "decode"
	HistTTFT      = "ttft"
)

// Keys of receipts.Server.Gauges.
const (
	GaugeKVCacheUsage     = "kv_cache_usage_perc" // highest engine's usage, 0–1
	GaugeRequestsRunning  = "num_requests_running"
	GaugeRequestsWaiting  = "num_requests_waiting"
	processStartTimeGauge = "process_start_time_seconds"
)

// Keys of receipts.Server.Extra. The external prefix cache is the KV
// connector's tier (another instance or a CPU/disk offload); it is reported
// apart and never folded into the local hit rate.
const (
	ExtraExternalQueries = "external_prefix_cache_queries"
	ExtraExternalHits    = "external_prefix_cache_hits"
	ExtraExternalHitRate = "external_prefix_cache_hit_rate"
	// ExtraRequestSuccessPrefix + finished_reason ("stop", "length",
	// "abort", …) holds request_success split by reason.
	ExtraRequestSuccessPrefix = "request_success_"
	// A server that models its own time (vetbench's twin; vLLM has no
	// such series) reports how well it kept it: the summed delay (model
	// seconds) of each response's first tokens past their model time,
	// their summed modelled TTFT at the client, the count both sum over,
	// and the engine steps that missed their deadline. Absent on a server
	// without them.
	ExtraFirstDeliveryDelay = "twin_first_delivery_delay_seconds"
	ExtraFirstDeliveryModel = "twin_first_delivery_model_seconds"
	ExtraFirstDeliveries    = "twin_first_deliveries"
	ExtraMissedSteps        = "twin_missed_steps"
)

// Status values of receipts.Server and receipts.Histogram.
const (
	StatusOK = "ok"
	// StatusEmpty is a histogram that observed nothing in the window.
	StatusEmpty = "empty"
)

// CacheConfigMetric is vLLM's info-style gauge whose labels are the engine's
// cache configuration.
const CacheConfigMetric = "vllm:cache_config_info"

type counterSpec struct {
	key, name string
	// optional series may be absent from both readings without a problem
	// being recorded (vLLM adds some only with a KV connector).
	optional bool
}

func counterSpecs() []counterSpec {
	return []counterSpec{
		{key: PrefixCacheQueries, name: "vllm:prefix_cache_queries"},
		{key: PrefixCacheHits, name: "vllm:prefix_cache_hits"},
		{key: MMCacheQueries, name: "vllm:mm_cache_queries"},
		{key: MMCacheHits, name: "vllm:mm_cache_hits"},
		{key: PromptTokens, name: "vllm:prompt_tokens"},
		{key: PromptTokensCached, name: "vllm:prompt_tokens_cached"},
		{key: GenerationTokens, name: "vllm:generation_tokens"},
		{key: RequestSuccess, name: "vllm:request_success"},
		{key: Preemptions, name: "vllm:num_preemptions"},
	}
}

// extraSpecs are the counters read into Extra, each optional.
func extraSpecs() []counterSpec {
	return []counterSpec{
		{key: ExtraExternalQueries, name: "vllm:external_prefix_cache_queries", optional: true},
		{key: ExtraExternalHits, name: "vllm:external_prefix_cache_hits", optional: true},
		{key: ExtraFirstDeliveryDelay, name: "vetbench_twin_first_delivery_delay_seconds", optional: true},
		{key: ExtraFirstDeliveryModel, name: "vetbench_twin_first_delivery_model_seconds", optional: true},
		{key: ExtraFirstDeliveries, name: "vetbench_twin_first_deliveries", optional: true},
		{key: ExtraMissedSteps, name: "vetbench_twin_deadline_missed_steps", optional: true},
	}
}

type histogramSpec struct {
	key, name string
	optional  bool
}

func histogramSpecs() []histogramSpec {
	return []histogramSpec{
		{key: HistE2E, name: "vllm:e2e_request_latency_seconds"},
		{key: HistQueue, name: "vllm:request_queue_time_seconds"},
		{key: HistPrefill, name: "vllm:request_prefill_time_seconds"},
		{key: HistInference, name: "vllm:request_inference_time_seconds", optional: true},
		{key: HistDecode, name: "vllm:request_decode_time_seconds", optional: true},
		{key: HistTTFT, name: "vllm:time_to_first_token_seconds", optional: true},
	}
}

type gaugeSpec struct {
	key, name string
	// max takes the highest engine's value instead of the sum: a usage
	// fraction summed over engines means nothing.
	max bool
}

func gaugeSpecs() []gaugeSpec {
	return []gaugeSpec{
		{key: GaugeKVCacheUsage, name: "vllm:kv_cache_usage_perc", max: true},
		{key: GaugeRequestsRunning, name: "vllm:num_requests_running"},
		{key: GaugeRequestsWaiting, name: "vllm:num_requests_waiting"},
	}
}
