// Command vllmstub serves the vLLM twin (package stub) with vllm serve's
// flags where they mean the same thing, plus the twin's own:
//
//	vllmstub [MODEL] [--host H] [--port P] [--served-model-name NAME]
//	    [--max-model-len N] [--max-num-seqs N] [--max-num-batched-tokens N]
//	    [--enable-prefix-caching | --no-enable-prefix-caching]
//	    [--limit-mm-per-prompt '{"image":2}'] [--max-logprobs N]
//	    [--num-gpu-blocks-override N] [--gpu-memory-utilization F]
//	    [--logprobs-mode raw_logprobs]
//	    [--profile fast|h100-gemma4-31b|rtx3090-vlm|gemma4-e2b-h200nvl] [--profile-json JSON]
//	    [--time-scale S] [--slowdown F] [--batch-noise A]
//	    [--answer-spread CONFIDENT,NEARTIE] [--fault SPEC]... [--replay FILE]
//	    [--transport-allowance D]
//	    [-model-config FILE -gpu NAME [-bandwidth B/s] [-flops FLOP/s]
//	     [-weight-dtype bf16|fp8|mxfp4] [-kv-dtype bf16|fp8] [-efficiency FAMILY]]
//
// -model-config and -gpu serve a first-principles profile
// (stub.ProfilePhysical): step times from the config's roofline on the
// GPU's peaks with the GPU family's fitted efficiency constants, KV
// capacity from the GPU's memory × --gpu-memory-utilization minus the
// weights; the vllm serve flags above still apply. The constants were
// fitted on spec peaks, so -bandwidth and -flops cap what they reach
// (min(share × spec, measured)) rather than discounting them twice.
//
// VLLM_SERVER_DEV_MODE=1 mounts the cache reset endpoints. SIGINT and
// SIGTERM shut it down gracefully. `vetbench twin` is the same command
// (package cmd/vllmstub/serve); either binary, built static, is the
// container image's entrypoint (package stub/container).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/vetbench/vetbench/cmd/vllmstub/serve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := serve.Main(ctx, "vllmstub", os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
