// Package serve is the vllmstub command as a library: vllm serve's flags
// where they mean the same thing plus the twin's own (stub.Config.BindFlags),
// parsed into a stub.Config and served with stub.Serve. cmd/vllmstub's main
// and `vetbench twin` both call Main, so the container image, which holds
// either binary, serves the same twin with the same flags. It lives under
// cmd/ because a replay reads receipts (receipts/replay), which the twin
// itself may not import.
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/vetbench/vetbench/receipts/replay"
	"github.com/vetbench/vetbench/receipts/roofline"
	"github.com/vetbench/vetbench/stub"
)

// usageText says what the command does, between its usage line and its
// flags.
const usageText = `Serves the vLLM twin (package stub) over HTTP until Ctrl-C or SIGTERM, then
shuts down gracefully: vllm serve's flags where they mean the same thing
(MODEL first, as vllm serve takes it), plus the twin's own. -model-config
and -gpu serve a first-principles profile. VLLM_SERVER_DEV_MODE=1 mounts
the cache reset endpoints. Exit status: 0 after a shutdown (vetbench twin:
130, as for any vetbench command interrupted), 2 bad flags, profile or
address.`

// runOpts are the parsed flags: the twin's own (stub.Config.BindFlags)
// and vllm serve's that build the profile.
type runOpts struct {
	twin                    stub.Config
	host, port              string
	model                   string
	profileName             string
	maxModelLen, maxNumSeqs int
	maxBatched, maxLogprobs int
	numBlocks               int
	gpuUtil                 float64
	prefix, noPrefix        bool
	limitMM, logprobsMode   string
	replay                  string
	setFlags                map[string]bool

	// Serving features (stub.Profile's Speculative, StreamInterval,
	// Reasoning).
	specConfig, reasoningParser, chatKwargs string
	streamInterval                          int

	// A first-principles profile (stub.ProfilePhysical).
	modelConfig, gpu             string
	bandwidth, flops             float64
	weightDtype, kvDtype, effFam string
}

func parse(prog string, args []string, stderr io.Writer) (runOpts, error) {
	var o runOpts
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s [MODEL] [flags]\n\n%s\n\nflags:\n", prog, usageText)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.host, "host", "0.0.0.0", "address to listen on (vllm serve --host)")
	fs.StringVar(&o.port, "port", "8000", "port to listen on (vllm serve --port)")
	fs.IntVar(&o.maxModelLen, "max-model-len", 0, "context length (default: the profile's)")
	fs.IntVar(&o.maxNumSeqs, "max-num-seqs", 0, "most sequences per engine step (default: the profile's)")
	fs.IntVar(&o.maxBatched, "max-num-batched-tokens", 0, "token budget per engine step (default: the profile's)")
	fs.IntVar(&o.maxLogprobs, "max-logprobs", -2, "most logprobs a request may ask for, -1 = no cap (default: the profile's)")
	fs.IntVar(&o.numBlocks, "num-gpu-blocks-override", 0, "KV cache capacity in blocks (default: the profile's)")
	fs.Float64Var(&o.gpuUtil, "gpu-memory-utilization", 0, "reported in vllm:cache_config_info (default: the profile's)")
	fs.BoolVar(&o.prefix, "enable-prefix-caching", false, "enable the prefix cache (the profile's default is on)")
	fs.BoolVar(&o.noPrefix, "no-enable-prefix-caching", false, "disable the prefix cache")
	fs.StringVar(&o.limitMM, "limit-mm-per-prompt", "", `most items per prompt, JSON such as {"image":2}`)
	fs.StringVar(&o.logprobsMode, "logprobs-mode", "raw_logprobs", "only raw_logprobs, which is what the twin returns")
	fs.StringVar(&o.profileName, "profile", stub.ProfileFastName, "twin profile: fast, h100-gemma4-31b, rtx3090-vlm or gemma4-e2b-h200nvl")
	fs.StringVar(&o.replay, "replay", "", "serve the answer distributions of this receipt (vetbench or typevet JSON)")
	fs.StringVar(&o.modelConfig, "model-config", "", "serve a first-principles profile of this Hugging Face config.json (with -gpu; replaces --profile)")
	fs.StringVar(&o.gpu, "gpu", "", "GPU of the first-principles profile: a name of vetbench roofline's table (h100-sxm, h200-sxm, h200-nvl, rtx3090)")
	fs.Float64Var(&o.bandwidth, "bandwidth", 0, "measured memory bandwidth, bytes/s (replaces the GPU's spec; caps what the fitted share reaches)")
	fs.Float64Var(&o.flops, "flops", 0, "measured dense FLOP/s (replaces the GPU's spec; caps what the fitted shares reach)")
	fs.StringVar(&o.weightDtype, "weight-dtype", "bf16", "weight dtype of the first-principles profile: bf16, fp16, fp8 or mxfp4")
	fs.StringVar(&o.kvDtype, "kv-dtype", "bf16", "KV cache dtype of the first-principles profile: bf16, fp16 or fp8")
	fs.StringVar(&o.effFam, "efficiency", "", "efficiency constants' GPU family (default: the GPU's; name one to borrow it, e.g. hopper)")
	fs.StringVar(&o.specConfig, "speculative-config", "", `speculative decoding, JSON such as {"method":"mtp","num_speculative_tokens":3} (the twin's own "acceptance": [p0, p1, ...] sets the drafter)`)
	fs.IntVar(&o.streamInterval, "stream-interval", 0, "send a stream's tokens N at a time after the first (vllm serve --stream-interval; default 1)")
	fs.StringVar(&o.reasoningParser, "reasoning-parser", "", "split reasoning from content: deepseek_r1, deepseek_v3 or deepseek_v4")
	fs.StringVar(&o.chatKwargs, "default-chat-template-kwargs", "", `chat template kwargs a request gets unless it sets them; the twin reads {"thinking": true} (or enable_thinking)`)
	o.twin.BindFlags(fs)
	// vllm serve takes the model first: vllm serve MODEL --flag ...
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		o.model, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return runOpts{}, err
	}
	o.setFlags = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.setFlags[f.Name] = true })
	switch rest := fs.Args(); {
	case len(rest) == 0:
	case len(rest) == 1 && o.model == "":
		o.model = rest[0]
	default:
		return runOpts{}, fmt.Errorf("one MODEL argument at most, got %q besides %q", rest, o.model)
	}
	if o.prefix && o.noPrefix {
		return runOpts{}, errors.New("--enable-prefix-caching and --no-enable-prefix-caching contradict each other")
	}
	if o.logprobsMode != "raw_logprobs" {
		return runOpts{}, fmt.Errorf("--logprobs-mode %q: the twin returns raw logprobs only", o.logprobsMode)
	}
	if (o.modelConfig == "") != (o.gpu == "") {
		return runOpts{}, errors.New("-model-config and -gpu go together")
	}
	if o.modelConfig != "" && (o.setFlags["profile"] || o.setFlags["profile-json"]) {
		return runOpts{}, errors.New("-model-config replaces --profile and --profile-json; give one")
	}
	o.twin.ReadEnv(os.Getenv)
	return o, nil
}

// profile builds the profile from --profile/--profile-json and the vllm
// serve flags that override it.
func (o runOpts) buildProfile() (stub.Profile, error) {
	if o.modelConfig != "" {
		return o.physicalProfile()
	}
	p := o.twin.Profile // --profile-json
	if !o.setFlags["profile-json"] {
		var err error
		if p, err = stub.ProfileByName(o.profileName); err != nil {
			return stub.Profile{}, fmt.Errorf("--profile: %w", err)
		}
	}
	if o.model != "" {
		p.Root = o.model
		p.Model = o.model
	}
	if o.maxModelLen != 0 {
		p.MaxModelLen = o.maxModelLen
	}
	if o.maxNumSeqs != 0 {
		p.MaxNumSeqs = o.maxNumSeqs
	}
	if o.maxBatched != 0 {
		p.MaxNumBatchedTokens = o.maxBatched
	}
	if o.maxLogprobs != -2 {
		p.MaxLogprobs = o.maxLogprobs
	}
	if o.numBlocks != 0 {
		p.NumGPUBlocks = o.numBlocks
	}
	if o.gpuUtil != 0 {
		p.GPUMemoryUtilization = o.gpuUtil
	}
	if o.prefix {
		p.EnablePrefixCaching = true
	}
	if o.noPrefix {
		p.EnablePrefixCaching = false
	}
	if o.limitMM != "" {
		var lim map[string]int
		if err := json.Unmarshal([]byte(o.limitMM), &lim); err != nil {
			return stub.Profile{}, fmt.Errorf("--limit-mm-per-prompt %s: %w", o.limitMM, err)
		}
		for k, v := range lim {
			switch k {
			case "image":
				p.LimitImages = v
			case "video", "audio":
				if v != 0 {
					return stub.Profile{}, fmt.Errorf("--limit-mm-per-prompt: the twin serves images only, got %s=%d", k, v)
				}
			default:
				return stub.Profile{}, fmt.Errorf("--limit-mm-per-prompt: unknown modality %q", k)
			}
		}
	}
	return p, p.Validate()
}

// physicalProfile builds a first-principles profile: the config's shape
// in the given dtypes, the GPU's peaks (measured ones win), its family's
// efficiency constants, and the vllm serve flags given.
func (o runOpts) physicalProfile() (stub.Profile, error) {
	cfg, err := roofline.ReadConfig(o.modelConfig)
	if err != nil {
		return stub.Profile{}, fmt.Errorf("-model-config: %w", err)
	}
	var d roofline.Dtypes
	if d.Weights, err = roofline.ParseWeightDtype(o.weightDtype); err != nil {
		return stub.Profile{}, fmt.Errorf("-weight-dtype: %w", err)
	}
	if d.KV, err = roofline.ParseKVDtype(o.kvDtype); err != nil {
		return stub.Profile{}, fmt.Errorf("-kv-dtype: %w", err)
	}
	hw, err := roofline.LookupGPU(o.gpu)
	if err != nil {
		return stub.Profile{}, fmt.Errorf("-gpu: %w", err)
	}
	hw = hw.WithMeasured(o.bandwidth, o.flops)
	fam := o.effFam
	if fam == "" {
		fam = o.gpu
	}
	eff, ok := stub.Efficiencies()[fam]
	if !ok {
		if eff, err = stub.EfficiencyFor(fam); err != nil {
			return stub.Profile{}, fmt.Errorf("-efficiency: %w", err)
		}
	}
	var lim map[string]int
	if o.limitMM != "" {
		if err := json.Unmarshal([]byte(o.limitMM), &lim); err != nil {
			return stub.Profile{}, fmt.Errorf("--limit-mm-per-prompt %s: %w", o.limitMM, err)
		}
	}
	name := o.model
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(o.modelConfig), filepath.Ext(o.modelConfig))
	}
	p, err := stub.ProfilePhysical(name, cfg, d, hw, eff, stub.ServeFlags{MaxModelLen: o.maxModelLen, MaxNumSeqs: o.maxNumSeqs,
		MaxNumBatchedTokens: o.maxBatched, GPUMemoryUtilization: o.gpuUtil, LimitImages: lim["image"], NoPrefixCaching: o.noPrefix})
	if err != nil {
		return stub.Profile{}, err
	}
	if n, ok := lim["image"]; ok {
		p.LimitImages = n // 0 too: a vision model served text-only
	}
	if o.numBlocks != 0 {
		p.NumGPUBlocks = o.numBlocks
	}
	if o.maxLogprobs != -2 {
		p.MaxLogprobs = o.maxLogprobs
	}
	return p, p.Validate()
}

// features applies the serving-feature flags to the profile.
func (o runOpts) features(p *stub.Profile) error {
	if o.specConfig != "" {
		sp, err := stub.ParseSpeculativeConfig(o.specConfig)
		if err != nil {
			return err
		}
		p.SetSpeculative(sp)
	}
	if o.streamInterval < 0 {
		return fmt.Errorf("--stream-interval %d: want 1 or more", o.streamInterval)
	}
	if o.streamInterval > 0 {
		p.StreamInterval = o.streamInterval
	}
	if o.reasoningParser != "" {
		p.Reasoning = &stub.Reasoning{Parser: o.reasoningParser}
	}
	if o.chatKwargs != "" {
		var kw map[string]any
		if err := json.Unmarshal([]byte(o.chatKwargs), &kw); err != nil {
			return fmt.Errorf("--default-chat-template-kwargs %s: %w", o.chatKwargs, err)
		}
		if p.Reasoning != nil {
			p.Reasoning.ThinkByDefault = p.Reasoning.ThinkByDefault || kw["thinking"] == true || kw["enable_thinking"] == true
		}
	}
	return p.Validate()
}

// config is the twin to serve: the twin's flags, the profile and the
// replay.
func (o runOpts) config() (stub.Config, error) {
	cfg := o.twin
	var err error
	if cfg.Profile, err = o.buildProfile(); err != nil {
		return stub.Config{}, err
	}
	if err := o.features(&cfg.Profile); err != nil {
		return stub.Config{}, err
	}
	if o.replay != "" {
		rec, err := replay.ReadFile(o.replay)
		if err != nil {
			return stub.Config{}, fmt.Errorf("--replay: %w", err)
		}
		rp, err := stub.NewReplay(rec.Source, rec.Answers)
		if err != nil {
			return stub.Config{}, fmt.Errorf("--replay %s: %w", o.replay, err)
		}
		cfg.Replay = &rp
	}
	return cfg, nil
}

// Main runs the command line args (after the program's name) of the
// program prog (its name in usage and errors: "vllmstub", "vetbench twin"):
// it serves the twin until ctx ends, then shuts down gracefully. It
// returns the exit status: 0 after a shutdown or -h, 2 for a bad flag, a
// bad profile or a port it cannot listen on (said on stderr).
func Main(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	if err := run(ctx, prog, args, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return 2
	}
	return 0
}

// run serves the twin until ctx ends, then shuts down gracefully.
func run(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) error {
	o, err := parse(prog, args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	cfg, err := o.config()
	if err != nil {
		return err
	}
	cfg.Log = stderr
	ln, err := net.Listen("tcp", net.JoinHostPort(o.host, o.port))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return stub.Serve(ctx, cfg, ln, stdout)
}
