package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/bench/roofline"
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

-json prints the report as JSON (schema vetbench.roofline/v1, see
docs/roofline.md).

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
	weightDtype := fs.String("weight-dtype", "bf16", "weight `dtype` of the block linears and experts: bf16, fp16, fp8, mxfp4")
	kvDtype := fs.String("kv-dtype", "bf16", "KV cache `dtype`: bf16, fp16, fp8")
	batches := fs.String("batch", "1,8,64,256", "comma-separated batch `sizes`")
	contextLen := fs.Int("context", 8192, "tokens each sequence holds in its KV cache")
	asJSON := fs.Bool("json", false, "print the report as JSON (schema "+roofline.Schema+")")
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
	if d.Weights, err = roofline.ParseWeightDtype(*weightDtype); err != nil {
		return fail(fmt.Errorf("-weight-dtype: %w", err))
	}
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
	rep, err := roofline.Analyse(shape, hw, bs, *contextLen)
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
