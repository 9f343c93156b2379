package roofline

// AttentionKernel names the attention backend vLLM runs a model with on
// an NVIDIA GPU, as far as it changes how fast attention runs.
type AttentionKernel string

const (
	// KernelFlash is FlashAttention (FA3 on Hopper) or FlashInfer: vLLM's
	// default for standard attention of head sizes up to 256.
	KernelFlash AttentionKernel = "FLASH_ATTN"
	// KernelTriton is vLLM's Triton unified attention. vLLM forces it when
	// a model's layers have different head sizes ("Gemma4 model has
	// heterogeneous head dimensions … Forcing TRITON_ATTN backend",
	// vllm/model_executor/models/config.py) or a head size FlashAttention
	// does not support (above 256: FA's supported sizes are 32…256). Its
	// prefill tiles hold 16 query rows (BLOCK_M = 16 when a KV head
	// serves 16 query heads or fewer; triton_unified_attention.py), too
	// few for Hopper's warpgroup MMA, so it runs at the efficiency of an
	// mma.sync kernel (FlashAttention-2's class), not FA3's.
	KernelTriton AttentionKernel = "TRITON_ATTN"
	// KernelMLA is the MLA kernels (FlashMLA and DeepSeek-V4's sparse
	// attention).
	KernelMLA AttentionKernel = "FLASHMLA"
)

// flashMaxHeadDim is the largest head size vLLM's FlashAttention supports.
const flashMaxHeadDim = 256

// AttentionKernel is the backend vLLM picks for the model: MLA kernels for
// MLA and compressed attention, Triton when the layers' head sizes differ
// or one is past FlashAttention's, FlashAttention otherwise.
func (s *Shape) AttentionKernel() AttentionKernel {
	c := s.Config
	if c.MLA != nil || c.Compressed != nil {
		return KernelMLA
	}
	first := -1
	for i := range c.Layers {
		d, _ := c.layerHeads(i)
		if d > flashMaxHeadDim || (first >= 0 && d != first) {
			return KernelTriton
		}
		first = d
	}
	return KernelFlash
}
