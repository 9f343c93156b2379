package stub

import (
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/receipts/roofline"
)

// e2bRuns caches one simulated matrix per efficiency set: the profile
// test and the holdout test read the same run.
var e2bRuns sync.Map // Efficiency -> *matrixOnce

type matrixOnce struct {
	once    sync.Once
	cells   map[[2]int]*MatrixCell
	prefill map[int]*MatrixCell
}

func simulateE2B(t testing.TB, eff Efficiency) (map[[2]int]*MatrixCell, map[int]*MatrixCell) {
	v, _ := e2bRuns.LoadOrStore(eff, &matrixOnce{})
	r := v.(*matrixOnce)
	r.once.Do(func() { r.cells, r.prefill = SimulateMatrix(e2bProfile(t, eff), E2BMatrixRun) })
	return r.cells, r.prefill
}

// TestProfileRTX3090 drives ProfileRTX3090 through the receipt's method on
// simulated time and prints every point next to the receipt: aggregate
// and per-request tok/s and mean completion time within ±15%. A 30%
// slower engine must fall outside (the comparison can fail).
func TestProfileRTX3090(t *testing.T) {
	bad := logFigures(t, "RTX 3090 token throughput", rtx3090Figures(t, ProfileRTX3090()), 0.15)
	require.Empty(t, bad, "the RTX 3090 profile no longer reproduces the receipt")
	for _, r := range loadRTX3090(t).Records {
		require.Equal(t, r.Repeats*r.Concurrency*r.OutputPerRequest, r.Verified, "the receipt's own count")
	}
	g := SimulateTokens(ProfileRTX3090(), rtx3090Run, "text", 4)
	require.Equal(t, g.WantPerRepeat*rtx3090Run.Repeats, g.VerifiedTokens, "every request made its 128 tokens")

	slow := ProfileRTX3090()
	slow.StepBase, slow.StepPerToken, slow.StepPerSeq = slow.StepBase*13/10, slow.StepPerToken*13/10, slow.StepPerSeq*13/10
	require.NotEmpty(t, logFigures(t, "30% slower steps", rtx3090Figures(t, slow)[:3], 0.15), "a 30% slower engine still passes")
}

// decodeTTFTTolerance bounds the decode cells' time to first token, where
// ±15% is out of reach: the published TTFTs are one p50 each over a few
// requests and move unevenly with concurrency (at 16K +2% from c=2 to 4,
// then +75% to c=8; at 32K c=16 below c=8), which a twin whose TTFT grows
// smoothly with the streams in flight cannot follow point by point. Every
// other figure is held to ±15%.
const decodeTTFTTolerance = 0.30

// byFigure holds decode TTFTs to ttft and everything else to ±15%.
func byFigure(ttft float64) func(figure) float64 {
	return func(f figure) float64 {
		if f.Name == "TTFT s" && strings.HasPrefix(f.Row, "Decode") {
			return ttft
		}
		return 0.15
	}
}

// TestProfileE2BH200NVL runs the gemma-4-E2B-it H200 NVL profile through
// the speed matrix method on simulated time and prints every published
// figure next to the twin's: prefill tok/s and TTFT per context, and per
// decode cell (8K–123K × 1–128) total and per-request tok/s, TTFT and time
// between tokens: each within ±15%, but decode TTFT within
// decodeTTFTTolerance. The profile is the roofline model of the E2B
// config on the H200 NVL's peaks with constants fitted to every row
// (EfficiencyE2BH200NVL); TestPhysicalHoldout shows the Hopper constants
// fitted on two rows predicting the rest.
func TestProfileE2BH200NVL(t *testing.T) {
	cells, prefill := simulateE2B(t, EfficiencyE2BH200NVL)
	figs := e2bFigures(t, cells, prefill, E2BMatrixRun.Contexts, allPrefill)
	bad := logFiguresBy(t, "gemma-4-E2B-it H200 NVL speed matrix", figs, byFigure(decodeTTFTTolerance))
	n := 0
	for _, f := range figs {
		if f.Outside(0.15) {
			n++
		}
	}
	t.Logf("%d of %d figures outside ±15%% (decode TTFTs only)", n, len(figs))
	worst, mean := errorSummary(figs)
	t.Logf("%d figures: worst %.1f%%, mean %.1f%%", len(figs), 100*worst, 100*mean)
	require.Empty(t, bad, "the E2B profile no longer reproduces the published matrix")
	dec, _ := loadE2BMatrix(t)
	for k, c := range cells {
		require.False(t, c.Queued, "%v: the published cell is %s", k, dec[k].Status)
	}
	// Positive control: ITLs 20% longer miss.
	var skewed []figure
	for _, f := range figs {
		if f.Name == "between tokens s" {
			f.Got *= 1.2
			skewed = append(skewed, f)
		}
	}
	require.NotEmpty(t, logFigures(t, "ITL +20%", skewed[:8], 0.15))
}

// TestPhysicalHoldout is issue 12's test: the Hopper constants
// (EfficiencyHopper) were fitted on the 8K and 16K rows of the E2B matrix
// only (prefill and decode) and are held fixed; the same first-principles
// profile then predicts the rows it never saw. The fitted rows must be
// within ±15% (decode TTFT within fittedTTFTTolerance: two of the 16K
// row's published TTFTs pull in opposite directions, see
// decodeTTFTTolerance); the held-out rows are printed point by point,
// honestly, and bounded loosely (holdoutBound) so that a model that stops
// extrapolating fails.
func TestPhysicalHoldout(t *testing.T) {
	cells, prefill := simulateE2B(t, EfficiencyHopper)
	fitted := e2bFigures(t, cells, prefill, fittedContexts, fittedContexts)
	bad := logFiguresBy(t, "fitted rows (8K, 16K)", fitted, byFigure(fittedTTFTTolerance))
	held := e2bFigures(t, cells, prefill, []int{32768, 65536, 126912}, []int{32768, 65536, 126912, 131008})
	tooFar := logFigures(t, "held-out rows (32K–123K, prefill 32K–128K): prediction error, not refitted", held, holdoutBound)
	worst, mean := errorSummary(held)
	t.Logf("held out: %d figures, worst %.1f%%, mean %.1f%%", len(held), 100*worst, 100*mean)
	require.Empty(t, bad, "the Hopper constants no longer fit the rows they were fitted on")
	require.Empty(t, tooFar, "the held-out prediction is worse than ±%.0f%%", 100*holdoutBound)
}

// fittedTTFTTolerance bounds the fitted rows' decode TTFT.
const fittedTTFTTolerance = 0.20

// holdoutBound bounds the held-out prediction error of TestPhysicalHoldout
// (the README's table): throughput, time between tokens and the long
// prefills extrapolate within a few percent; the published decode TTFTs'
// unevenness (one p50 over a few requests each) is what the bound is for.
const holdoutBound = 0.45

// TestHeldOutPrefill is issue 21's done-when for E2B: the held-out
// prefill rows (32K–128K, tok/s and TTFT) within ±20% on the Hopper
// constants fitted on the 8K/16K rows. Attention is most of a long
// prefill's FLOPs (two thirds at 128K), and vLLM runs Gemma 4's on Triton
// (roofline.KernelTriton) at FlashAttention-2's class of efficiency. The
// control: the same constants with attention priced at the FlashAttention
// share (what the twin did before) miss the 128K row by more than 20%.
func TestHeldOutPrefill(t *testing.T) {
	held := []int{32768, 65536, 126912, 131008}
	cells, prefill := simulateE2B(t, EfficiencyHopper)
	bad := logFigures(t, "held-out prefill rows", e2bFigures(t, cells, prefill, nil, held), 0.20)
	require.Empty(t, bad, "the held-out prefills are outside ±20%")

	flash := EfficiencyHopper
	flash.TritonAttentionShare = 0 // attention at AttentionShare
	cells, prefill = simulateE2B(t, flash)
	require.NotEmpty(t, logFigures(t, "attention at the FlashAttention share", e2bFigures(t, cells, prefill, nil, held[2:]), 0.20),
		"pricing Gemma 4's attention as FlashAttention's still predicts the long prefills: the test cannot fail")
}

// TestPhysicalKVCapacity: a physical profile's KV capacity is vLLM's
// (roofline.Shape.KVPlan): 141 GiB × 0.854015 less the weights and the
// profile run's activations, in blocks of what one token costs. E2B's 15
// KV-storing layers are 3 full-attention (512-wide heads: 2,048 bytes a
// token) and 12 sliding-window ones (256-wide: 1,024); vLLM's hybrid
// manager unifies their pages (the sliding group's blocks hold 32 tokens)
// and groups them 3 layers a group, so a token of capacity costs 3 ×
// 2,048 = 6,144 bytes, not the 18,432 of every layer. The published run's
// num_gpu_blocks, 407,248, is the same available memory over 16 ×
// 18,432 bytes: what the plan gives with every layer holding every token
// (--disable-hybrid-kv-cache-manager), within 2% (the activation estimate
// is not measured). /metrics' cache_config_info reports the plan.
func TestPhysicalKVCapacity(t *testing.T) {
	p := e2bProfile(t, EfficiencyHopper)
	shape, err := roofline.NewShape(p.Physical.Config, p.Physical.Dtypes)
	require.NoError(t, err)
	hw := p.Physical.Hardware
	require.Equal(t, 141.0*(1<<30), hw.MemoryBytes, "141 GiB, not 141e9 bytes")
	layout := roofline.KVLayout{BlockSize: 16, Utilization: 0.854015, MaxNumBatchedTokens: 8192, MaxNumSeqs: 1024}
	plan, err := shape.KVPlan(hw, layout)
	require.NoError(t, err)
	require.Equal(t, 6144.0, plan.BytesPerToken, plan.Basis)
	require.Equal(t, plan.NumBlocks, p.NumGPUBlocks)
	want := math.Floor((hw.MemoryBytes*0.854015 - shape.WeightBytes - plan.ActivationBytes) / 6144 / 16)
	require.Equal(t, int(want), p.NumGPUBlocks)
	layout.NoHybrid = true
	all, err := shape.KVPlan(hw, layout)
	require.NoError(t, err)
	require.Equal(t, 18432.0, all.BytesPerToken)
	t.Logf("E2B on H200 NVL at 0.854015: %.2f GB weights, %.2f GB activations, %.2f GB for KV; hybrid: %d blocks (%.2fM tokens); every layer: %d blocks, published 407,248 (%+.2f%%)",
		shape.WeightBytes/1e9, plan.ActivationBytes/1e9, plan.AvailableBytes/1e9, plan.NumBlocks, float64(plan.Tokens)/1e6, all.NumBlocks, 100*(float64(all.NumBlocks)/407248-1))
	require.InDelta(t, 407248, float64(all.NumBlocks), 0.02*407248, "the published num_gpu_blocks")
	// The control: the spec sheet's decimal 141e9 bytes misses it by 7%.
	dec := hw
	dec.MemoryBytes = 141e9
	gb, err := shape.KVPlan(dec, layout)
	require.NoError(t, err)
	require.Greater(t, math.Abs(float64(gb.NumBlocks)/407248-1), 0.05)
	m := newMetrics(p, p.Model, fixedTime)
	require.Equal(t, itoa(p.NumGPUBlocks), m.cache["num_gpu_blocks"])
	require.Equal(t, "16", m.cache["block_size"])
	require.Equal(t, pyFloat(0.854015), m.cache["gpu_memory_utilization"])
}

// TestProfileE2BConfigCopy: the embedded config is the roofline testdata's.
func TestProfileE2BConfigCopy(t *testing.T) {
	b, err := os.ReadFile("../receipts/roofline/testdata/gemma-4-e2b-it.json")
	require.NoError(t, err)
	require.Equal(t, string(b), string(gemma4E2BConfig))
	p, err := ProfileByName(ProfileE2BName)
	require.NoError(t, err)
	require.Equal(t, e2bProfile(t, EfficiencyE2BH200NVL).NumGPUBlocks, p.NumGPUBlocks)
}
