package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/matrix"
	"github.com/vetbench/vetbench/receipts/roofline"
	"github.com/vetbench/vetbench/receipts/tokens"
)

const rooflineUsage = `usage: vetbench roofline -config FILE -gpu NAME [flags]

Says which ceiling a decode step is against. Reads a Hugging Face
config.json (dense, MoE with routed and shared experts, MLA; a text model
nested under text_config) and prints, per batch size: the bytes a decode
step moves (weights once, the expected distinct experts
E·(1 − (1 − k/E)^B) per MoE layer, the KV of every sequence), the FLOPs it
does, the bandwidth and compute ceilings in tokens/s, which one binds, the
arithmetic intensity and the GPU's ridge point.

-gpu names a published peak (h100-sxm, h200-sxm, h200-nvl, rtx3090);
-bandwidth and -flops replace it with measured values (a measured value
always wins and the output says which was used). Without -gpu both are
needed.

The weights are priced in the dtypes the config states (an fp8
quantization_config, expert_dtype fp4 = MXFP4), else bf16; -weight-dtype
and -expert-dtype override it.

-tp N splits the model over N GPUs by tensor parallelism (vLLM's
--tensor-parallel-size): each GPU reads its shard of the sharded weights
and the replicated ones whole, its share of the KV heads (a one-head
cache, MLA's or DeepSeek-V4's, is replicated), and every layer
all-reduces its activations twice over the GPU's link (NVLink from the
table; -link-bandwidth and -allreduce-latency replace it). The table then
gives one GPU's share beside the totals.

-spec-tokens K -spec-acceptance A prices speculative decoding: K draft
tokens per step, each accepted with chance A given the ones before it,
so (1 − A^(K+1)) ÷ (1 − A) tokens per verified step; the verify step
computes K + 1 tokens per sequence (logits for each), the drafter K passes
of the config's num_nextn_predict_layers layers (-spec-draft-layers) and
the lm_head. A second table gives the ceilings with it.

-json prints the report as JSON (schema vetbench.roofline/v1, see
docs/roofline.md).

-receipt FILE reads a measured run instead — a vetbench.tokens receipt or
a directory of them, the published token-throughput JSON, a
vetbench.matrix JSON or a published speed-matrix CSV — and prints each
point as a share of its own ceiling (decode at its concurrency and mean
context, prompt + output/2; prefill rows at their prompt), with the
per-step residual in ms the ceiling does not explain. A point above its
ceiling is flagged: the run measured a cache, not the GPU. -json then
prints schema vetbench.utilisation/v1.

Exit status: 0 printed, 2 bad input (config, gpu, flags).

flags:
`

func runRoofline(_ context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("roofline", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		io.WriteString(e.stderr, rooflineUsage)
		fs.PrintDefaults()
	}
	config := fs.String("config", "", "Hugging Face config.json `file` of the model")
	gpu := fs.String("gpu", "", "GPU `name` of the table of published peaks")
	bandwidth := fs.Float64("bandwidth", 0, "measured memory bandwidth in `bytes/s` (replaces the spec value)")
	flops := fs.Float64("flops", 0, "measured dense tensor throughput in `FLOP/s` (replaces the spec value)")
	weightDtype := fs.String("weight-dtype", "", "weight `dtype` of the block linears and experts: bf16, fp16, fp8, mxfp4 (default: as the config states, else bf16)")
	expertDtype := fs.String("expert-dtype", "", "routed experts' `dtype` when it differs from -weight-dtype")
	tp := fs.Int("tp", 1, "tensor-parallel `size`: GPUs the model is split over")
	linkBandwidth := fs.Float64("link-bandwidth", 0, "measured GPU-to-GPU bandwidth in `bytes/s` per GPU, one direction (replaces the table's)")
	allReduceLatency := fs.Float64("allreduce-latency", 0, "measured latency of one small all-reduce in `seconds` (replaces the table's estimate)")
	specTokens := fs.Int("spec-tokens", 0, "speculative decoding: draft `tokens` per step (0: none)")
	specAcceptance := fs.Float64("spec-acceptance", -1, "speculative decoding: chance a draft token is accepted given the ones before it, `0..1`")
	specLayers := fs.Int("spec-draft-layers", 0, "speculative decoding: decoder `layers` one draft pass runs (0: the config's num_nextn_predict_layers, else 1)")
	kvDtype := fs.String("kv-dtype", "bf16", "KV cache `dtype`: bf16, fp16, fp8")
	batches := fs.String("batch", "1,8,64,256", "comma-separated batch `sizes`")
	contextLen := fs.Int("context", 8192, "tokens each sequence holds in its KV cache")
	asJSON := fs.Bool("json", false, "print the report as JSON (schema "+roofline.Schema+")")
	receipt := fs.String("receipt", "", "measured run `file` or directory (token receipts, matrix JSON or CSV) to read against the ceilings")
	if err := fs.Parse(args); err != nil {
		return failure(e, "roofline", wantsJSON(args), exitNoVerdict, err.Error())
	}
	fail := func(err error) int { return failure(e, "roofline", *asJSON, exitNoVerdict, err.Error()) }
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *config == "" {
		return fail(errors.New("-config: missing (a Hugging Face config.json)"))
	}
	if *bandwidth < 0 || *flops < 0 {
		return fail(errors.New("-bandwidth and -flops: want a positive rate"))
	}
	var hw roofline.Hardware
	var err error
	switch {
	case *gpu != "":
		if hw, err = roofline.LookupGPU(*gpu); err != nil {
			return fail(fmt.Errorf("-gpu: %w", err))
		}
		hw = hw.WithMeasured(*bandwidth, *flops)
	case *bandwidth > 0 && *flops > 0:
		if hw, err = roofline.Custom("measured", *bandwidth, *flops); err != nil {
			return fail(err)
		}
	default:
		return fail(errors.New("-gpu: missing (or give both -bandwidth and -flops)"))
	}
	var d roofline.Dtypes
	if *weightDtype != "" {
		if d.Weights, err = roofline.ParseWeightDtype(*weightDtype); err != nil {
			return fail(fmt.Errorf("-weight-dtype: %w", err))
		}
	}
	if *expertDtype != "" {
		if d.Experts, err = roofline.ParseWeightDtype(*expertDtype); err != nil {
			return fail(fmt.Errorf("-expert-dtype: %w", err))
		}
		if d.Weights == "" {
			return fail(errors.New("-expert-dtype: give -weight-dtype too (or neither, for the config's own)"))
		}
	}
	dep, err := deployment(*tp, *specTokens, *specAcceptance, *specLayers)
	if err != nil {
		return fail(err)
	}
	if *linkBandwidth < 0 || *allReduceLatency < 0 {
		return fail(errors.New("-link-bandwidth and -allreduce-latency: want positive values"))
	}
	hw = hw.WithLink(*linkBandwidth, *allReduceLatency)
	if d.KV, err = roofline.ParseKVDtype(*kvDtype); err != nil {
		return fail(fmt.Errorf("-kv-dtype: %w", err))
	}
	bs, err := parseBatches(*batches)
	if err != nil {
		return fail(fmt.Errorf("-batch: %w", err))
	}
	if *contextLen < 0 {
		return fail(fmt.Errorf("-context %d: want at least 0", *contextLen))
	}
	cfg, err := roofline.ReadConfig(*config)
	if err != nil {
		return fail(err)
	}
	shape, err := roofline.NewShape(cfg, d)
	if err != nil {
		return fail(err)
	}
	if *receipt != "" {
		contextSet := false
		fs.Visit(func(f *flag.Flag) { contextSet = contextSet || f.Name == "context" })
		pts, kind, err := observed(*receipt, *contextLen, contextSet)
		if err != nil {
			return fail(err)
		}
		u, err := roofline.Utilise(shape, hw, pts)
		if err != nil {
			return fail(err)
		}
		u.Config = *config
		if *asJSON {
			err = writeJSON(e.stdout, u)
		} else {
			err = writeUtilisation(e.stdout, u, *receipt, kind)
		}
		if err != nil {
			return fail(err)
		}
		return exitPass
	}
	dep.Shape, dep.GPU = shape, hw
	rep, err := roofline.AnalyseDeployment(dep, bs, *contextLen)
	if err != nil {
		return fail(err)
	}
	rep.Config = *config
	if *asJSON {
		err = writeJSON(e.stdout, rep)
	} else {
		err = rep.WriteText(e.stdout)
	}
	if err != nil {
		return fail(err)
	}
	return exitPass
}

// deployment reads the tensor-parallel and speculative decoding flags.
func deployment(tp, specTokens int, acceptance float64, layers int) (roofline.Deployment, error) {
	var d roofline.Deployment
	if tp < 1 {
		return d, fmt.Errorf("-tp %d: want at least 1", tp)
	}
	d.TP = tp
	switch {
	case specTokens < 0:
		return d, fmt.Errorf("-spec-tokens %d: want 0 (none) or more", specTokens)
	case specTokens == 0 && (acceptance >= 0 || layers != 0):
		return d, errors.New("-spec-acceptance and -spec-draft-layers need -spec-tokens")
	case specTokens == 0:
		return d, nil
	case !(acceptance >= 0 && acceptance <= 1):
		return d, errors.New("-spec-acceptance: missing or outside 0..1 (the chance a draft token is accepted)")
	case layers < 0:
		return d, fmt.Errorf("-spec-draft-layers %d: want 0 (the config's) or more", layers)
	}
	d.Spec = &roofline.Speculative{Tokens: specTokens, Acceptance: acceptance, DraftLayers: layers}
	return d, nil
}

// parseBatches reads "1,8,64" into batch sizes ≥ 1.
func parseBatches(s string) ([]int, error) {
	var bs []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want whole numbers ≥ 1, comma-separated", f)
		}
		bs = append(bs, n)
	}
	return bs, nil
}

// observed reads a measured run as points for roofline.Utilise and says
// what it read. A token point's decode context is its mean prompt plus
// half its output (what a sequence holds on average while it decodes);
// a published token point records no prompt, so -context stands for it
// when given, else 0. A matrix cell's is its context plus half of
// max_tokens when the matrix records it.
func observed(path string, ctxTokens int, contextSet bool) ([]roofline.Observed, string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, "", err
	}
	if !st.IsDir() && strings.EqualFold(filepath.Ext(path), ".csv") {
		m, err := matrix.ReadCSVFile(path)
		if err != nil {
			return nil, "", err
		}
		pts, err := matrixPoints(m)
		return pts, "speed matrix (published CSV)", err
	}
	if !st.IsDir() {
		data, err := receipts.ReadLimited(path) // regular files, under the cap
		if err != nil {
			return nil, "", err
		}
		var probe struct {
			Schema string `json:"schema"`
		}
		_ = json.Unmarshal(data, &probe)
		if probe.Schema == matrix.Schema {
			m, err := matrix.Decode(data, path)
			if err != nil {
				return nil, "", err
			}
			pts, err := matrixPoints(m)
			return pts, "speed matrix (" + matrix.Schema + ")", err
		}
	}
	recs, err := readTokenReceipts(path)
	if err != nil {
		return nil, "", err
	}
	var pts []roofline.Observed
	for _, r := range recs {
		if !(r.Summary.AggregateOutputTokS > 0) {
			continue
		}
		p := roofline.Observed{Label: fmt.Sprintf("%s c=%d", r.Point.Workload, r.Point.Concurrency), Phase: roofline.PhaseDecode,
			Batch: r.Point.Concurrency}
		sum, n := 0, 0
		for _, run := range r.Runs {
			for _, q := range run.Requests {
				sum, n = sum+q.PromptTokens, n+1
			}
		}
		prompt := 0
		switch {
		case n > 0:
			prompt = (sum + n/2) / n
		case contextSet:
			prompt = ctxTokens
			p.Notes = append(p.Notes, fmt.Sprintf("prompt length unrecorded: -context %d taken for it", ctxTokens))
		default:
			p.Notes = append(p.Notes, "prompt length unrecorded: taken as 0 (give -context)")
		}
		p.Context = prompt + r.Point.OutputTokens/2
		p.TokS = r.Summary.AggregateOutputTokS
		pts = append(pts, p)
	}
	kind := "token throughput (" + tokens.Schema + ")"
	if len(recs) > 0 && recs[0].Source == tokens.SourcePublished {
		kind = "token throughput (published format)"
	}
	if len(pts) == 0 {
		return nil, "", fmt.Errorf("%s: no measured point", path)
	}
	return pts, kind, nil
}

func matrixPoints(m *matrix.Matrix) ([]roofline.Observed, error) {
	size := func(label string, tokens int) int {
		if tokens > 0 {
			return tokens
		}
		n, _ := matrix.ContextSize(label)
		return n
	}
	var pts []roofline.Observed
	for _, r := range m.Prefill {
		if r.TokS == nil || !(*r.TokS > 0) {
			continue
		}
		ctx := size(r.Context, r.ContextTokens)
		if r.PromptTokens != nil {
			ctx = *r.PromptTokens
		}
		pts = append(pts, roofline.Observed{Label: "prefill " + r.Context, Phase: roofline.PhasePrefill, Batch: 1, Context: ctx, TokS: *r.TokS})
	}
	for _, c := range m.Cells {
		if c.TotalTokS == nil || !(*c.TotalTokS > 0) || (c.Status != matrix.Valid && c.Status != matrix.RequestsQueued) {
			continue
		}
		p := roofline.Observed{Label: fmt.Sprintf("%s c=%d", c.Context, c.Concurrency), Phase: roofline.PhaseDecode,
			Batch: c.Concurrency, Context: size(c.Context, c.ContextTokens) + m.MaxOutputTokens/2, TokS: *c.TotalTokS}
		if c.ContextTokens == 0 {
			p.Notes = append(p.Notes, "context from the row label")
		}
		if m.MaxOutputTokens == 0 {
			p.Notes = append(p.Notes, "output length unrecorded: context is the prompt alone")
		}
		if c.Status == matrix.RequestsQueued {
			p.Notes = append(p.Notes, "requests queued: fewer than C ran at once")
		}
		pts = append(pts, p)
	}
	if len(pts) == 0 {
		return nil, errors.New("the matrix has no measured point")
	}
	return pts, nil
}

// writeUtilisation prints the utilisation table: one row per point, then
// the notes and the points that beat their ceiling.
func writeUtilisation(w io.Writer, u *roofline.UtilisationReport, path, kind string) error {
	var b strings.Builder
	if u.Config != "" {
		fmt.Fprintf(&b, "config    %s\n", u.Config)
	}
	fmt.Fprintf(&b, "receipt   %s: %s, %d points\n", path, kind, len(u.Points))
	g := u.GPU
	fmt.Fprintf(&b, "gpu       %s: bandwidth %.4g TB/s (%s), compute %.4g TFLOP/s (%s)\n\n",
		g.Name, g.BandwidthBytesPerS/1e12, g.BandwidthSource, g.FLOPPerS/1e12, g.FLOPsSource)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "point\tphase\tbatch\tcontext\tmeasured tok/s\tceiling tok/s\tbound\tshare\tceiling step ms\tmeasured step ms\tresidual ms\t\n")
	for _, p := range u.Points {
		mark := ""
		if p.AboveCeiling {
			mark = "  ABOVE CEILING"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.1f\t%s\t%.1f%%\t%.3f\t%.3f\t%.3f\t%s\n", p.Label, p.Phase, p.Batch, p.Context,
			p.TokS, p.CeilingTokS, p.Bound, 100*p.Share, p.CeilingStepMS, p.MeasuredStepMS, p.ResidualMS, mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	notes := map[string][]string{}
	var order []string
	for _, p := range u.Points {
		for _, n := range p.Notes {
			if _, ok := notes[n]; !ok {
				order = append(order, n)
			}
			notes[n] = append(notes[n], p.Label)
		}
	}
	if len(order) > 0 {
		b.WriteString("\n")
	}
	for _, n := range order {
		fmt.Fprintf(&b, "note: %s (%s)\n", n, strings.Join(notes[n], ", "))
	}
	if u.AboveCeiling > 0 {
		fmt.Fprintf(&b, "\n%d point(s) beat the ceiling: the run measured a cache, not the GPU (or the peaks given are too low)\n", u.AboveCeiling)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
