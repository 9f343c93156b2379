// Package stub is the vLLM twin: a server with vLLM's OpenAI-compatible
// API, its /metrics, caches, batching behaviour and failure modes, so that
// vetbench's detectors can be shown to fire without a GPU. It imports
// judgments, receipts/roofline (the physical profiles' step model) and the
// standard library only.
//
// # Running it
//
//	s, err := stub.New(stub.Config{Profile: stub.ProfileH100Gemma4(), TimeScale: 10})
//	rs, err := stub.Start(cfg) // New served on 127.0.0.1:0; rs.URL(), rs.Close()
//
// Config is the twin's whole configuration (its zero fields take the
// defaults named on them; New resolves and validates it once). The binary
// cmd/vllmstub takes vllm serve's flags plus the twin's own, bound to a
// Config by Config.BindFlags; Config.Args writes a Config as that command
// line and environment, and package stub/container runs it in a container
// (container.Run(ctx, container.WithConfig(cfg)), image FROM scratch,
// c.BaseURL(ctx)). Profiles: ProfileFast (the default), ProfileByName
// (fast, h100-gemma4-31b, rtx3090-vlm, gemma4-e2b-h200nvl) or a
// ProfilePhysical. Tests can KillEngine,
// ReviveEngine and read Stats.
//
// # API
//
// POST /v1/chat/completions (streaming or not; X-Request-Id is echoed and
// ends the completion id), POST /v1/completions (a prompt string or token
// ids, no chat template, max_tokens 16 by default; one engine behind both,
// the completion API's shapes: completion.go), POST /tokenize and
// /detokenize, GET /v1/models,
// /version, /health (503 while the engine is dead), /metrics (text format
// 0.0.4, vLLM's names, types, labels and bucket edges), and with dev mode
// POST /reset_prefix_cache ({"success": false} while requests hold KV
// blocks), /reset_mm_cache, /reset_encoder_cache (404 without). Errors
// are vLLM's {"error": {message, type, param, code}} with its statuses:
// malformed JSON and field validation 400 ("Bad Request"), unknown model
// 404, too many images, a prompt over max_model_len and top_logprobs over
// --max-logprobs 400 (BadRequestError). Both scoring modes of
// judgments.Client work: logprob_token_ids with return_tokens_as_token_ids
// returns exactly the asked ids, in order, as "token_id:N"; top_logprobs k
// returns the k most probable tokens (every candidate ranks above the
// filler tokens, so both modes agree). Logprobs are floored at -9999.
//
// Not modelled: n > 1 and structured outputs (400 with a message saying
// so); image URLs other than data: URLs; sampling with temperature (the
// twin is always greedy; its logprobs are raw).
//
// # Decoding and streaming
//
// Every running request gains one token per engine step. The first token
// comes from the answer model (below); later ones are words of a fixed
// vocabulary drawn by a hash of the content and the position, so the same
// prompt writes the same text, streamed or not. Without ignore_eos the
// output ends with EOS (counted in usage, writing no text) at a natural
// length between 32 and 511 tokens set by the content; min_tokens holds
// EOS back; max_tokens / max_completion_tokens (the latter wins) and
// max_model_len end it on "length" (vLLM's check_stop order). A prompt
// plus max_tokens over max_model_len, min_tokens above max_tokens or
// below 0 are vLLM's 400s.
//
// stream: true answers as vLLM's chat_completion_stream_generator does
// (text/event-stream; charset=utf-8, headers as soon as the engine holds
// the request): at the first token a role chunk (delta {"role":
// "assistant", "content": ""}) and the token's chunk, then one chunk per
// token, finish_reason on the last; with stream_options.include_usage a
// usage-only chunk whose choices is [] and, with continuous_usage_stats
// too, the running usage on every chunk; then "data: [DONE]". A request
// that fails after the stream started (the engine died, a generation
// error) gets {"error": {message, type, param, code}} as its last chunk
// before [DONE]; a client that goes away aborts it (finished_reason
// "abort"). Chunks leave at their step's model time, so on fake time
// (twintest.StreamTransport) a client measures the model's TTFT and time
// between tokens exactly.
//
// # Profiles
//
// A profile is the server's shape and a step-time model. ProfileFast is
// for tests. ProfileH100Gemma4 (judgments: max_tokens 1) keeps its
// formula fitted to typevet's H100 receipts. ProfileRTX3090 is the same
// formula fitted to the RTX 3090 token-throughput receipt, whose model is
// unnamed. A physical profile (ProfilePhysical, vllmstub -model-config
// FILE -gpu NAME) times each step from first principles instead: the
// model config's bytes and FLOPs for the step's decodes and prefill
// chunks (receipts/roofline's Shape.Step) over the GPU's peaks at the GPU
// family's achieved shares, plus a fixed per-step, per-sequence and
// per-image cost, and takes its KV capacity from the GPU's memory ×
// gpu_memory_utilization less the weights. The shares and costs are an
// Efficiency, fitted per GPU family: EfficiencyHopper on two rows of the
// gemma-4-E2B H200 NVL matrix, which then predicts the others (see the
// README's table); ProfileE2BH200NVL is that model with constants fitted
// to every row. Host-side constants (the frontend's per-prompt-token cost,
// a pipelined ingest latency that grows with the streams in flight) are
// part of an Efficiency too: the published time to first token needs
// them.
//
// # Tokens
//
// A deterministic stand-in for Gemma's tokenizer: "0".."9" and "A".."Z"
// are single tokens with fixed ids (236800+, 236810+), "10" is two, a word
// is one token per started 8 letters, other symbols one each. The chat
// template adds turn markers and, without thinking, an empty thought
// channel; an image becomes its markers plus rows×cols placeholders, the
// largest grid with its aspect ratio inside 280 (a square 256, a 1000×440
// check 275). typevet's prompts come out at its receipts' sizes: ~478
// tokens per checks request, ~661 per faces request, ~680 per signatures
// request.
//
// # Engine
//
// Continuous batching over model time: at each step boundary the engine
// adds the requests that reached it, schedules running requests first and
// then waiting ones FCFS within MaxNumSeqs and MaxNumBatchedTokens
// (chunked prefill: prefill chunks and decode tokens share
// MaxNumBatchedTokens), stops admitting at the first request the KV cache
// cannot hold (the rest wait: num_requests_waiting), and preempts the
// newest running request when a running one cannot grow. The KV cache is
// NumGPUBlocks blocks of 16 tokens with an LRU free queue; full blocks are
// cached under chain hashes that cover image digests, so prefix hits are
// per item and are evicted when the cache turns over; identical prompts
// share their blocks. A step costs StepBase +
// StepPerToken·tokens^StepTokenExponent + StepPerSeq·seqs +
// StepPerImage·images encoded (an encoder cache spares repeats) +
// StepPerKVToken·cached tokens the step's sequences attend to, or what
// the profile's physical model says. In front of the engine, each request
// pays a network round trip, a single FIFO frontend (per request, per
// prompt token, per image by multimodal-cache hit or miss, per request in
// flight) and a pipelined ingest latency. A request with max_tokens 1
// finishes when its prefill does. /metrics is fed as vLLM's stat loggers
// feed it: prefix_cache_queries/hits in tokens at first scheduling,
// prompt_tokens as whole prompts at the first token, generation_tokens
// and one inter_token_latency observation per output step,
// time_to_first_token at the first token, mm_cache in items at the
// frontend, every per-request histogram at finish
// (request_max_num_generation_tokens from the tokens generated),
// iteration_tokens per step, gauges per step.
//
// # Time scale
//
// Config.TimeScale s runs the twin s times faster than real time: a model
// duration d sleeps d/s. /metrics records model seconds, so a scrape reads
// like the profiled server's; a client's wall-clock latencies must be
// multiplied by s and its rates divided by s. The engine's clock is the
// one place the scale is applied (wall to model and back). Timers fire late by up to a
// scheduler tick; the clock learns the lateness and wakes early by it, and
// Config.TransportAllowance takes the real transport's own latency out of the
// modelled round trip, which would otherwise count s times.
//
// The twin keeps time through package time only, so inside a
// testing/synctest bubble, served over an in-memory transport, it runs on
// fake time: model time advances by modelled durations alone, whatever
// else the machine is doing. That is how the tests check its timing (the
// calibration against typevet's H100 receipts included); the same check
// over real HTTP is a benchmark (make calibrate).
//
// # Answers
//
// The answer model gives deterministic logits per request content (a hash
// of the user text and the image digests) over the options counted in the
// prompt's "Options:" block, plus filler tokens holding the rest of the
// mass: by default 85% of answers confident, 5% near-tied (runner-up within
// 5e-5..8e-4 logits), the rest moderate. Batch noise adds up to
// ±DefaultBatchNoise (8e-4) to each candidate logit as a function of the
// content and the number of sequences in the step that finished the
// prefill, so near-tied verdicts can move under load and confident ones
// cannot; a request alone (c=1) gets none, and a Noul's P(true) moves by at
// most the bound. Replay (NewReplay, from recorded answers by item id, such
// as receipts/replay reads from a vetbench or typevet receipt) serves the
// recorded probabilities by the item and question of X-Request-Id, as
// logprobs log(p), so a client's softmax gets them back exactly; a
// value-only Score (typevet publishes the expected and most probable level)
// is served as a two-level stand-in with exactly those; answers recorded
// without probabilities fall back to the model and are counted. Config.Adjust
// edits one request's candidate logits: a positive control for a flipped
// verdict or a drifted Noul.
//
// # Faults
//
// Config.Faults / --fault KIND[:key=value,...]: http500, http429
// (retry-after=SECONDS), http400, engine-dead, slow (delay=DURATION, wall
// time), reset, truncate (a stream is cut halfway), no-logprobs,
// missing-candidate, nan (non-streaming answers), loop (the generated
// text repeats a short cycle), stream-error (a generation error halfway
// through the output: an error chunk in a stream, a 500 otherwise);
// conditions
// every=N, after=N, match=SUBSTRING (of X-Request-Id), rate=P with
// seed=N, limit=N (see ParseFault). Config.Slowdown f makes every engine step
// f times longer, so a speed gate can be shown to fire.
package stub
