package stub

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bucket edges of vLLM's histograms (vllm/v1/metrics/loggers.py).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
		7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
		10.0, 20.0, 40.0, 80.0}
	requestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
		50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	iterationTokenBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	paramsNBuckets        = []float64{1, 2, 5, 10, 20}
	preemptionBuckets     = []float64{1, 2, 3, 4, 5, 10, 20}
)

// FinishReasons are vLLM's finished_reason label values; a request_success
// series exists for each from the start.
var FinishReasons = []string{"stop", "length", "abort", "error", "repetition"}

// promptSources are the source label values of vllm:prompt_tokens_by_source.
var promptSources = []string{"local_compute", "local_cache_hit", "external_kv_transfer"}

// build125Buckets is vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, …
// while not above max.
func build125Buckets(maxValue int) []float64 {
	var out []float64
	for exp := 1.0; ; exp *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := m * exp
			if v > float64(maxValue) {
				return out
			}
			out = append(out, v)
		}
	}
}

type histogram struct {
	bounds []float64
	counts []float64 // per bucket, not cumulative; last is +Inf
	sum    float64
	count  float64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]float64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v) // first bound >= v: le is inclusive
	h.counts[i]++
	h.sum += v
	h.count++
}

// metrics holds the engine's Prometheus series, fed the way vLLM's
// PrometheusStatLogger feeds them, and writes them as prometheus_client
// does (text format 0.0.4, counters as <name>_total plus a <name>_created
// gauge, labels sorted by name).
type metrics struct {
	mu      sync.Mutex
	model   string
	engine  string  // the engine label: "0", or the data-parallel rank
	created float64 // unix seconds of every series' creation
	// timeScale is the served twin's time scale (0 in a simulation):
	// vetbench_twin_time_scale, so a client measuring it over HTTP reads
	// its figures in model time.
	timeScale float64
	cache     map[string]string

	running, waiting, kvUsage float64

	// missedSteps and lagSeconds are the twin's own deadline counters
	// (deadlines); lateDeliveries counts token writes that completed late
	// (engine.delivered); firstDelay sums, over firstDeliveries
	// responses, how long after its model time (model seconds) each
	// response's first tokens were written, firstModel their modelled
	// TTFT at the client (engine.firstDelivered).
	missedSteps, lagSeconds, lateDeliveries float64
	firstDelay, firstModel, firstDeliveries float64

	prefixQueries, prefixHits float64
	mmQueries, mmHits         float64
	preemptions               float64
	promptTokens              float64
	promptBySource            map[string]float64
	promptCached              float64
	generationTokens          float64
	success                   map[string]float64

	hist map[string]*histogram

	// specK is --speculative-config's k (0: no spec_decode counters).
	specK int
	spec  specStats
}

// Histogram families in registration order, with their HELP text.
var histogramFamilies = []struct{ name, help string }{
	{"vllm:request_prompt_tokens", "Number of prefill tokens processed."},
	{"vllm:request_generation_tokens", "Number of generation tokens processed."},
	{"vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step."},
	{"vllm:request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens."},
	{"vllm:request_params_n", "Histogram of the n request parameter."},
	{"vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter."},
	{"vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds."},
	{"vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds."},
	{"vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request."},
	{"vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds."},
	{"vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request."},
	{"vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request."},
	{"vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request."},
	{"vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request."},
	{"vllm:request_prefill_kv_computed_tokens", "Histogram of new KV tokens computed during prefill (excluding cached tokens)."},
	{"vllm:request_num_preemptions", "Histogram of the number of preemptions per finished request."},
}

func newMetrics(p Profile, model string, now time.Time) *metrics {
	m := &metrics{model: model, created: float64(now.UnixNano()) / 1e9, hist: map[string]*histogram{},
		promptBySource: map[string]float64{}, success: map[string]float64{}, specK: p.Speculative.k()}
	tokens := build125Buckets(p.MaxModelLen)
	bounds := map[string][]float64{
		"vllm:request_prompt_tokens":                 tokens,
		"vllm:request_generation_tokens":             tokens,
		"vllm:iteration_tokens_total":                iterationTokenBuckets,
		"vllm:request_max_num_generation_tokens":     tokens,
		"vllm:request_params_n":                      paramsNBuckets,
		"vllm:request_params_max_tokens":             tokens,
		"vllm:time_to_first_token_seconds":           ttftBuckets,
		"vllm:inter_token_latency_seconds":           itlBuckets,
		"vllm:request_time_per_output_token_seconds": itlBuckets,
		"vllm:e2e_request_latency_seconds":           requestLatencyBuckets,
		"vllm:request_queue_time_seconds":            requestLatencyBuckets,
		"vllm:request_inference_time_seconds":        requestLatencyBuckets,
		"vllm:request_prefill_time_seconds":          requestLatencyBuckets,
		"vllm:request_decode_time_seconds":           requestLatencyBuckets,
		"vllm:request_prefill_kv_computed_tokens":    tokens,
		"vllm:request_num_preemptions":               preemptionBuckets,
	}
	for _, f := range histogramFamilies {
		m.hist[f.name] = newHistogram(bounds[f.name])
	}
	m.cache = map[string]string{
		"block_size":               strconv.Itoa(p.BlockSize),
		"gpu_memory_utilization":   pyFloat(p.GPUMemoryUtilization),
		"swap_space_bytes":         "4294967296",
		"cache_dtype":              cacheDtype(p),
		"is_attention_free":        "False",
		"num_gpu_blocks_override":  "None",
		"sliding_window":           "None",
		"enable_prefix_caching":    pyBool(p.EnablePrefixCaching),
		"prefix_caching_hash_algo": "sha256",
		"cpu_offload_gb":           "0",
		"calculate_kv_scales":      "False",
		"num_gpu_blocks":           strconv.Itoa(p.NumGPUBlocks),
		"num_cpu_blocks":           "None",
	}
	return m
}

func (m *metrics) prefixQueried(queries, hits int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prefixQueries += float64(queries)
	m.prefixHits += float64(hits)
}

func (m *metrics) mmQueried(queries, hits int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mmQueries += float64(queries)
	m.mmHits += float64(hits)
}

// specDrafted records one verified draft of k tokens, a accepted.
func (m *metrics) specDrafted(k, a int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.spec.observe(k, a)
}

func (m *metrics) preempted(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.preemptions += float64(n)
}

func (m *metrics) schedulerState(running, waiting int, usage float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running, m.waiting, m.kvUsage = float64(running), float64(waiting), usage
}

// iterate records one engine iteration as vLLM's IterationStats: prompt
// tokens (whole prompts) of requests that produced their first token,
// generated tokens, the per-step token histogram, TTFT and inter-token
// latencies, and everything about requests that finished.
func (m *metrics) iterate(it iteration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	prompt := 0
	for _, r := range it.firstTokens {
		n := r.promptLen()
		prompt += n
		m.promptBySource["local_compute"] += float64(n - r.numCached)
		m.promptBySource["local_cache_hit"] += float64(r.numCached)
		m.promptCached += float64(r.numCached)
		m.hist["vllm:time_to_first_token_seconds"].observe(r.firstToken - r.arrival)
	}
	m.promptTokens += float64(prompt)
	m.generationTokens += float64(it.generated)
	if prompt+it.generated > 0 {
		m.hist["vllm:iteration_tokens_total"].observe(float64(prompt + it.generated))
	}
	for _, d := range it.itls {
		m.hist["vllm:inter_token_latency_seconds"].observe(d)
	}
	for _, r := range it.finished {
		m.success[r.finishReason]++
		// vLLM observes the tokens generated (the most over n), not max_tokens.
		m.hist["vllm:request_max_num_generation_tokens"].observe(float64(r.generated))
		m.hist["vllm:request_params_n"].observe(1)
		m.hist["vllm:e2e_request_latency_seconds"].observe(r.finished - r.arrival)
		if !r.everRan {
			continue // aborted while waiting: no phase times
		}
		m.hist["vllm:request_queue_time_seconds"].observe(r.scheduled - r.queued)
		first := r.firstToken
		if r.generated == 0 {
			first = r.finished
		}
		m.hist["vllm:request_prefill_time_seconds"].observe(first - r.scheduled)
		m.hist["vllm:request_inference_time_seconds"].observe(r.finished - r.scheduled)
		m.hist["vllm:request_decode_time_seconds"].observe(r.finished - first)
		m.hist["vllm:request_prefill_kv_computed_tokens"].observe(float64(r.promptLen() - r.numCached))
		m.hist["vllm:request_prompt_tokens"].observe(float64(r.promptLen()))
		m.hist["vllm:request_generation_tokens"].observe(float64(r.generated))
		tpot := 0.0
		if r.generated > 1 {
			tpot = (r.finished - r.firstToken) / float64(r.generated-1)
		}
		m.hist["vllm:request_time_per_output_token_seconds"].observe(tpot)
		m.hist["vllm:request_params_max_tokens"].observe(float64(r.maxTokens))
		m.hist["vllm:request_num_preemptions"].observe(float64(r.preemptions))
	}
}

// ContentType is the /metrics content type of vLLM's prometheus app.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// write renders every series in Prometheus text format 0.0.4.
func (m *metrics) write(w io.Writer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	eng := m.engine
	if eng == "" {
		eng = "0"
	}
	base := labels{"model_name": m.model, "engine": eng}
	gauge := func(name, help string, series ...sample) {
		family(&b, name, help, "gauge", series)
	}
	counter := func(name, help string, series ...sample) {
		family(&b, name+"_total", help, "counter", series)
		created := make([]sample, len(series))
		for i, s := range series {
			created[i] = sample{name + "_created", s.labels, m.created}
		}
		family(&b, name+"_created", help, "gauge", created)
	}
	one := func(name string, v float64) sample { return sample{name, base, v} }

	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", one("vllm:num_requests_running", m.running))
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", one("vllm:num_requests_waiting", m.waiting))
	gauge("vllm:num_requests_waiting_by_reason", "Number of requests waiting to be processed, by reason.",
		sample{"vllm:num_requests_waiting_by_reason", base.with("reason", "capacity"), m.waiting},
		sample{"vllm:num_requests_waiting_by_reason", base.with("reason", "deferred"), 0})
	gauge("vllm:engine_sleep_state", "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
		sample{"vllm:engine_sleep_state", base.with("sleep_state", "awake"), 1},
		sample{"vllm:engine_sleep_state", base.with("sleep_state", "weights_offloaded"), 0},
		sample{"vllm:engine_sleep_state", base.with("sleep_state", "discard_all"), 0})
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", one("vllm:kv_cache_usage_perc", m.kvUsage))
	counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", one("vllm:prefix_cache_queries_total", m.prefixQueries))
	counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", one("vllm:prefix_cache_hits_total", m.prefixHits))
	counter("vllm:external_prefix_cache_queries", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.", one("vllm:external_prefix_cache_queries_total", 0))
	counter("vllm:external_prefix_cache_hits", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.", one("vllm:external_prefix_cache_hits_total", 0))
	counter("vllm:mm_cache_queries", "Multi-modal cache queries, in terms of number of queried items.", one("vllm:mm_cache_queries_total", m.mmQueries))
	counter("vllm:mm_cache_hits", "Multi-modal cache hits, in terms of number of cached items.", one("vllm:mm_cache_hits_total", m.mmHits))
	counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", one("vllm:num_preemptions_total", m.preemptions))
	counter("vllm:prompt_tokens", "Number of prefill tokens processed.", one("vllm:prompt_tokens_total", m.promptTokens))
	var bySource []sample
	for _, s := range promptSources {
		bySource = append(bySource, sample{"vllm:prompt_tokens_by_source_total", base.with("source", s), m.promptBySource[s]})
	}
	counter("vllm:prompt_tokens_by_source", "Number of prompt tokens by source.", bySource...)
	counter("vllm:prompt_tokens_cached", "Number of cached prompt tokens (local + external).", one("vllm:prompt_tokens_cached_total", m.promptCached))
	counter("vllm:generation_tokens", "Number of generation tokens processed.", one("vllm:generation_tokens_total", m.generationTokens))
	var success []sample
	for _, r := range FinishReasons {
		success = append(success, sample{"vllm:request_success_total", base.with("finished_reason", r), m.success[r]})
	}
	counter("vllm:request_success", "Count of successfully processed requests.", success...)
	writeSpecMetrics(m.specK, &m.spec, base, counter)
	m.writeHistograms(&b, base)
	m.writeTwin(gauge, counter, one)
	info := labels{"engine": eng}
	for k, v := range m.cache {
		info[k] = v
	}
	gauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", sample{"vllm:cache_config_info", info, 1})
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTwin writes the twin's own series (never a vllm: name): its time
// scale; engine steps whose completion ran later than their model-clock
// deadline by more than the slack, and by how much in all (model
// seconds); late deliveries and first-token delays.
func (m *metrics) writeTwin(gauge, counter func(name, help string, series ...sample), one func(string, float64) sample) {
	if m.timeScale > 0 {
		gauge("vetbench_twin_time_scale", "Twin only: how many times faster than real time the twin runs (1: real time). Its series record model seconds; a client's clock reads wall seconds, this many model seconds to each.",
			one("vetbench_twin_time_scale", m.timeScale))
	}
	counter("vetbench_twin_deadline_missed_steps", "Twin only: engine steps completed later than their model-clock deadline (the machine could not keep the modelled time).",
		one("vetbench_twin_deadline_missed_steps_total", m.missedSteps))
	counter("vetbench_twin_deadline_lag_seconds", "Twin only: model seconds by which late engine steps missed their deadline, summed.",
		one("vetbench_twin_deadline_lag_seconds_total", m.lagSeconds))
	counter("vetbench_twin_deadline_late_deliveries", "Twin only: streamed token writes completed later than their model time by more than the slack, for all the delivery lead (the machine could not keep the modelled time at the client).",
		one("vetbench_twin_deadline_late_deliveries_total", m.lateDeliveries))
	counter("vetbench_twin_first_delivery_delay_seconds", "Twin only: model seconds by which each response's first tokens (a stream's first token chunk, a non-streamed body) were written after their model time, summed; a client's TTFT is later than the model's by at least their mean.",
		one("vetbench_twin_first_delivery_delay_seconds_total", m.firstDelay))
	counter("vetbench_twin_first_delivery_model_seconds", "Twin only: model seconds from each request's arrival to its first tokens' model time at the client (the TTFT a client of the model sees), summed.",
		one("vetbench_twin_first_delivery_model_seconds_total", m.firstModel))
	counter("vetbench_twin_first_deliveries", "Twin only: responses whose first tokens were written (the count the vetbench_twin_first_delivery_* series sum over).",
		one("vetbench_twin_first_deliveries_total", m.firstDeliveries))
}

// writeHistograms writes each histogram family as vLLM exposes it:
// cumulative buckets up to +Inf, _count, _sum and its _created stamp
// (m.mu held).
func (m *metrics) writeHistograms(b *strings.Builder, base labels) {
	for _, f := range histogramFamilies {
		h := m.hist[f.name]
		var series []sample
		cum := 0.0
		for i, le := range h.bounds {
			cum += h.counts[i]
			series = append(series, sample{f.name + "_bucket", base.with("le", pyFloat(le)), cum})
		}
		cum += h.counts[len(h.bounds)]
		series = append(series, sample{f.name + "_bucket", base.with("le", "+Inf"), cum},
			sample{f.name + "_count", base, h.count}, sample{f.name + "_sum", base, h.sum})
		family(b, f.name, f.help, "histogram", series)
		family(b, f.name+"_created", f.help, "gauge", []sample{{f.name + "_created", base, m.created}})
	}
}

type labels map[string]string

func (l labels) with(k, v string) labels {
	out := make(labels, len(l)+1)
	for a, b := range l {
		out[a] = b
	}
	out[k] = v
	return out
}

type sample struct {
	name   string
	labels labels
	value  float64
}

func family(b *strings.Builder, name, help, typ string, series []sample) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, strings.ReplaceAll(help, `\`, `\\`), name, typ)
	for _, s := range series {
		keys := make([]string, 0, len(s.labels))
		for k := range s.labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString(s.name)
		if len(keys) > 0 {
			b.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					b.WriteByte(',')
				}
				v := strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(s.labels[k])
				fmt.Fprintf(b, `%s="%s"`, k, v)
			}
			b.WriteByte('}')
		}
		b.WriteByte(' ')
		b.WriteString(goFloat(s.value))
		b.WriteByte('\n')
	}
}

// pyFloat is Python's repr of a float.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		sign := exp[0]
		digits := strings.TrimLeft(exp[1:], "0")
		if len(digits) < 2 {
			digits = strings.Repeat("0", 2-len(digits)) + digits
		}
		return mant + "e" + string(sign) + digits
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// goFloat is prometheus_client's floatToGoString: Python's repr, with
// exponents for values of more than six integer digits.
func goFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	s := pyFloat(f)
	dot := strings.IndexByte(s, '.')
	if f > 0 && dot > 6 {
		mant := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0.")
		return fmt.Sprintf("%se+0%d", mant, dot-1)
	}
	return s
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
