package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/vetbench/vetbench/receipts/roofline"
	"github.com/vetbench/vetbench/receipts/utilisation"
)

// runRoofline is vetbench roofline: roofline.Request from the flags, its
// report (or, with -receipt, a measured run against its ceilings) printed.
func runRoofline(_ context.Context, e *env, args []string) int {
	fs := e.flagSet("roofline")
	r, receipt, asJSON := rooflineFlags(fs)
	if err := fs.Parse(args); err != nil {
		return failure(e, "roofline", wantsJSON(args), exitNoVerdict, err.Error())
	}
	fail := func(err error) int { return failure(e, "roofline", *asJSON, exitNoVerdict, err.Error()) }
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	plan, err := r.Resolve()
	if err != nil {
		return fail(err)
	}
	if *receipt == "" {
		rep, err := plan.Analyse()
		if err == nil {
			err = printReport(e, *asJSON, rep, rep.WriteText)
		}
		if err != nil {
			return fail(err)
		}
		return exitPass
	}
	run, err := utilisation.Read(*receipt, r.Context, isSet(fs, "context"))
	if err != nil {
		return fail(err)
	}
	u, err := plan.Utilise(run.Points)
	if err == nil {
		err = printReport(e, *asJSON, u, func(w io.Writer) error { return u.WriteText(w, *receipt+": "+run.Kind) })
	}
	if err != nil {
		return fail(err)
	}
	return exitPass
}

// rooflineFlags defines roofline's flags on fs.
func rooflineFlags(fs *flag.FlagSet) (r *roofline.Request, receipt *string, asJSON *bool) {
	r = &roofline.Request{}
	fs.StringVar(&r.Config, "config", "", "Hugging Face config.json `file` of the model")
	fs.StringVar(&r.GPU, "gpu", "", "GPU `name` of the table of published peaks")
	fs.Float64Var(&r.Bandwidth, "bandwidth", 0, "measured memory bandwidth in `bytes/s` (replaces the spec value)")
	fs.Float64Var(&r.FLOPs, "flops", 0, "measured dense tensor throughput in `FLOP/s` (replaces the spec value)")
	fs.StringVar(&r.WeightDtype, "weight-dtype", "", "weight `dtype` of the block linears and experts: bf16, fp16, fp8, mxfp4 (default: as the config states, else bf16)")
	fs.StringVar(&r.ExpertDtype, "expert-dtype", "", "routed experts' `dtype` when it differs from -weight-dtype")
	fs.IntVar(&r.TP, "tp", 1, "tensor-parallel `size`: GPUs the model is split over")
	fs.Float64Var(&r.LinkBandwidth, "link-bandwidth", 0, "measured GPU-to-GPU bandwidth in `bytes/s` per GPU, one direction (replaces the table's)")
	fs.Float64Var(&r.AllReduceLatency, "allreduce-latency", 0, "measured latency of one small all-reduce in `seconds` (replaces the table's estimate)")
	fs.IntVar(&r.SpecTokens, "spec-tokens", 0, "speculative decoding: draft `tokens` per step (0: none)")
	fs.Float64Var(&r.SpecAcceptance, "spec-acceptance", -1, "speculative decoding: chance a draft token is accepted given the ones before it, `0..1`")
	fs.IntVar(&r.SpecDraftLayers, "spec-draft-layers", 0, "speculative decoding: decoder `layers` one draft pass runs (0: the config's num_nextn_predict_layers, else 1)")
	fs.StringVar(&r.KVDtype, "kv-dtype", "bf16", "KV cache `dtype`: bf16, fp16, fp8")
	fs.StringVar(&r.Batches, "batch", "1,8,64,256", "comma-separated batch `sizes`")
	fs.IntVar(&r.Context, "context", 8192, "tokens each sequence holds in its KV cache")
	asJSON = fs.Bool("json", false, "print the report as JSON (schema "+roofline.Schema+")")
	receipt = fs.String("receipt", "", "measured run `file` or directory (token receipts, matrix JSON or CSV) to read against the ceilings")
	return r, receipt, asJSON
}
