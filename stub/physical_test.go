package stub_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/grid"
	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/receipts/roofline"
	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// TestPhysicalUnderTheRoofline: a first-principles twin of a shipped dense
// config on an H100 (what vllmstub -model-config … -gpu h100-sxm serves)
// decodes at c = 1 no faster than the bandwidth ceiling vetbench roofline
// prints for the same config and GPU, and within a documented share of
// it: Llama 3.3 70B in fp8 streams 70 GB a step, so the fixed per-step
// cost is small beside it and the twin sits just under the ceiling (≥ 70%);
// Qwen3 0.6B streams 1.2 GB, so the same fixed cost dominates (overhead
// bound, ≥ 5%: a high tok/s on a small model is not the hardware used).
// The token-throughput method's own figure (output ÷ end-to-end time,
// prefill included) sits under the decode rate.
func TestPhysicalUnderTheRoofline(t *testing.T) {
	for _, tc := range []struct {
		config   string
		dtypes   roofline.Dtypes
		serve    stub.ServeFlags
		minShare float64
	}{
		{"llama-3.3-70b-instruct.json", roofline.Dtypes{Weights: roofline.FP8, KV: roofline.FP8}, stub.ServeFlags{MaxModelLen: 4096, GPUMemoryUtilization: 0.95}, 0.70},
		{"qwen3-0.6b.json", roofline.Dtypes{}, stub.ServeFlags{}, 0.05},
	} {
		t.Run(tc.config, func(t *testing.T) {
			cfg, err := roofline.ReadConfig(filepath.Join("..", "receipts", "roofline", "testdata", tc.config))
			require.NoError(t, err)
			hw, err := roofline.LookupGPU("h100-sxm")
			require.NoError(t, err)
			p, err := stub.ProfilePhysical(tc.config, cfg, tc.dtypes, hw, stub.EfficiencyHopper, tc.serve)
			require.NoError(t, err)
			shape, err := roofline.NewShape(cfg, tc.dtypes)
			require.NoError(t, err)
			synctest.Test(t, func(t *testing.T) {
				tw := streamTwin(t, stub.Config{Profile: p})
				res := tw.streamClient().Do(t.Context(), stream.Text("Write the history of mathematics.", 128), nil)
				require.NoError(t, res.Verify(128))
				itl, _ := res.TimeBetweenTokens()
				decode := 1 / itl.Seconds()
				aggregate := 128 / res.E2E().Seconds()
				cost, err := shape.Decode(1, res.PromptTokens+64)
				require.NoError(t, err)
				ceil := hw.Ceiling(cost)
				share := decode / ceil.TokS
				t.Logf("%s on %s: twin decodes %.1f tok/s (aggregate %.1f), roofline ceiling %.1f tok/s (%s bound): %.0f%% of it",
					tc.config, hw.Name, decode, aggregate, ceil.TokS, ceil.Bound, 100*share)
				require.LessOrEqual(t, decode, ceil.TokS, "the twin beats the hardware")
				require.GreaterOrEqual(t, share, tc.minShare)
				require.Less(t, aggregate, decode)
			})
		})
	}
}

// TestPhysicalTensorParallel: DeepSeek-V4-Flash on four H200 SXM as the
// published matrix served it (--tensor-parallel-size 4, fp8 KV, block
// size 256, gpu_memory_utilization 0.78331) sizes its KV per GPU (each
// GPU holds a quarter of the sharded weights and the whole replicated
// cache of compressed rows), and the twin's c = 1 decode on it (speculation priced, one token
// yielded per step until the engine yields the accepted ones) runs no
// faster than the deployment's roofline allows.
func TestPhysicalTensorParallel(t *testing.T) {
	cfg, err := roofline.ReadConfig(filepath.Join("..", "receipts", "roofline", "testdata", "deepseek-v4-flash.json"))
	require.NoError(t, err)
	hw, err := roofline.LookupGPU("h200-sxm")
	require.NoError(t, err)
	d := roofline.Dtypes{KV: roofline.FP8}
	spec := &roofline.Speculative{Tokens: 3, Acceptance: 0.7}
	p, err := stub.ProfilePhysical("deepseek-v4-flash", cfg, d, hw, stub.EfficiencyHopper,
		stub.ServeFlags{MaxModelLen: 1 << 20, GPUMemoryUtilization: 0.78331, TensorParallel: 4, BlockSize: 256, Speculative: spec})
	require.NoError(t, err)
	shape, err := roofline.NewShape(cfg, d)
	require.NoError(t, err)
	plan, err := shape.KVPlan(hw, roofline.KVLayout{BlockSize: 256, Utilization: 0.78331, TP: 4, MaxNumBatchedTokens: p.MaxNumBatchedTokens, MaxNumSeqs: p.MaxNumSeqs})
	require.NoError(t, err)
	require.InDelta(t, float64(shape.GlobalKVBytesPerToken), plan.BytesPerToken, 10, "one-head rows replicated: each GPU holds the whole compressed cache (the integer rounds per layer)")
	want := (141*(1<<30)*0.78331 - shape.WeightBytesPerGPU(4) - plan.ActivationBytes) / plan.BytesPerToken / 256
	require.InDelta(t, want, float64(p.NumGPUBlocks), 1)
	t.Logf("DeepSeek-V4-Flash TP4: %.1f GB weights per GPU, %d blocks of 256 (%.1fM tokens)", shape.WeightBytesPerGPU(4)/1e9, p.NumGPUBlocks, float64(plan.Tokens)/1e6)
	require.Equal(t, 256, p.BlockSize)

	_, err = stub.ProfilePhysical("bad", cfg, d, hw, stub.EfficiencyHopper, stub.ServeFlags{TensorParallel: 3})
	require.ErrorContains(t, err, "does not divide")

	synctest.Test(t, func(t *testing.T) {
		tw := streamTwin(t, stub.Config{Profile: p})
		res := tw.streamClient().Do(t.Context(), stream.Text("Write the history of mathematics.", 64), nil)
		require.NoError(t, res.Verify(64))
		itl, _ := res.TimeBetweenTokens()
		dep := roofline.Deployment{Shape: shape, GPU: hw, TP: 4, Spec: spec}
		c, err := dep.Decode(1, res.PromptTokens+32)
		require.NoError(t, err)
		ceil := dep.Ceiling(c)
		t.Logf("twin step %.3f ms, deployment ceiling step %.3f ms", 1e3*itl.Seconds(), 1e3*ceil.StepSeconds)
		require.GreaterOrEqual(t, itl.Seconds(), ceil.StepSeconds, "the twin beats the hardware")
	})
}

// TestPhysicalE2BCellsValid: the three cells of the E2B matrix that ran
// Valid on the GPU (64K c=128, 123K c=64 and c=128) are not skipped by
// the matrix's KV rule on the profile's capacity (vLLM's hybrid manager:
// sliding-window layers hold their window), and would be were every layer
// to hold every token (the control: the old 18,432 bytes a token).
func TestPhysicalE2BCellsValid(t *testing.T) {
	p := stub.ProfileE2BH200NVL()
	kv := p.NumGPUBlocks * p.BlockSize
	cfg := p.Physical.Config
	shape, err := roofline.NewShape(cfg, p.Physical.Dtypes)
	require.NoError(t, err)
	all, err := shape.KVPlan(p.Physical.Hardware, roofline.KVLayout{BlockSize: p.BlockSize, Utilization: p.GPUMemoryUtilization,
		NoHybrid: true, MaxNumBatchedTokens: p.MaxNumBatchedTokens, MaxNumSeqs: p.MaxNumSeqs})
	require.NoError(t, err)
	for _, cell := range [][2]int{{65536, 128}, {126912, 64}, {126912, 128}} {
		require.Empty(t, grid.SkipReason(cell[1], cell[0], 4096, kv, p.MaxModelLen), "%v on %d tokens", cell, kv)
		require.NotEmpty(t, grid.SkipReason(cell[1], cell[0], 4096, all.Tokens, p.MaxModelLen), "%v on %d tokens (every layer)", cell, all.Tokens)
	}
}

// TestDeepSeekCellsRun: every cell of the published DeepSeek-V4-Flash
// grid ran on its server (none is -1), up to 1019K × 128 streams. On the
// profile's capacity (each GPU holds every token's compressed rows) the
// matrix's rule runs them all, the streams sharing the cached prompt; the
// peer's every-stream-its-own-copy rule would skip six (the control).
func TestDeepSeekCellsRun(t *testing.T) {
	p := stub.ProfileDeepSeekV4Flash()
	kv := p.NumGPUBlocks * p.BlockSize
	skipped := 0
	for _, ctx := range []int{8192, 16384, 32768, 65536, 131072, 262144, 524288, 1<<20 - 4096 - 64} {
		for _, c := range []int{1, 2, 4, 8, 16, 32, 64, 128} {
			require.Empty(t, grid.CellSkipReason(c, ctx, 4096, kv, p.MaxModelLen, true), "%d × %d on %d tokens", ctx, c, kv)
			if grid.SkipReason(c, ctx, 4096, kv, p.MaxModelLen) != "" {
				skipped++
			}
		}
	}
	require.Equal(t, 6, skipped, "the peer's rule on this capacity")
}

// TestPhysicalServesAsVLLMDefaults: a first-principles profile takes
// vllm serve's defaults from the config and the GPU when no flag names
// them — the config's context (Qwen3-8B: 40960), 1024 sequences and 8192
// batched tokens on an H100 (256 and 2048 on a 24 GB card) — and a model
// without a vision tower refuses an image as vLLM does (At most 0, and no
// flag to raise it), where a vision model takes several.
func TestPhysicalServesAsVLLMDefaults(t *testing.T) {
	read := func(name string) *roofline.Config {
		cfg, err := roofline.ReadConfig(filepath.Join("..", "receipts", "roofline", "testdata", name))
		require.NoError(t, err)
		return cfg
	}
	h100, err := roofline.LookupGPU("h100-sxm")
	require.NoError(t, err)
	rtx, err := roofline.LookupGPU("rtx3090")
	require.NoError(t, err)
	qwen, err := stub.ProfilePhysical("Qwen/Qwen3-8B", read("qwen3-8b.json"), roofline.Dtypes{}, h100, stub.EfficiencyHopper, stub.ServeFlags{})
	require.NoError(t, err)
	require.Equal(t, [3]int{40960, 1024, 8192}, [3]int{qwen.MaxModelLen, qwen.MaxNumSeqs, qwen.MaxNumBatchedTokens})
	require.True(t, qwen.NoVision)
	small, err := stub.ProfilePhysical("Qwen/Qwen3-0.6B", read("qwen3-0.6b.json"), roofline.Dtypes{}, rtx, stub.EfficiencyHopper, stub.ServeFlags{})
	require.NoError(t, err)
	require.Equal(t, [2]int{256, 2048}, [2]int{small.MaxNumSeqs, small.MaxNumBatchedTokens})
	_, err = stub.ProfilePhysical("Qwen/Qwen3-8B", read("qwen3-8b.json"), roofline.Dtypes{}, rtx, stub.EfficiencyHopper, stub.ServeFlags{GPUMemoryUtilization: 0.8})
	require.ErrorContains(t, err, "pass --max-model-len", "16 GB of weights in 80% of a 24 GB card leave no room for 40960 tokens of 144 KiB")
	_, err = stub.ProfilePhysical("Qwen/Qwen3-8B", read("qwen3-8b.json"), roofline.Dtypes{}, rtx, stub.EfficiencyHopper, stub.ServeFlags{GPUMemoryUtilization: 0.8, MaxModelLen: 16384})
	require.NoError(t, err, "a shorter --max-model-len fits")
	gemma, err := stub.ProfilePhysical("google/gemma-4-E2B-it", read("gemma-4-e2b-it.json"), roofline.Dtypes{}, h100, stub.EfficiencyHopper, stub.ServeFlags{})
	require.NoError(t, err)
	require.False(t, gemma.NoVision)

	image := `{"model": "%s", "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "text", "text": "what is it?"},
		{"type": "image_url", "image_url": {"url": "` + twintest.PNGImage(t, 16, 16, 1).DataURL() + `"}},
		{"type": "image_url", "image_url": {"url": "` + twintest.PNGImage(t, 16, 16, 2).DataURL() + `"}}]}]}`
	synctest.Test(t, func(t *testing.T) {
		code, body := newTwin(t, stub.Config{Profile: qwen}).post(t, "/v1/chat/completions", fmt.Sprintf(image, qwen.Model))
		require.Equal(t, http.StatusBadRequest, code, body)
		require.JSONEq(t, `{"error": {"message": "At most 0 image(s) may be provided in one prompt.", "type": "BadRequestError", "param": "image", "code": 400}}`, body)
		code, body = newTwin(t, stub.Config{Profile: gemma}).post(t, "/v1/chat/completions", fmt.Sprintf(image, gemma.Model))
		require.Equal(t, http.StatusOK, code, body)
	})
}

// TestMeasuredPeaksCapTheShares: the Hopper shares were fitted on spec
// peaks, so a measured peak caps what they reach instead of discounting
// them again. An H100 measured at 90% of its spec bandwidth (above the
// 85% the fitted share reaches) decodes as its spec sheet does; one
// measured at half of it is priced at what it measured; a GPU known only
// by measured peaks (no spec to hold them against) takes the shares on
// them.
func TestMeasuredPeaksCapTheShares(t *testing.T) {
	cfg, err := roofline.ReadConfig(filepath.Join("..", "receipts", "roofline", "testdata", "qwen3-8b.json"))
	require.NoError(t, err)
	h100, err := roofline.LookupGPU("h100-sxm")
	require.NoError(t, err)
	tokS := func(hw roofline.Hardware) float64 {
		p, err := stub.ProfilePhysical("Qwen/Qwen3-8B", cfg, roofline.Dtypes{}, hw, stub.EfficiencyHopper, stub.ServeFlags{})
		require.NoError(t, err)
		return stub.SimulateTokens(p, stub.TokensRun{PromptTokens: 32, Output: 64, Repeats: 1}, "text", 1).Aggregate
	}
	spec := tokS(h100)
	bw := h100.Bandwidth.Value
	require.Greater(t, 0.9, stub.EfficiencyHopper.BandwidthShare, "the case below needs a measurement above the share's reach")
	require.Equal(t, spec, tokS(h100.WithMeasured(0.9*bw, 0)), "measured at 0.9 of the spec: the fitted share is not applied twice")
	require.Equal(t, spec, tokS(h100.WithMeasured(bw, h100.FLOPs.Value)), "measured at the spec")
	require.Less(t, tokS(h100.WithMeasured(0.5*bw, 0)), 0.75*spec, "a card measured at half its spec is priced at what it measured")
	custom, err := roofline.Custom("lab-gpu", 0.9*bw, h100.FLOPs.Value)
	require.NoError(t, err)
	custom.MemoryBytes = h100.MemoryBytes
	require.Less(t, tokS(custom), 0.97*spec, "no spec: the shares apply to the measured peaks")
}
