package stub

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// POST /v1/completions, as vLLM's completion serving answers it
// (vllm/entrypoints/openai/completion): the prompt is a string, tokenized
// with <bos> in front unless add_special_tokens is false, or token ids
// taken as they are; no chat template, so no reasoning split. It is what
// `vllm bench serve` posts to by default (--backend openai). The request
// becomes a chat call with the same sampling, so the engine, faults and
// timing are the chat endpoint's; only the request and answer shapes
// differ: "text" instead of a message or delta, no role chunk, and the
// legacy logprobs shape (text_offset, token_logprobs, tokens,
// top_logprobs). One prompt per request, n = 1, no prompt logprobs: the
// rest is refused with a 400 that says so.

// completionRequest is the part of vLLM's CompletionRequest the twin
// reads; unknown fields are accepted and ignored, as vLLM's extra="allow"
// does.
type completionRequest struct {
	generateFields
	Prompt           json.RawMessage `json:"prompt"`
	Logprobs         json.RawMessage `json:"logprobs"`
	PromptLogprobs   json.RawMessage `json:"prompt_logprobs"`
	Echo             *bool           `json:"echo"`
	AddSpecialTokens *bool           `json:"add_special_tokens"`
	UseBeamSearch    *bool           `json:"use_beam_search"`
}

// defaultCompletionTokens is CompletionRequest's max_tokens when the
// request names none (or null): 16, OpenAI's default, not what is left of
// max_model_len as in chat.
const defaultCompletionTokens = 16

// completion serves POST /v1/completions.
func (s *Server) completion(w http.ResponseWriter, hr *http.Request) {
	s.serveGeneration(w, hr, &chatCall{completion: true}, s.parseCompletion)
}

// parseCompletion decodes and validates a completion request as vLLM's
// serving layer does, and tokenizes its prompt.
func (s *Server) parseCompletion(body []byte, c *chatCall) *apiError {
	var req completionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return jsonDecodeError(err)
	}
	if s.cfg.Legacy {
		req.LogprobTokenIDs = nil // before PR #43463: an unknown field, ignored
	}
	topK, e := req.validate()
	if e != nil {
		return e
	}
	c.req, c.topK = req.chatRequest(topK), topK
	if e := c.req.checkServed(); e != nil {
		return e
	}
	if e := s.checkModel(req.Model); e != nil {
		return e
	}
	var ids bool
	if c.p, ids, e = req.prompt(); e != nil {
		return e
	}
	// Lengths first, as vLLM's renderer checks them before its input
	// processor reads the ids: a prompt past max_model_len is refused
	// before its millions of ids are spelled.
	if e := s.checkLimits(c); e != nil {
		return e
	}
	if ids {
		if c.p.Text, e = spellIDs(c.p.Tokens); e != nil {
			return e
		}
	}
	if req.echo() {
		c.echo = c.p.Text
	}
	return nil
}

// validate applies CompletionRequest's validators and refuses what the
// twin does not model; topK is logprobs (-1: the whole vocabulary).
func (r *completionRequest) validate() (topK int, e *apiError) {
	if r.LogprobTokenIDs != nil {
		switch {
		case len(r.LogprobTokenIDs) == 0:
			return 0, validationError("logprob_token_ids", "Value error, `logprob_token_ids` must not be an empty list. (parameter=logprob_token_ids)")
		case isNull(r.Logprobs):
			return 0, validationError("logprob_token_ids", "Value error, when using `logprob_token_ids`, `logprobs` must be set. (parameter=logprob_token_ids)")
		}
	}
	topK, e = intField("logprobs", r.Logprobs)
	if e != nil {
		return 0, e
	}
	promptLogprobs, e := intField("prompt_logprobs", r.PromptLogprobs)
	if e != nil {
		return 0, e
	}
	if !isNull(r.PromptLogprobs) && r.streaming() && (promptLogprobs > 0 || promptLogprobs == -1) {
		return 0, validationError("prompt_logprobs", "Value error, `prompt_logprobs` are not available when `stream=True`. (parameter=prompt_logprobs)")
	}
	if promptLogprobs < -1 {
		return 0, validationError("prompt_logprobs", "Value error, `prompt_logprobs` must be a positive value or -1. (parameter=prompt_logprobs, value="+strconv.Itoa(promptLogprobs)+")")
	}
	if topK < -1 {
		return 0, validationError("logprobs", "Value error, `logprobs` must be a positive value or -1. (parameter=logprobs, value="+strconv.Itoa(topK)+")")
	}
	if e := r.checkStreamOptions(); e != nil {
		return 0, e
	}
	if isNull(r.Prompt) || string(bytes.TrimSpace(r.Prompt)) == `""` {
		return 0, validationError("prompt", "Value error, Either prompt or prompt_embeds must be provided and non-empty. (parameter=prompt)")
	}
	return topK, r.checkServed(promptLogprobs)
}

// checkServed refuses what the twin does not model: beam search, prompt
// logprobs (echo with logprobs asks for them too) and an echo without
// generation.
func (r *completionRequest) checkServed(promptLogprobs int) *apiError {
	switch {
	case r.UseBeamSearch != nil && *r.UseBeamSearch:
		return badRequest("use_beam_search", "the vetbench twin does not model beam search; drop use_beam_search")
	case promptLogprobs != 0 || (r.echo() && !isNull(r.Logprobs)):
		return badRequest("prompt_logprobs", "the vetbench twin does not compute prompt logprobs; drop prompt_logprobs (and logprobs with echo)")
	case r.echo() && r.MaxTokens != nil && *r.MaxTokens == 0:
		return badRequest("max_tokens", "the vetbench twin does not model echo without generation; set max_tokens ≥ 1")
	}
	return nil
}

func (r *completionRequest) echo() bool { return r.Echo != nil && *r.Echo }

// chatRequest is the chat request with the same sampling: what the engine,
// the faults and the answer model read.
func (r *completionRequest) chatRequest(topK int) chatRequest {
	max := defaultCompletionTokens
	if r.MaxTokens != nil {
		max = *r.MaxTokens
	}
	cr := chatRequest{generateFields: r.generateFields}
	cr.MaxTokens = &max
	if !isNull(r.Logprobs) {
		on := true
		cr.Logprobs, cr.TopLogprobs = &on, json.RawMessage(strconv.Itoa(topK))
	}
	return cr
}

// prompt tokenizes the request's one prompt: a string (with <bos> unless
// add_special_tokens is false, as /tokenize does), token ids as they are
// (ids: not spelled yet), or a list holding one of either.
func (r *completionRequest) prompt() (p prompt, ids bool, e *apiError) {
	raw := bytes.TrimSpace(r.Prompt)
	invalid := validationError("prompt", "Input should be a valid string or a list of token ids")
	var list []json.RawMessage
	if len(raw) > 0 && raw[0] == '[' {
		if json.Unmarshal(raw, &list) != nil {
			return p, false, invalid
		}
		if len(list) == 0 || (firstByte(list[0]) != '"' && firstByte(list[0]) != '[') {
			p, e = idsPrompt(raw) // [] is list[int] to pydantic: an empty prompt
			return p, true, e
		}
		if len(list) != 1 {
			return p, false, badRequest("prompt", "the vetbench twin serves one prompt per completion request (got %d); send them one by one", len(list))
		}
		raw = list[0]
		if firstByte(raw) == '[' {
			p, e = idsPrompt(raw)
			return p, true, e
		}
	}
	var text string
	if json.Unmarshal(raw, &text) != nil {
		return p, false, invalid
	}
	if r.AddSpecialTokens == nil || *r.AddSpecialTokens {
		p.Tokens = append(p.Tokens, TokenBOS)
	}
	p.Tokens, p.Text = appendText(p.Tokens, text), text
	return p, false, nil
}

// idsPrompt is a prompt of token ids, as given; spellIDs spells it once
// its length is known to fit.
func idsPrompt(raw json.RawMessage) (prompt, *apiError) {
	var ids []int
	if json.Unmarshal(raw, &ids) != nil {
		return prompt{}, validationError("prompt", "Input should be a valid string or a list of token ids")
	}
	if len(ids) == 0 {
		return prompt{}, badRequest("", "The decoder prompt cannot be empty")
	}
	if slices.Min(ids) < 0 {
		return prompt{}, validationError("prompt", "Input should be greater than or equal to 0")
	}
	return prompt{Tokens: ids}, nil
}

// spellIDs is the text of a prompt of ids for the answer model, or vLLM's
// 400 for an id past the vocabulary.
func spellIDs(ids []int) (string, *apiError) {
	if top := slices.Max(ids); top >= VocabSize {
		return "", badRequest("", "Token id %d is out of vocabulary", top)
	}
	var text strings.Builder
	for _, id := range ids {
		text.WriteString(tokenText(id))
	}
	return text.String(), nil
}

// intField reads an optional integer field (0 when absent or null) and
// refuses any other JSON, as CompletionRequest.check_logprobs does.
func intField(name string, raw json.RawMessage) (int, *apiError) {
	if isNull(raw) {
		return 0, nil
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(raw)))
	if err != nil {
		return 0, validationError(name, "Value error, `"+name+"` must be an integer. (parameter="+name+", value="+string(raw)+")")
	}
	return n, nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func firstByte(raw json.RawMessage) byte {
	if t := bytes.TrimSpace(raw); len(t) > 0 {
		return t[0]
	}
	return 0
}

// sendText writes a completion's chunk of tokens [from, to): its text
// (the first token's from the answer model, after the echoed prompt),
// its logprobs in the completion shape, and on the last the finish
// reason. No role chunk comes first, as in vLLM's
// completion_stream_generator.
func (sw *streamWriter) sendText(view *request, from, to int, last bool) {
	s, c := sw.s, sw.c
	var text strings.Builder
	var lps []contentLogprob
	if from == 0 {
		first := *view
		first.generated = 1
		resp := s.answer(c.rid, &c.req, c.topK, &first)
		text.WriteString(c.echo)
		text.WriteString(resp.content)
		lps = resp.logprobs
		from = 1
	}
	for i := from; i < to; i++ {
		tok := view.gen.token(i)
		text.WriteString(tokenText(tok))
		if c.req.logprobs() {
			lps = append(lps, s.continuationLogprob(&c.req, c.topK, view.gen.logprobs(i), tok))
		}
	}
	choice := textChoiceJSON{Text: text.String(), Logprobs: jsonNull}
	if c.req.logprobs() {
		choice.Logprobs = completionLogprobsJSON(lps, sw.textLen)
	}
	sw.textLen += utf8.RuneCountInString(choice.Text)
	if last {
		reason := view.finishReason
		choice.FinishReason = &reason
	}
	sw.out.textChunk(sw.head, &choice, sw.runningUsage(to))
}

// textChoiceJSON is a completion stream choice, every field set (vLLM
// passes each explicitly, so exclude_unset keeps the nulls).
type textChoiceJSON struct {
	Index          int             `json:"index"`
	Text           string          `json:"text"`
	Logprobs       json.RawMessage `json:"logprobs"`
	FinishReason   *string         `json:"finish_reason"`
	StopReason     json.RawMessage `json:"stop_reason"`
	PromptTokenIDs json.RawMessage `json:"prompt_token_ids"`
	TokenIDs       json.RawMessage `json:"token_ids"`
}

// textChunk writes one completion chunk: head, the choice, the running
// usage when u is set.
func (s *sse) textChunk(head []byte, ch *textChoiceJSON, u *usageJSON) {
	if s.err != nil {
		return
	}
	b := append(append(s.buf[:0], "data: "...), head...)
	b = appendTextChoice(append(b, '['), ch)
	b = appendUsage(append(b, ']'), u)
	s.buf = append(b, "}\n\n"...)
	_, s.err = s.w.Write(s.buf)
}

// appendTextChoice appends c as marshal encodes it (null for unset raw
// fields).
func appendTextChoice(b []byte, c *textChoiceJSON) []byte {
	raw := func(r json.RawMessage) []byte {
		if len(r) == 0 {
			return jsonNull
		}
		return r
	}
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(c.Index), 10)
	b = append(b, `,"text":`...)
	b = appendJSONString(b, c.Text)
	b = append(append(b, `,"logprobs":`...), raw(c.Logprobs)...)
	b = append(b, `,"finish_reason":`...)
	if c.FinishReason == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *c.FinishReason)
	}
	b = append(append(b, `,"stop_reason":`...), raw(c.StopReason)...)
	b = append(append(b, `,"prompt_token_ids":`...), raw(c.PromptTokenIDs)...)
	b = append(append(b, `,"token_ids":`...), raw(c.TokenIDs)...)
	return append(b, '}')
}

// completionLogprobsJSON puts a completion's logprobs in vLLM's
// completion shape (_create_completion_logprobs): per token its text,
// its logprob and a dict of the sampled token then the top or asked ones
// (the chat entry's list; a token spelled twice keeps its first place and
// its last value, as a Python dict does), every value floored at −9999;
// text_offset counts characters from offset.
func completionLogprobsJSON(lps []contentLogprob, offset int) json.RawMessage {
	b := []byte(`{"text_offset":[`)
	for i := range lps {
		if i > 0 {
			b = append(b, ',')
			offset += utf8.RuneCountInString(lps[i-1].Token)
		}
		b = strconv.AppendInt(b, int64(offset), 10)
	}
	b = append(b, `],"token_logprobs":[`...)
	for i, cl := range lps {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLogprob(b, cl.Logprob)
	}
	b = append(b, `],"tokens":[`...)
	for i, cl := range lps {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, cl.Token)
	}
	b = append(b, `],"top_logprobs":[`...)
	for i, cl := range lps {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTopDict(b, append([]logprobEntry{cl.logprobEntry}, cl.TopLogprobs...))
	}
	return append(b, "]}"...)
}

// appendTopDict appends entries as a JSON object keyed by token text, in
// Python dict order.
func appendTopDict(b []byte, entries []logprobEntry) []byte {
	var keys []string
	last := map[string]*float64{}
	for _, e := range entries {
		if _, seen := last[e.Token]; !seen {
			keys = append(keys, e.Token)
		}
		last[e.Token] = e.Logprob
	}
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendJSONString(b, k), ':')
		b = appendLogprob(b, last[k])
	}
	return append(b, '}')
}

// appendLogprob appends a logprob floored at −9999 (null when a fault took
// it away), as Python's json writes floats.
func appendLogprob(b []byte, lp *float64) []byte {
	if lp == nil {
		return append(b, "null"...)
	}
	out, err := json.Marshal(max(*lp, MinLogprob))
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, out...)
}

// completionWire is a finished completion in vLLM's CompletionResponse
// shape; echo is the prompt text an echo request answers first.
func (resp *chatResponse) completionWire(echo string) map[string]any {
	var logprobs any
	if resp.logprobs != nil {
		logprobs = completionLogprobsJSON(resp.logprobs, 0)
	}
	return map[string]any{
		"id": "cmpl-" + resp.rid, "object": "text_completion", "created": resp.created, "model": resp.model,
		"choices": []any{map[string]any{
			"index": 0, "text": echo + resp.content, "logprobs": logprobs, "finish_reason": resp.finishReason,
			"stop_reason": nil, "token_ids": nil, "prompt_logprobs": nil, "prompt_token_ids": nil, "routed_experts": nil,
		}},
		"service_tier": nil, "system_fingerprint": nil,
		"usage": map[string]any{
			"prompt_tokens": resp.promptTokens, "total_tokens": resp.promptTokens + resp.generated,
			"completion_tokens": resp.generated, "prompt_tokens_details": promptDetails(resp.promptDetails),
		},
		"kv_transfer_params": nil, "ec_transfer_params": nil, "metrics": nil,
	}
}
