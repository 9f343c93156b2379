package stub

import (
	_ "embed" // the DeepSeek-V4-Flash model config

	"github.com/vetbench/vetbench/receipts/roofline"
)

// ProfileDeepSeekName is the published speed matrix's DeepSeek-V4-Flash
// on four H200 SXM.
const ProfileDeepSeekName = "deepseek-v4-flash-4xh200"

// deepseekV4FlashConfig is deepseek-ai/DeepSeek-V4-Flash's config.json
// (models/, a copy of receipts/roofline's testdata; its README says where
// the text comes from).
//
//go:embed models/deepseek-v4-flash.json
var deepseekV4FlashConfig []byte

// DeepSeekVLLMVersion is the published matrix's server build.
const DeepSeekVLLMVersion = "0.28.1rc1.dev317+g1356635d8"

// DeepSeekGEMMShare and DeepSeekAcceptance are the profile's two fitted
// constants, each on one published cell (TestDeepSeekFit refits them):
// the share of the H200's bf16 peak the deployment's weight GEMMs achieve
// (MXFP4 experts dequantized to bf16 on Hopper, fp8 128×128 block-scaled
// linears on TP=4's quarter shards), fitted on the 8K prefill row's TTFT;
// and the drafter's acceptance, flat over its 3 positions, fitted on the
// 8K c=1 cell's time between tokens given the step the model prices.
// Every other cell of the matrix is a prediction.
const (
	DeepSeekGEMMShare  = 0.2135
	DeepSeekAcceptance = 0.6788
)

// DeepSeekLooping is the loop model of the DeepSeek profile: 0.4% of
// prompts loop at 8K tokens alone in their batch, the chance growing with
// the square root of the context and of the batch's power-of-two bucket
// (about 29% at 1M tokens in a batch of 128); cycles of 24–160 tokens from
// an onset 64–1024 tokens in. The shape (square roots of context and
// batch) is an assumption after what the published matrix shows (loops
// mostly at long context × high concurrency, a few anywhere). Base is the
// one number tuned on it: 0.01 gave 21 Looped cells of the published grid
// against the published 10, so it was lowered to 0.004 (TestDeepSeekPublishedGrid
// prints the count): the number of Looped cells is fitted, not
// predicted; which cells loop is the model's seeded draw.
var DeepSeekLooping = Looping{Base: 0.004, BaseContext: 8192, ContextExponent: 0.5, BatchExponent: 0.5,
	MinPeriod: 24, MaxPeriod: 160, MinOnset: 64, MaxOnset: 1024}

// ProfileDeepSeekV4Flash is deepseek-ai/DeepSeek-V4-Flash-Vision-Exp
// (fp8 block linears, MXFP4 routed experts) on four H200 SXM 141 GB as the
// published matrix served it: vllm serve --tensor-parallel-size 4
// --reasoning-parser deepseek_v4 --max-model-len 1048576 --kv-cache-dtype
// fp8 --block-size 256 --gpu-memory-utilization 0.783310
// --speculative-config '{"method":"dspark","num_speculative_tokens":3}'
// (vLLM 0.28.1rc1; its --api-key is the caller's: WithAPIKey). Every step
// is timed by the roofline model of its config on the H200 SXM's peaks
// split over four GPUs (per-GPU shards, all-reduces over NVLink, the
// drafter's passes) at EfficiencyHopper's constants, which were fitted on
// another model (gemma-4-E2B) on another Hopper (H200 NVL); the KV
// capacity is what 4 × 141 GB × 0.78 leaves after the weights. Nothing in
// it is fitted to the DeepSeek matrix. Assumptions, not measurements: the
// drafter's acceptance (DefaultAcceptance at each of the 3 positions),
// reasoning on by default (the published outputs were reasoning text),
// and the loop model (DeepSeekLooping).
func ProfileDeepSeekV4Flash() Profile {
	cfg, err := roofline.ParseConfig(deepseekV4FlashConfig)
	if err != nil {
		panic("stub: embedded DeepSeek-V4-Flash config: " + err.Error())
	}
	hw, err := roofline.LookupGPU("h200-sxm")
	if err != nil {
		panic("stub: " + err.Error())
	}
	const k = 3
	p, err := ProfilePhysical("deepseek-ai/DeepSeek-V4-Flash-Vision-Exp", cfg, roofline.Dtypes{KV: roofline.FP8}, hw, EfficiencyHopper,
		ServeFlags{MaxModelLen: 1048576, GPUMemoryUtilization: 0.783310, MaxNumBatchedTokens: 8192, MaxNumSeqs: 1024, BlockSize: 256,
			TensorParallel: 4, Speculative: &roofline.Speculative{Tokens: k, Acceptance: DeepSeekAcceptance}})
	if err != nil {
		panic("stub: " + err.Error())
	}
	p.Name = ProfileDeepSeekName
	p.NoVision = false // the served checkpoint is the Vision-Exp one; the config held is its text model's
	p.Physical.GEMMShare = DeepSeekGEMMShare
	a := DeepSeekAcceptance
	p.SetSpeculative(Speculative{Method: "dspark", NumSpeculativeTokens: k, Acceptance: []float64{a, a, a}})
	p.Reasoning = &Reasoning{Parser: "deepseek_v4", ThinkByDefault: true}
	loop := DeepSeekLooping
	p.Looping = &loop
	p.VLLMVersion = DeepSeekVLLMVersion
	if err := p.Validate(); err != nil {
		panic("stub: " + err.Error())
	}
	return p
}
