package stub

import (
	"strconv"
	"time"

	"github.com/vetbench/vetbench/judgments"
)

// chatResponse is a chat completion before it is put on the wire, so that
// faults can spoil it.
type chatResponse struct {
	rid          string // the request id the answer's id is made of
	id           string
	created      int64
	model        string
	content      string
	logprobs     []contentLogprob // nil: "logprobs": null
	candidates   []int            // indexes into logprobs[0].TopLogprobs that are candidates
	promptTokens int
	generated    int
	finishReason string
	// promptDetails is usage.prompt_tokens_details; nil is null.
	promptDetails map[string]any
	// thinking says the request reasoned: message.reasoning is reasoning
	// and message.content is body (nil: null), spelled by version
	// (reasoning.go).
	thinking        bool
	reasoning, body *string
	version         string
}

// answer builds the completion of a finished request: the answer
// distribution (distribution), greedy sampling and vLLM's logprobs shape.
func (s *Server) answer(rid string, req *chatRequest, topK int, r *request) *chatResponse {
	p := r.prompt
	n := countOptions(p.Text)
	key := contentKey(p)
	dist := s.distribution(rid, key, n, r.batchSeqs)
	resp := &chatResponse{
		rid: rid, id: "chatcmpl-" + rid, created: time.Now().Unix(), model: s.cfg.Model,
		promptTokens: len(p.Tokens), generated: r.generated, finishReason: r.finishReason,
		promptDetails: s.promptDetails(r),
	}
	pl := positionLogprobs{req: req, topK: topK, key: key, options: n, maxLogprobs: s.cfg.Profile.MaxLogprobs}
	for pos := range r.generated {
		var lps map[int]float64
		if pos == 0 {
			lps = dist.logprobs()
		} else {
			// Later positions: the generation's words, EOS at the end of
			// an output that stopped (text.go).
			lps = r.gen.logprobs(pos)
		}
		if !req.logprobs() {
			resp.content += tokenText(greedy(lps).id)
			continue
		}
		order := rank(lps)
		resp.content += tokenText(order[0].id)
		cl, cands := pl.entry(pos, lps, order)
		resp.candidates = append(resp.candidates, cands...)
		resp.logprobs = append(resp.logprobs, cl)
	}
	if reasoningEnd(r) > 0 && r.generated > 0 {
		resp.thinking, resp.version = true, s.servedVersion()
		resp.reasoning, resp.body = messageReasoning(r, tokenText(greedy(dist.logprobs()).id))
	}
	return resp
}

// distribution is the first token's distribution for a request: the
// replayed one when the receipt has it, else the answer model's plus
// batch noise (and off-format); then the adjust hook.
func (s *Server) distribution(rid string, key []byte, n, batchSeqs int) distribution {
	dist, outcome := s.cfg.Replay.lookup(rid, n)
	s.mu.Lock()
	switch outcome {
	case replayServed:
		s.stats.ReplayServed++
	case replayMissing:
		s.stats.ReplayMissing++
	case replayMismatch:
		s.stats.ReplayMismatch++
	}
	s.mu.Unlock()
	if outcome != replayServed {
		dist = modelDistribution(key, n, s.cfg.Spread)
		dist.addNoise(key, batchSeqs, s.cfg.BatchNoise)
		if offFormatDraw(key, s.cfg.OffFormat) {
			dist.makeOffFormat(key)
		}
	}
	if s.cfg.Adjust != nil {
		if item, question, ok := judgments.ParseRequestID(rid); ok {
			logits := make(map[int]float64, n)
			for i, v := range dist.cand {
				logits[controlID(i)] = v
			}
			s.cfg.Adjust(item, question, logits)
			for i := range dist.cand {
				dist.cand[i] = logits[controlID(i)]
			}
		}
	}
	return dist
}

// positionLogprobs builds the logprobs entry of one output position as
// the request asked for it.
type positionLogprobs struct {
	req         *chatRequest
	topK        int
	key         []byte
	options     int // the question's options: candidate ids are their controls
	maxLogprobs int
}

// entry is position pos's logprobs entry (order ranks lps, the sampled
// token first) and, at position 0, the indexes of its candidates.
func (pl positionLogprobs) entry(pos int, lps map[int]float64, order []ranked) (contentLogprob, []int) {
	asIDs := pl.req.ReturnAsTokenIDs != nil && *pl.req.ReturnAsTokenIDs
	spell := func(id int) string {
		if asIDs {
			return "token_id:" + strconv.Itoa(id)
		}
		return tokenText(id)
	}
	sampled := order[0]
	cl := contentLogprob{logprobEntry: entry(spell(sampled.id), sampled.lp), TopLogprobs: []logprobEntry{}}
	var cands []int
	add := func(id int, lp float64) {
		if pos == 0 && isCandidate(id, pl.options) {
			cands = append(cands, len(cl.TopLogprobs))
		}
		cl.TopLogprobs = append(cl.TopLogprobs, entry(spell(id), lp))
	}
	switch {
	case len(pl.req.LogprobTokenIDs) > 0:
		// vLLM's per-position dict: the sampled token first, then the
		// requested ids, de-duplicated (vllm/v1/engine/logprobs.py), all
		// of it returned (_get_top_logprobs(..., return_all=True),
		// chat_completion/serving.py): N+1 entries when the greedy token
		// is not requested.
		seen := map[int]bool{}
		for _, id := range append([]int{sampled.id}, pl.req.LogprobTokenIDs...) {
			if seen[id] {
				continue
			}
			seen[id] = true
			lp, ok := lps[id]
			if !ok {
				lp = background(pl.key, id)
			}
			add(id, lp)
		}
	case pl.topK != 0:
		k := pl.topK
		if k < 0 || k > len(order) {
			k = len(order)
		}
		if pl.maxLogprobs >= 0 {
			k = min(k, pl.maxLogprobs)
		}
		for _, t := range order[:k] {
			add(t.id, t.lp)
		}
	}
	return cl, cands
}

func isCandidate(id, n int) bool {
	for i := range n {
		if controlID(i) == id {
			return true
		}
	}
	return false
}

// spoil applies an answer-spoiling fault.
func (f *faultState) spoil(resp *chatResponse) {
	switch f.Kind {
	case FaultNoLogprobs:
		resp.logprobs = nil
	case FaultMissingCandidate, FaultNaN:
		if len(resp.logprobs) == 0 || len(resp.candidates) == 0 {
			return
		}
		top := resp.logprobs[0].TopLogprobs
		i := resp.candidates[0]
		if f.Kind == FaultNaN {
			top[i].Logprob = nil
			return
		}
		resp.logprobs[0].TopLogprobs = append(top[:i:i], top[i+1:]...)
	}
}

// wire is the completion in vLLM's JSON shape.
func (resp *chatResponse) wire() map[string]any {
	var logprobs any
	if resp.logprobs != nil {
		logprobs = map[string]any{"content": resp.logprobs}
	}
	message := map[string]any{
		"role": "assistant", "content": resp.content, "refusal": nil, "annotations": nil,
		"audio": nil, "function_call": nil, "tool_calls": []any{}, "reasoning": nil,
	}
	if resp.thinking {
		resp.spellReasoning(message)
	}
	return map[string]any{
		"id": resp.id, "object": "chat.completion", "created": resp.created, "model": resp.model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       message,
			"logprobs":      logprobs,
			"finish_reason": resp.finishReason,
			"stop_reason":   nil,
			"token_ids":     nil,
		}},
		"service_tier":       nil,
		"system_fingerprint": nil,
		"usage": map[string]any{
			"prompt_tokens": resp.promptTokens, "total_tokens": resp.promptTokens + resp.generated,
			"completion_tokens": resp.generated, "prompt_tokens_details": promptDetails(resp.promptDetails),
		},
		"prompt_logprobs":    nil,
		"prompt_token_ids":   nil,
		"kv_transfer_params": nil,
	}
}

// promptDetails is usage.prompt_tokens_details as chat serving builds it:
// null unless --enable-prompt-tokens-details; then, in the newest code
// (_make_prompt_tokens_details, chat_completion/serving.py), cached_tokens
// (0 included: the engine always reports num_cached_tokens) and
// multimodal_tokens (placeholder tokens per modality, already counted in
// prompt_tokens; null for a text prompt). A legacy server sends null when
// nothing was cached, as the older code did.
func (s *Server) promptDetails(r *request) map[string]any {
	if !s.cfg.PromptTokensDetails {
		return nil
	}
	if s.cfg.Legacy {
		if r.numCached == 0 {
			return nil
		}
		return map[string]any{"cached_tokens": r.numCached}
	}
	var mm any
	if len(r.prompt.Images) > 0 {
		n := 0
		for _, im := range r.prompt.Images {
			n += im.Length
		}
		mm = map[string]int{"image": n}
	}
	return map[string]any{"cached_tokens": r.numCached, "multimodal_tokens": mm}
}

// promptDetails turns a nil map into JSON null.
func promptDetails(d map[string]any) any {
	if d == nil {
		return nil
	}
	return d
}
