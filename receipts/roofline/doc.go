// Package roofline says which ceiling a decode or prefill step is against:
// memory bandwidth or compute. It reads a Hugging Face config.json into a
// model Shape (parameters, weight bytes, KV bytes per token), prices one
// step (bytes moved, FLOPs done) and divides by a GPU's peaks, spec-sheet
// or measured.
//
// What is counted, and why:
//
//   - Parameters are those of the text model: embeddings, attention,
//     dense MLPs, routed and shared experts, routers, norms, an untied
//     lm_head. A vision or audio tower is not counted (it runs on prefill
//     of an image, not on every decode step); nor are multi-token
//     prediction layers (num_nextn_predict_layers), which plain decoding
//     never runs.
//   - Weight dtypes: Dtypes.Weights prices the block linears (attention,
//     dense MLP, shared experts), Dtypes.Experts the routed experts
//     (Weights when unset). Embeddings, lm_head, norms and routers stay
//     bf16, as fp8 and MXFP4 checkpoints keep them. MXFP4 is 4 bits plus
//     one 8-bit scale per 32 values: 0.53125 byte. FP8 scales are not
//     counted (one per channel or 128×128 block: under 0.1%).
//   - A decode step at batch B reads every streamed weight once (one read
//     serves all B sequences) plus, per MoE layer, the expected distinct
//     routed experts E·(1 − (1 − k/E)^B) under uniform routing, plus the KV
//     of B sequences. The input embedding table is not streamed: a step
//     gathers B rows of it. With tied embeddings the same table is read
//     whole as the lm_head.
//   - KV bytes per token: standard attention (MHA/GQA) 2 · KV heads ·
//     head_dim · dtype bytes per layer; multi-head latent attention (MLA)
//     (kv_lora_rank + qk_rope_head_dim) · dtype bytes per layer. A
//     sliding-window layer holds at most its window: a step at context C
//     reads min(C, window) tokens of it. Shape.KVBytesPerToken sums every
//     layer; Shape.GlobalKVBytesPerToken only the full-attention layers
//     (the rate at which KV grows past the window).
//   - FLOPs: 2 per active parameter per token (matmuls), plus attention:
//     4 · heads · head_dim per context token and layer (QKᵀ and PV); for
//     MLA decode, weights absorbed as vLLM runs it, 2 · heads ·
//     (kv_lora_rank + qk_rope_head_dim) + 2 · heads · kv_lora_rank.
//     Active parameters are those a decoded token multiplies: everything
//     but the input embedding gather and the k-of-E routed experts not
//     chosen. Prefill computes the lm_head for the last token only.
//   - Gemma 4 (gemma4_text): full-attention layers have their own head
//     width (global_head_dim); the last num_kv_shared_layers layers store
//     no KV and read the cache of the last earlier layer of their type, so
//     KVBytesPerToken counts the storing layers and a decode step's KV read
//     counts every layer; the per-layer embedding table (PLE) is looked up
//     like the input embedding (PerLayerEmbeddingParams: counted in Params,
//     never streamed, not active), its projections are linears. Gemma 4's
//     mixture of experts is refused.
//   - Shape.Step prices a step of mixed work as an engine batches it
//     (decodes and prefill chunks sharing one weight read): Decode and
//     Prefill are its two pure cases. The vLLM twin's roofline profiles
//     time their steps with it (package stub).
//   - Activations, sampling and kernel launches are not priced: they are
//     the fixed per-step cost a measured run shows as residual
//     (Ceiling.Assess).
package roofline
