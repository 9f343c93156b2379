package stub

import (
	"fmt"
	"math"
)

// vllmOptions are the serving features of vllm serve that the twin has as
// options: each follows vLLM's source (see the contract suite,
// contract_test.go, for the file each encodes).
type vllmOptions struct {
	// apiKeys are --api-key's keys; none means no authentication.
	apiKeys []string
	// offFormat is the share of requests whose greedy token is no
	// candidate (the model would answer something other than a control).
	offFormat float64
	// legacy serves as a vLLM from before PR #43463: logprob_token_ids is an
	// unknown field, ignored; prompt_tokens_details is null when no token
	// was cached (the older chat serving code).
	legacy bool
	// promptTokensDetails is --enable-prompt-tokens-details.
	promptTokensDetails bool
	// dataParallel is --data-parallel-size: engines behind one API server.
	dataParallel int
}

// LegacyVersion is what /version reports for WithLegacyServer: a release
// before logprob_token_ids (vLLM PR #43463, merged 2026-07-13).
const LegacyVersion = "0.25.1+vetbench.twin"

// WithAPIKey requires "Authorization: Bearer <key>" (one of keys) as vllm
// serve --api-key does: /v1/*, /tokenize, /detokenize and the reset
// endpoints answer 401 {"error": "Unauthorized"} without it; /health,
// /ping, /load, /version, /metrics and the docs stay public. No key (or
// only empty ones) turns authentication off.
func WithAPIKey(keys ...string) Option {
	return func(c *config) error {
		c.vllm.apiKeys = nil
		for _, k := range keys {
			if k != "" {
				c.vllm.apiKeys = append(c.vllm.apiKeys, k)
			}
		}
		return nil
	}
}

// WithOffFormat makes a share of requests (chosen by their content, so the
// same prompt always behaves the same) answer off-format: the greedy token
// is a non-candidate ("The"), so in token_ids mode the response carries N+1
// entries, the sampled token first. The candidates' relative logits, and so
// the answers, do not change.
func WithOffFormat(share float64) Option {
	return func(c *config) error {
		if !(share >= 0 && share <= 1) {
			return fmt.Errorf("off-format share %v: want a fraction in [0, 1]", share)
		}
		c.vllm.offFormat = share
		return nil
	}
}

// WithLegacyServer serves as a vLLM older than logprob_token_ids (PR
// #43463): the field is ignored like any unknown one, so a token_ids
// request gets no candidate logprobs (top_logprobs unset: an empty list),
// /version reports LegacyVersion, and prompt_tokens_details is null when no
// prompt token was cached.
func WithLegacyServer(on bool) Option {
	return func(c *config) error { c.vllm.legacy = on; return nil }
}

// WithPromptTokensDetails fills usage.prompt_tokens_details as vllm serve
// --enable-prompt-tokens-details does. The twin follows the newest chat
// serving code (_make_prompt_tokens_details): cached_tokens always, 0
// included, and multimodal_tokens; WithLegacyServer keeps the older shape
// (null when nothing was cached).
func WithPromptTokensDetails(on bool) Option {
	return func(c *config) error { c.vllm.promptTokensDetails = on; return nil }
}

// WithDataParallel runs n engines behind one API server, as vllm serve
// --data-parallel-size n: each engine has its own scheduler, KV cache,
// prefix cache and encoder cache, every /metrics series carries its engine
// label, and requests are spread as vLLM's load balancer does (see
// balancer).
func WithDataParallel(n int) Option {
	return func(c *config) error {
		if n < 1 || n > 64 {
			return fmt.Errorf("data-parallel size %d: want 1..64", n)
		}
		c.vllm.dataParallel = n
		return nil
	}
}

// offFormatDraw draws whether content answers off-format.
func offFormatDraw(key []byte, share float64) bool {
	if share <= 0 {
		return false
	}
	return newRNG(key, []byte("off-format")).float() < share
}

// makeOffFormat lifts a filler token above every candidate, so greedy
// sampling picks it: the candidates' logits relative to each other are
// unchanged, so is the softmax over them.
func (d *distribution) makeOffFormat(key []byte) {
	if len(d.cand) == 0 {
		return // no options: the answer is prose already
	}
	top := math.Inf(-1)
	for _, v := range d.cand {
		top = max(top, v)
	}
	d.others[fillerID(fillerTexts[0])] = top + newRNG(key, []byte("off-format lift")).between(0.5, 3)
}
