package tokens

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/vetbench/vetbench/receipts"
)

// Metadata keys vetbench adds to a --save-result file (vllm bench serve
// --metadata K=V puts such keys at the top level too), so a file read
// back names its point. A vLLM user can add them the same way:
// `--metadata workload=text output_tokens=128`.
const (
	MetaWorkload     = "workload"
	MetaOutputTokens = "output_tokens"
	MetaMode         = "vetbench_mode" // "closed_batch" or "refilled_slots"
)

// ServeResult is the point as `vllm bench serve --save-result
// --save-detailed` writes it: the top-level figures under its names and
// the per-request lists, so vLLM's tooling (vllm bench sweep plots, its
// summary.csv) reads it. A closed batch of C requests × R repeats is
// written as max_concurrency C and num_prompts C·R over the repeats'
// summed duration.
func ServeResult(r *Receipt) (map[string]any, error) {
	v := r.Summary.Serve
	if v == nil {
		return nil, fmt.Errorf("%s: no vllm bench serve figures (a published point has no request samples)", r.Key())
	}
	p := r.Point
	rate := any("inf")
	if p.RequestRate > 0 {
		rate = p.RequestRate
	}
	// num_prompts is vLLM's per-run count: the refilled run's prompts (its
	// repeats pooled into one duration), a closed batch's every request.
	mode, prompts := "closed_batch", r.Summary.Requests
	if p.NumPrompts > 0 {
		mode, prompts = "refilled_slots", p.NumPrompts
	}
	backend := "openai-chat" // vetbench streams from the chat endpoint
	if r.Identity.API == APICompletions {
		backend = "openai"
	}
	out := map[string]any{
		"date": r.Started.Format("20060102-150405"), "endpoint_type": backend, "backend": backend,
		"label": "vetbench", "model_id": r.Identity.Model, "tokenizer_id": r.Identity.Model,
		"num_prompts": prompts, "request_rate": rate, "burstiness": max(p.Burstiness, 1.0),
		"max_concurrency": p.Concurrency, MetaWorkload: p.Workload, MetaOutputTokens: strconv.Itoa(p.OutputTokens), MetaMode: mode,
		"duration": v.Duration, "completed": v.Completed, "failed": v.Failed,
		"total_input_tokens": v.TotalInputTokens, "total_output_tokens": v.TotalOutputTokens,
		"request_throughput": v.RequestThroughput, "request_goodput": v.RequestGoodput,
		"output_throughput": v.OutputThroughput, "total_token_throughput": v.TotalTokenThroughput,
		"max_output_tokens_per_s": v.MaxOutputTokensPerS, "max_concurrent_requests": v.MaxConcurrentRequests, "rtfx": 0.0,
	}
	if p.Burstiness == 0 {
		out["burstiness"] = 1.0
	}
	for _, m := range ServeMetrics {
		for _, pre := range []string{"mean_", "median_", "std_", "p99_"} {
			if x, ok := v.Stat(pre + m + "_ms"); ok {
				out[pre+m+"_ms"] = x
			}
		}
	}
	for k, x := range v.Percentiles {
		out[k] = x
	}
	addRequestLists(out, r)
	return out, nil
}

// addRequestLists adds --save-detailed's per-request lists, in send order
// over the repeats (start_times offset by the repeats before).
func addRequestLists(out map[string]any, r *Receipt) {
	var in, outl []int
	var ttfts, lat, starts, queue []float64
	var itls [][]float64
	var texts, errs []string
	offset := 0.0
	for _, run := range r.Runs {
		for _, q := range run.Requests {
			in = append(in, q.PromptTokens)
			// As vLLM's RequestFuncOutput: a failed request keeps the TTFT
			// and gaps it got, never a latency, and counts no output.
			ok := servedOK(q)
			n, t, l := 0, 0.0, 0.0
			if q.TTFTSeconds != nil {
				t = *q.TTFTSeconds
			}
			if ok {
				n, l = q.OutputTokens, q.LatencySeconds
			}
			outl, ttfts = append(outl, n), append(ttfts, t)
			itls = append(itls, append([]float64{}, q.ITLSeconds...))
			lat, starts, queue = append(lat, l), append(starts, offset+q.StartSeconds), append(queue, 0)
			texts = append(texts, "")
			e := ""
			if !ok {
				e = q.Error
			}
			errs = append(errs, e)
		}
		offset += run.WallSeconds
	}
	out["input_lens"], out["output_lens"], out["ttfts"], out["itls"] = in, outl, ttfts, itls
	out["latencies"], out["start_times"], out["queue_times"] = lat, starts, queue
	out["generated_texts"], out["errors"] = texts, errs
}

// serveFile is what a --save-result file holds that a baseline needs.
// Keys are read defensively: older vLLM versions wrote fewer.
type serveFile struct {
	Date           string          `json:"date"`
	Backend        string          `json:"backend"`
	EndpointType   string          `json:"endpoint_type"`
	ModelID        string          `json:"model_id"`
	NumPrompts     int             `json:"num_prompts"`
	RequestRate    json.RawMessage `json:"request_rate"`
	Burstiness     *float64        `json:"burstiness"`
	MaxConcurrency *int            `json:"max_concurrency"`
	Duration       float64         `json:"duration"`
	Completed      int             `json:"completed"`
	Failed         int             `json:"failed"`
	TotalInput     int             `json:"total_input_tokens"`
	TotalOutput    int             `json:"total_output_tokens"`
	ReqTput        float64         `json:"request_throughput"`
	Goodput        *float64        `json:"request_goodput"`
	OutTput        float64         `json:"output_throughput"`
	TotalTput      float64         `json:"total_token_throughput"`
	MaxTokS        float64         `json:"max_output_tokens_per_s"`
	MaxConc        int             `json:"max_concurrent_requests"`
	OutputLens     []int           `json:"output_lens"`
	Workload       string          `json:"workload"`
	OutputTokens   string          `json:"output_tokens"`
	Mode           string          `json:"vetbench_mode"`
}

// DecodeServeResult reads a `vllm bench serve --save-result` file (one
// JSON object, or one per line as --append-result writes) as baseline
// points of source SourceVLLM: their figures are vLLM's own, by its
// definitions, never recomputed. The point is max_concurrency ×
// num_prompts (a null max_concurrency: every prompt at once, a closed
// batch), its workload and output length from the `workload` and
// `output_tokens` metadata keys or, for the length, the per-request
// output_lens when all are equal; a file that says neither is refused.
func DecodeServeResult(data []byte, name string) ([]*Receipt, error) {
	var out []*Receipt
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), len(data)+1)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		r, err := decodeServeObject(b)
		if err != nil {
			return nil, &receipts.SchemaError{File: name, Msg: fmt.Sprintf("vllm bench serve result (line %d): %v", line, err)}
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		return nil, &receipts.SchemaError{File: name, Msg: err.Error()}
	}
	if len(out) == 0 {
		return nil, &receipts.SchemaError{File: name, Msg: "vllm bench serve result: empty"}
	}
	return out, nil
}

func decodeServeObject(b []byte) (*Receipt, error) {
	var f serveFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	if f.NumPrompts < 1 || !(f.Duration > 0) {
		return nil, fmt.Errorf("num_prompts %d, duration %v: want a run of at least one prompt", f.NumPrompts, f.Duration)
	}
	p := Point{Workload: f.Workload, Concurrency: f.NumPrompts, Repeats: 1}
	if p.Workload == "" {
		p.Workload = WorkloadText
	}
	if f.MaxConcurrency != nil && *f.MaxConcurrency > 0 {
		p.Concurrency = min(*f.MaxConcurrency, f.NumPrompts)
	}
	if f.Mode != "closed_batch" {
		// vLLM refills its slots from num_prompts; vetbench's closed
		// batches (written with this mark) have no prompts count.
		p.NumPrompts = f.NumPrompts
	}
	n, err := outputLength(f)
	if err != nil {
		return nil, err
	}
	p.OutputTokens = n
	if err := serveRate(f.RequestRate, &p); err != nil {
		return nil, err
	}
	if f.Burstiness != nil && *f.Burstiness != 1 {
		p.Burstiness = *f.Burstiness
	}
	s := &Serve{Definitions: DefinitionsServe, ITLPer: ITLPerChunk, OutputTokensFrom: "usage",
		Duration: f.Duration, Completed: f.Completed, Failed: f.Failed, TotalInputTokens: f.TotalInput, TotalOutputTokens: f.TotalOutput,
		RequestThroughput: f.ReqTput, RequestGoodput: f.Goodput, OutputThroughput: f.OutTput, TotalTokenThroughput: f.TotalTput,
		MaxOutputTokensPerS: f.MaxTokS, MaxConcurrentRequests: f.MaxConc}
	if err := s.readStats(all); err != nil {
		return nil, err
	}
	r := &Receipt{Schema: Schema, Source: SourceVLLM, Target: receipts.Target{Kind: receipts.TargetLive},
		Identity: Identity{Model: f.ModelID, API: serveAPI(f)}, Point: p,
		Runs:    []Run{{GeneratedTokens: f.TotalOutput, VerifiedTokens: 0, WallSeconds: f.Duration, OutputTokS: float64(f.TotalOutput) / f.Duration}},
		Summary: Summary{Requests: f.Completed + f.Failed, Failed: f.Failed, Serve: s},
		Method:  "vllm bench serve --save-result " + f.Date,
	}
	if t, err := time.Parse("20060102-150405", f.Date); err == nil {
		r.Started = t.UTC()
	}
	return r, nil
}

// serveAPI is the endpoint a result's backend streams from (backend, or
// endpoint_type, which older versions wrote alone and newer ones write
// as the backend): openai-chat the chat endpoint, openai and vllm the
// completions endpoint; another backend by its name; "" when the file
// names none.
func serveAPI(f serveFile) string {
	b := f.Backend
	if b == "" {
		b = f.EndpointType
	}
	switch b {
	case "":
		return ""
	case "openai-chat":
		return APIChat
	case "openai", "vllm":
		return APICompletions
	}
	return "backend " + b
}

// outputLength is the point's output tokens per request: the
// output_tokens metadata, else the per-request output_lens when equal.
func outputLength(f serveFile) (int, error) {
	if f.OutputTokens != "" {
		n, err := strconv.Atoi(f.OutputTokens)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("output_tokens %q is not a positive integer", f.OutputTokens)
		}
		return n, nil
	}
	if len(f.OutputLens) > 0 {
		n := f.OutputLens[0]
		for _, m := range f.OutputLens {
			if m != n && m != 0 {
				return 0, fmt.Errorf("output_lens differ (%d, %d): not a fixed-length run; say the length with --metadata output_tokens=N", n, m)
			}
		}
		if n > 0 {
			return n, nil
		}
	}
	return 0, fmt.Errorf("no output length: run vllm bench serve with --save-detailed or --metadata output_tokens=N")
}

func serveRate(raw json.RawMessage, p *Point) error {
	s := strings.Trim(string(bytes.TrimSpace(raw)), `"`)
	if s == "" || s == "inf" || s == "null" {
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("request_rate %s: want a positive number or \"inf\"", raw)
	}
	p.RequestRate = v
	return nil
}

// readStats takes mean/median/std/p<P>_<metric>_ms for the four metrics;
// a statistic the file lacks (its metric not in --percentile-metrics)
// stays 0, is marked absent and is not compared (see ComparePoint).
func (s *Serve) readStats(all map[string]any) error {
	fields := map[string]*float64{}
	for _, m := range ServeMetrics {
		f := [4]*float64{}
		switch m {
		case "ttft":
			f = [4]*float64{&s.MeanTTFTMs, &s.MedianTTFTMs, &s.StdTTFTMs, &s.P99TTFTMs}
		case "tpot":
			f = [4]*float64{&s.MeanTPOTMs, &s.MedianTPOTMs, &s.StdTPOTMs, &s.P99TPOTMs}
		case "itl":
			f = [4]*float64{&s.MeanITLMs, &s.MedianITLMs, &s.StdITLMs, &s.P99ITLMs}
		case "e2el":
			f = [4]*float64{&s.MeanE2ELMs, &s.MedianE2ELMs, &s.StdE2ELMs, &s.P99E2ELMs}
		}
		for i, pre := range []string{"mean_", "median_", "std_", "p99_"} {
			fields[pre+m+"_ms"] = f[i]
		}
	}
	for k := range fields {
		if x, ok := all[k].(float64); !ok || math.IsNaN(x) || math.IsInf(x, 0) {
			if s.absent == nil {
				s.absent = map[string]bool{}
			}
			s.absent[k] = true
		}
	}
	for k, v := range all {
		if !strings.HasSuffix(k, "_ms") || strings.HasPrefix(k, "probe_") {
			continue
		}
		x, ok := v.(float64)
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		if dst, ok := fields[k]; ok {
			*dst = x
		} else if strings.HasPrefix(k, "p") {
			if s.Percentiles == nil {
				s.Percentiles = map[string]float64{}
			}
			s.Percentiles[k] = x
		}
	}
	return nil
}
