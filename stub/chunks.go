package stub

import "strings"

// What one stream chunk carries when an engine step (or, with
// --stream-interval, several) yields several tokens, and how a thinking
// request's text splits between reasoning and content (spec.go,
// reasoning.go). vLLM's chat stream sends one chunk per engine output:
// its delta is the detokenized text of every new token, run through the
// reasoning parser, and its logprobs have one entry per token.

// applyFeatures sets what the profile's serving features decide for a
// request once its generation exists: where a thinking request ends its
// reasoning.
func (p Profile) applyFeatures(r *request, req *chatRequest) {
	if p.Reasoning.thinks(req.ChatTemplateKwargs) {
		r.gen.thinkAt = thinkEnd(r.gen.key, r.gen.eosAt)
	}
}

// reasoningEnd is the position of r's end-of-thinking token, 0 when it
// does not think.
func reasoningEnd(r *request) int { return r.gen.thinkAt }

// piece is the delta and logprobs of output tokens [from, to) of a
// request (from > 0: the first token is the answer's, sent with the role
// chunk). ok is false when the tokens write nothing in either channel
// (the end-of-thinking token alone): vLLM sends no chunk then.
func (s *Server) piece(c *chatCall, from, to int) (d deltaJSON, logprobs []contentLogprob, ok bool) {
	r := c.r
	text := func(i int) string { return tokenText(r.gen.token(i)) }
	reasoning, content, ok := channelText(from, to, reasoningEnd(r), text)
	if !ok {
		return d, nil, false
	}
	d = s.delta(reasoning, content, reasoningEnd(r) > 0 && from < reasoningEnd(r))
	if c.req.logprobs() {
		for i := from; i < to; i++ {
			tok := r.gen.token(i)
			logprobs = append(logprobs, s.continuationLogprob(&c.req, c.topK, r.gen.logprobs(i), tok))
		}
	}
	return d, logprobs, true
}

// delta spells reasoning and content as the served vLLM version does
// (reasoningKeys); thinking says the tokens began before the end of
// reasoning, so a reasoning field is set even when it is empty.
func (s *Server) delta(reasoning, content string, thinking bool) deltaJSON {
	var d deltaJSON
	if thinking {
		rk, rck := reasoningKeys(s.servedVersion())
		if rk {
			d.Reasoning = &reasoning
		}
		if rck {
			d.ReasoningContent = &reasoning
		}
		if content != "" {
			d.Content = &content
		}
		return d
	}
	d.Content = &content
	return d
}

// servedVersion is the vLLM release whose shapes the twin follows.
func (s *Server) servedVersion() string {
	if v := s.cfg.Profile.VLLMVersion; v != "" {
		return v
	}
	if s.cfg.Legacy {
		return LegacyVersion
	}
	return Version
}

// messageReasoning splits a finished request's text for a non-streamed
// message: reasoning (nil when the request did not think) and content
// (nil when a thinking request never ended its reasoning, as the R1
// parser returns it).
func messageReasoning(r *request, first string) (reasoning, content *string) {
	end := reasoningEnd(r)
	text := func(i int) string {
		if i == 0 {
			return first
		}
		return tokenText(r.gen.token(i))
	}
	rs, cs, _ := channelText(0, r.generated, end, text)
	if end == 0 {
		return nil, &cs
	}
	reasoning = &rs
	if r.generated > end {
		content = &cs
	}
	return reasoning, content
}

// sendTokens writes the chunk of tokens [from, to). The first token
// (always alone: the prefill step yields one, and the chunker sends it at
// once) comes after the role chunk, with the answer model's text and
// logprobs.
func (sw *streamWriter) sendTokens(view *request, from, to int, last bool) {
	if sw.c.completion {
		sw.sendText(view, from, to, last)
		return
	}
	choice := choiceJSON{Index: 0, Logprobs: jsonNull, TokenIDs: jsonNull}
	if from == 0 {
		sw.sendFirst(view, &choice)
	} else {
		d, lps, ok := sw.s.piece(sw.c, from, to)
		if !ok && !last {
			return // the end-of-thinking token alone: vLLM sends nothing
		}
		if !ok {
			d = deltaJSON{Content: new(string)} // an empty delta with the finish reason
		}
		choice.Delta = d
		if lps != nil {
			choice.Logprobs = logprobsJSON(lps)
		}
	}
	if last {
		reason := view.finishReason
		choice.FinishReason = &reason
		choice.StopReason = jsonNull
	}
	ch := sw.chunk([]choiceJSON{choice}, to)
	sw.out.chunk(sw.head, &ch)
}

// sendFirst writes the role chunk and fills choice with the first token.
func (sw *streamWriter) sendFirst(view *request, choice *choiceJSON) {
	s, c := sw.s, sw.c
	first := *view
	first.generated = 1
	resp := s.answer(c.rid, &c.req, c.topK, &first)
	if resp.logprobs != nil {
		choice.Logprobs = logprobsJSON(resp.logprobs[:1])
	}
	role := sw.chunk([]choiceJSON{{Index: 0, Delta: deltaJSON{Role: "assistant", Content: new(string)}, Logprobs: jsonNull}}, 0)
	role.PromptTokenIDs = jsonNull
	sw.out.chunk(sw.head, &role)
	if reasoningEnd(c.r) > 0 {
		choice.Delta = s.delta(resp.content, "", true)
		return
	}
	choice.Delta = deltaJSON{Content: &resp.content}
}

// spellReasoning puts a thinking answer's reasoning and content into a
// message under the keys of its vLLM version.
func (resp *chatResponse) spellReasoning(message map[string]any) {
	rk, rck := reasoningKeys(resp.version)
	delete(message, "reasoning")
	if rk {
		message["reasoning"] = resp.reasoning
	}
	if rck {
		message["reasoning_content"] = resp.reasoning
	}
	message["content"] = resp.body
}

// reportedVersion is what /version answers: the served release, marked as
// the twin.
func (s *Server) reportedVersion() string {
	v := s.servedVersion()
	if s.cfg.Profile.VLLMVersion == "" {
		return v // Version and LegacyVersion carry the mark already
	}
	if strings.Contains(v, "+") {
		return v + ".vetbench.twin"
	}
	return v + "+vetbench.twin"
}
