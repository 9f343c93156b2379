package tokens

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/internal/docfile"
	"github.com/vetbench/vetbench/receipts/internal/jsontree"
)

// Published is the published token-throughput format
// (token-throughput-rtx3090.json): runtime, gpu, profile, method and one
// record per workload × concurrency, each with its runs. No public tool is
// known to write it (method.md §9); the reader holds it to what the one
// known file shows.
type Published struct {
	Runtime string `json:"runtime"`
	GPU     string `json:"gpu"`
	// Profile is the server profile object flattened to key=value facts
	// (limit_mm_per_prompt.image = "1"); its keys are not fixed.
	Profile map[string]string `json:"-"`
	Method  string            `json:"method"`
	Records []PublishedRecord `json:"records"`
}

// PublishedRecord is one point of the published format.
type PublishedRecord struct {
	Workload                  string         `json:"workload"`
	Concurrency               int            `json:"concurrency"`
	Repeats                   int            `json:"repeats"`
	OutputTokensPerRequest    int            `json:"output_tokens_per_request"`
	TotalVerifiedOutputTokens int            `json:"total_verified_output_tokens"`
	AggregateOutputTokS       float64        `json:"aggregate_output_tok_s"`
	PerRequestOutputTokS      float64        `json:"per_request_output_tok_s"`
	MeanCompletionSeconds     float64        `json:"mean_completion_seconds"`
	MeanTPOTMs                float64        `json:"mean_tpot_ms"`
	PeakObservedGPUMemoryMiB  float64        `json:"peak_observed_gpu_memory_mib"`
	Runs                      []PublishedRun `json:"runs"`
}

// PublishedRun is one repeat of a published record.
type PublishedRun struct {
	GeneratedTokens   int     `json:"generated_tokens"`
	WallSeconds       float64 `json:"wall_seconds"`
	OutputTokS        float64 `json:"output_tok_s"`
	GPUMemoryMiBAfter float64 `json:"gpu_memory_mib_after"`
}

// Published workload names, mapped to vetbench's.
var publishedWorkloads = map[string]string{
	"text":                  WorkloadText,
	"one_image_per_request": WorkloadOneImage,
}

// ReadPublishedFile reads a file of the published format as receipts.
func ReadPublishedFile(path string) ([]*Receipt, error) {
	f, _, err := docfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open published receipt: %w", err)
	}
	defer f.Close()
	data, err := docfile.Read(f)
	if err != nil {
		return nil, &receipts.SchemaError{File: path, Msg: err.Error()}
	}
	return DecodePublished(data, path)
}

// DecodePublished parses and validates the published format and maps
// each record to a receipt of SourcePublished. Errors name the file and
// the field as the published file spells it (records[3].runs[1].wall_seconds).
func DecodePublished(data []byte, name string) ([]*Receipt, error) {
	pub, err := ParsePublished(data, name)
	if err != nil {
		return nil, err
	}
	out := make([]*Receipt, 0, len(pub.Records))
	for i, rec := range pub.Records {
		r := pub.receipt(rec)
		r.Identity.Digest = r.IdentityDigest()
		if err := r.validate(name); err != nil {
			// ParsePublished checked every figure this mapping uses.
			return nil, fmt.Errorf("records[%d]: mapped receipt invalid (a bug): %w", i, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// ParsePublished parses and validates the published format as it is.
func ParsePublished(data []byte, name string) (*Published, error) {
	if err := docfile.CheckDepth(data); err != nil {
		return nil, receipts.AsSchemaError(err, name)
	}
	tree, err := jsontree.Decode(data)
	if err != nil {
		return nil, receipts.AsSchemaError(err, name)
	}
	obj, ok := tree.(*jsontree.Object)
	if !ok {
		return nil, &receipts.SchemaError{File: name, Msg: "want an object, got " + jsontree.KindOf(tree)}
	}
	profile := map[string]string{}
	if v, has := obj.Get("profile"); has {
		if err := flatten(v, "profile", "", profile); err != nil {
			return nil, receipts.AsSchemaError(err, name)
		}
		rest := &jsontree.Object{Values: map[string]any{}}
		for _, k := range obj.Keys {
			if k != "profile" {
				rest.Keys = append(rest.Keys, k)
				rest.Values[k] = obj.Values[k]
			}
		}
		tree = rest
	}
	t := reflect.TypeFor[Published]()
	if err := jsontree.CheckShape(tree, t, ""); err != nil {
		return nil, receipts.AsSchemaError(err, name)
	}
	if err := docfile.RequireFields(tree, t, ""); err != nil {
		return nil, receipts.AsSchemaError(err, name)
	}
	var pub Published
	if err := json.Unmarshal(data, &pub); err != nil {
		return nil, &receipts.SchemaError{File: name, Msg: err.Error()}
	}
	pub.Profile = profile
	if err := pub.validate(name); err != nil {
		return nil, err
	}
	return &pub, nil
}

// flatten turns the profile object into key=value facts.
func flatten(v any, path, prefix string, out map[string]string) error {
	obj, ok := v.(*jsontree.Object)
	if !ok {
		return &jsontree.Error{Path: path, Msg: "want an object, got " + jsontree.KindOf(v)}
	}
	for _, k := range obj.Keys {
		key, kp := prefix+k, jsontree.JoinKey(path, k)
		switch x := obj.Values[k].(type) {
		case *jsontree.Object:
			if err := flatten(x, kp, key+".", out); err != nil {
				return err
			}
		case string:
			out[key] = x
		case json.Number:
			out[key] = string(x)
		case bool:
			out[key] = strconv.FormatBool(x)
		case nil:
			out[key] = "null"
		default:
			return &jsontree.Error{Path: kp, Msg: "want a number, string, boolean or object, got " + jsontree.KindOf(x)}
		}
	}
	return nil
}

func (pub *Published) validate(file string) error {
	p := &receipts.Problems{File: file}
	if len(pub.Records) == 0 {
		p.Add("records", "empty")
	}
	seen := map[Key]int{}
	for i, rec := range pub.Records {
		path := fmt.Sprintf("records[%d]", i)
		w, known := publishedWorkloads[rec.Workload]
		if !known {
			p.Add(path+".workload", "unknown workload %q (want text or one_image_per_request)", rec.Workload)
		}
		if rec.Concurrency < 1 {
			p.Add(path+".concurrency", "%d is below 1", rec.Concurrency)
		}
		if rec.Repeats < 1 {
			p.Add(path+".repeats", "%d is below 1", rec.Repeats)
		}
		if rec.OutputTokensPerRequest < 1 {
			p.Add(path+".output_tokens_per_request", "%d is below 1", rec.OutputTokensPerRequest)
		}
		k := Key{Workload: w, Concurrency: rec.Concurrency, OutputTokens: rec.OutputTokensPerRequest}
		if j, dup := seen[k]; dup && known {
			p.Add(path, "the same point as records[%d] (%s)", j, k)
		}
		seen[k] = i
		if len(rec.Runs) != rec.Repeats {
			p.Add(path+".runs", "%d runs for %d repeats", len(rec.Runs), rec.Repeats)
		}
		gen, wall, peak := 0, 0.0, 0.0
		for j, run := range rec.Runs {
			rp := fmt.Sprintf("%s.runs[%d]", path, j)
			if full := rec.Concurrency * rec.OutputTokensPerRequest; run.GeneratedTokens != full {
				p.Add(rp+".generated_tokens", "%d, but %d requests of %d tokens make %d", run.GeneratedTokens, rec.Concurrency, rec.OutputTokensPerRequest, full)
			}
			if bad(run.WallSeconds) || run.WallSeconds <= 0 {
				p.Add(rp+".wall_seconds", "%v is not a finite number > 0", run.WallSeconds)
			} else if !near(run.OutputTokS, float64(run.GeneratedTokens)/run.WallSeconds) {
				p.Add(rp+".output_tok_s", "%v, but generated_tokens ÷ wall_seconds is %v", run.OutputTokS, float64(run.GeneratedTokens)/run.WallSeconds)
			}
			if bad(run.GPUMemoryMiBAfter) || run.GPUMemoryMiBAfter < 0 {
				p.Add(rp+".gpu_memory_mib_after", "%v is not a finite number >= 0", run.GPUMemoryMiBAfter)
			}
			gen += run.GeneratedTokens
			wall += run.WallSeconds
			peak = max(peak, run.GPUMemoryMiBAfter)
		}
		if rec.TotalVerifiedOutputTokens != gen {
			p.Add(path+".total_verified_output_tokens", "%d, but the runs generated %d", rec.TotalVerifiedOutputTokens, gen)
		}
		if len(rec.Runs) == 0 || wall <= 0 || rec.Concurrency < 1 || rec.OutputTokensPerRequest < 1 {
			continue
		}
		agg := float64(gen) / wall
		mean := wall / float64(len(rec.Runs))
		for _, c := range []struct {
			name      string
			got, want float64
			how       string
		}{
			{"aggregate_output_tok_s", rec.AggregateOutputTokS, agg, "Σ generated_tokens ÷ Σ wall_seconds"},
			{"per_request_output_tok_s", rec.PerRequestOutputTokS, agg / float64(rec.Concurrency), "aggregate ÷ concurrency"},
			{"mean_completion_seconds", rec.MeanCompletionSeconds, mean, "the mean wall_seconds"},
			{"mean_tpot_ms", rec.MeanTPOTMs, mean / float64(rec.OutputTokensPerRequest) * 1000, "mean completion ÷ output tokens"},
			{"peak_observed_gpu_memory_mib", rec.PeakObservedGPUMemoryMiB, peak, "the runs' peak"},
		} {
			if !near(c.got, c.want) {
				p.Add(path+"."+c.name, "%v, but %s is %v", c.got, c.how, c.want)
			}
		}
	}
	return p.Err()
}

// receipt maps one validated record.
func (pub *Published) receipt(rec PublishedRecord) *Receipt {
	pt := Point{
		Workload:     publishedWorkloads[rec.Workload],
		Concurrency:  rec.Concurrency,
		OutputTokens: rec.OutputTokensPerRequest,
		Repeats:      rec.Repeats,
	}
	r := &Receipt{
		Schema: Schema,
		Source: SourcePublished,
		// A real GPU answered, not a twin.
		Target: receipts.Target{Kind: receipts.TargetLive},
		Identity: Identity{
			ServerBuild: pub.Runtime,
			GPU:         pub.GPU,
			Profile:     pub.Profile,
		},
		Point:  pt,
		Method: pub.Method,
	}
	for _, run := range rec.Runs {
		r.Runs = append(r.Runs, Run{
			GeneratedTokens:   run.GeneratedTokens,
			VerifiedTokens:    run.GeneratedTokens,
			WallSeconds:       run.WallSeconds,
			OutputTokS:        run.OutputTokS,
			GPUMemoryMiBAfter: ptr(run.GPUMemoryMiBAfter),
		})
	}
	// The record's own figures, as published (validated against the runs
	// above), not recomputed.
	r.Summary = Summary{
		Requests:                  rec.Concurrency * rec.Repeats,
		TotalVerifiedOutputTokens: rec.TotalVerifiedOutputTokens,
		AggregateOutputTokS:       rec.AggregateOutputTokS,
		PerRequestOutputTokS:      rec.PerRequestOutputTokS,
		MeanCompletionSeconds:     rec.MeanCompletionSeconds,
		MeanBatchMsPerToken:       rec.MeanTPOTMs,
		PeakGPUMemoryMiB:          ptr(rec.PeakObservedGPUMemoryMiB),
	}
	return r
}
