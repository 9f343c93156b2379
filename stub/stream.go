package stub

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Streaming follows vLLM's chat_completion_stream_generator: status and
// headers once the request is with the engine; at its first token a role
// chunk (delta {"role": "assistant", "content": ""}) and the token's
// content chunk; one chunk per output token after that, the last carrying
// finish_reason; with stream_options.include_usage a usage-only chunk
// with an empty choices list; then "data: [DONE]". With
// continuous_usage_stats (and include_usage) every chunk carries the
// running usage. A request that fails after the stream started (the
// engine died, a generation error) gets an error object as its last chunk
// before [DONE], as vLLM sends it; a client that goes away aborts the
// request in the engine.

// streamOpts is stream_options.
type streamOpts struct {
	IncludeUsage         *bool `json:"include_usage"`
	ContinuousUsageStats *bool `json:"continuous_usage_stats"`
}

// streamOptions reads stream_options: an object, or absent. (Setting it
// without stream is refused before this, as vLLM's validator does.)
func (r *generateFields) streamOptions() (streamOpts, *apiError) {
	var o streamOpts
	if len(r.StreamOptions) == 0 || string(r.StreamOptions) == "null" {
		return o, nil
	}
	if err := json.Unmarshal(r.StreamOptions, &o); err != nil {
		return o, validationError("stream_options", "Input should be a valid dictionary or instance of StreamOptions")
	}
	return o, nil
}

func (r *generateFields) streaming() bool { return r.Stream != nil && *r.Stream }

func (r *generateFields) ignoreEOS() bool { return r.IgnoreEOS != nil && *r.IgnoreEOS }

func (r *generateFields) minTokens() int {
	if r.MinTokens == nil {
		return 0
	}
	return *r.MinTokens
}

// checkSampling applies SamplingParams' checks that need max_tokens.
func (r *chatRequest) checkSampling(maxTokens int) *apiError {
	if n := r.minTokens(); n < 0 {
		return badRequest("min_tokens", "min_tokens must be greater than or equal to 0, got %d. (parameter=min_tokens, value=%d)", n, n)
	} else if n > maxTokens {
		return badRequest("min_tokens", "min_tokens must be less than or equal to max_tokens=%d, got %d. (parameter=min_tokens, value=%d)", maxTokens, n, n)
	}
	return nil
}

// promptTooLong is vLLM's 400 for a prompt that leaves no room to
// generate when the request names no max_tokens (with max_tokens, the
// caller's check says prompt plus output).
func promptTooLong(r *chatRequest, promptTokens, maxLen int) *apiError {
	if r.MaxTokens != nil || r.MaxCompletionTokens != nil || promptTokens < maxLen {
		return nil
	}
	return badRequest("input_tokens", "This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages. (parameter=input_tokens, value=%d)",
		maxLen, promptTokens, promptTokens)
}

// generationError is what vLLM answers for a request whose generation
// failed (finish_reason "error").
func generationError() *apiError {
	return &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: "Internal server error"}
}

// decodeFaults sets what a request generates: its words and natural
// length from its content, ignore_eos and min_tokens, the loop and
// stream-error faults, and, for a stream, the engine's progress signal.
func decodeFaults(r *request, req *chatRequest, f *faultState, maxTokens int) {
	loop := f != nil && f.Kind == FaultLoop
	r.gen = newGeneration(contentKey(r.prompt), req.ignoreEOS(), req.minTokens(), loop)
	if f != nil && f.Kind == FaultStreamError {
		n := maxTokens
		if r.gen.eosAt > 0 {
			n = min(n, r.gen.eosAt)
		}
		r.failAt = max(1, (n+1)/2)
	}
	if req.streaming() {
		r.progress = make(chan struct{}, 1)
	}
}

// Wire shapes, field for field in vLLM's order (pydantic model_dump_json
// with exclude_unset: fields vLLM sets to None are sent as null).
type (
	chunkJSON struct {
		ID             string          `json:"id"`
		Object         string          `json:"object"`
		Created        int64           `json:"created"`
		Model          string          `json:"model"`
		Choices        []choiceJSON    `json:"choices"`
		Usage          *usageJSON      `json:"usage,omitempty"`
		PromptTokenIDs json.RawMessage `json:"prompt_token_ids,omitempty"`
	}
	choiceJSON struct {
		Index        int             `json:"index"`
		Delta        deltaJSON       `json:"delta"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
		StopReason   json.RawMessage `json:"stop_reason,omitempty"`
		TokenIDs     json.RawMessage `json:"token_ids,omitempty"`
	}
	deltaJSON struct {
		Role             string  `json:"role,omitempty"`
		Content          *string `json:"content,omitempty"`
		Reasoning        *string `json:"reasoning,omitempty"`
		ReasoningContent *string `json:"reasoning_content,omitempty"`
	}
	usageJSON struct {
		PromptTokens     int `json:"prompt_tokens"`
		TotalTokens      int `json:"total_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	}
)

var jsonNull = json.RawMessage("null")

// sse writes server-sent events and remembers the first write error (the
// client went away). buf is reused from event to event: one write each.
type sse struct {
	w   http.ResponseWriter
	err error
	buf []byte
}

// data writes v, marshalled, as one event (the rare shapes: errors).
func (s *sse) data(v any) {
	if s.err != nil {
		return
	}
	b, err := marshal(v)
	if err != nil {
		s.err = err
		return
	}
	s.event(b)
}

// chunk writes ch as one event, its fixed part from head (chunkjson.go).
func (s *sse) chunk(head []byte, ch *chunkJSON) {
	if s.err != nil {
		return
	}
	s.buf = appendChunk(append(s.buf[:0], "data: "...), head, ch)
	s.buf = append(s.buf, "\n\n"...)
	_, s.err = s.w.Write(s.buf)
}

func (s *sse) event(b []byte) {
	s.buf = append(append(append(s.buf[:0], "data: "...), b...), "\n\n"...)
	_, s.err = s.w.Write(s.buf)
}

func (s *sse) done() {
	if s.err == nil {
		_, s.err = s.w.Write([]byte("data: [DONE]\n\n"))
	}
}

func (s *sse) flush() {
	if f, ok := s.w.(http.Flusher); ok && s.err == nil {
		f.Flush()
	}
}

// streamWriter writes one request's event stream.
type streamWriter struct {
	s                 *Server
	c                 *chatCall
	out               *sse
	id, object        string // chatcmpl-… chat.completion.chunk, or cmpl-… text_completion
	created           int64
	prompt            int       // prompt tokens
	usage, continuous bool      // stream_options
	cut               int       // the truncate fault cuts the stream after this many tokens (-1: never)
	sent              int       // tokens the engine sampled that this writer has seen
	head              []byte    // every chunk's fixed part, encoded once (chunkjson.go)
	times             []float64 // reused copy of the token times sendNew reads
	due               float64   // model time the last tokens written were due at the client (-1: none since the last flush)
	firstDue          float64   // model time the first token chunk was due at the client (-1: not written yet)
	firstCounted      bool      // its write has been counted (engine.firstDelivered)
	textLen           int       // characters of a completion's text sent so far (its logprobs' text_offset)
	// ch groups the tokens into chunks: one per engine step, or per
	// --stream-interval tokens (chunks.go).
	ch chunker
}

// stream serves a submitted request as vLLM's event stream: the faults
// that act before it, the headers once the engine has the request, then
// the tokens as the engine samples them, and the closing chunks.
func (s *Server) stream(w http.ResponseWriter, hr *http.Request, c *chatCall) {
	ctx := hr.Context()
	gone := func() { c.eng.abort(c.r) }
	if !s.streamFault(w, hr, c) {
		return
	}
	// vLLM's handler returns its StreamingResponse once the engine has the
	// request, and the server sends the status and headers then.
	for ready := c.ready; ; { // until its place in the frontend stops moving
		if c.eng.clock.sleepUntil(ctx, ready+c.rt/2) != nil {
			gone()
			return
		}
		now := c.eng.readyOf(c.r, ready)
		if now <= ready {
			break
		}
		ready = now
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	sw := newStreamWriter(s, c, &sse{w: w})
	sw.out.flush()
	for {
		select {
		case <-c.r.progress:
		case <-c.r.done:
		case <-ctx.Done():
			gone()
			return
		}
		finished, ok := sw.sendNew(ctx)
		if !ok {
			gone()
			return
		}
		if !finished {
			sw.out.flush()
		}
		if sw.due >= 0 {
			c.eng.delivered(sw.due)
			sw.due = -1
		}
		if sw.firstDue >= 0 && !sw.firstCounted {
			c.eng.firstDelivered(sw.firstDue, c.recv)
			sw.firstCounted = true
		}
		if finished {
			s.countServed()
			return
		}
	}
}

// streamFault applies the faults that act before a stream starts: slow
// (wait) and reset (drop the connection). false: the stream is over and
// the request withdrawn from the engine.
func (s *Server) streamFault(w http.ResponseWriter, hr *http.Request, c *chatCall) bool {
	if c.fault == nil {
		return true
	}
	switch c.fault.Kind {
	case FaultSlow:
		if !waitSlowFault(hr, c.fault) {
			c.eng.abort(c.r)
			return false
		}
	case FaultReset:
		c.eng.abort(c.r)
		resetConnection(w)
		return false
	}
	return true
}

func newStreamWriter(s *Server, c *chatCall, out *sse) *streamWriter {
	opts, _ := c.req.streamOptions()
	usage := opts.IncludeUsage != nil && *opts.IncludeUsage
	sw := &streamWriter{s: s, c: c, out: out, id: "chatcmpl-" + c.rid, object: "chat.completion.chunk", created: time.Now().Unix(), prompt: len(c.r.prompt.Tokens),
		usage: usage, continuous: usage && opts.ContinuousUsageStats != nil && *opts.ContinuousUsageStats, cut: -1, due: -1, firstDue: -1,
		ch: chunker{interval: s.cfg.Profile.StreamInterval}}
	if c.completion {
		sw.id, sw.object = "cmpl-"+c.rid, "text_completion"
	}
	sw.head = chunkHead(&chunkJSON{ID: sw.id, Object: sw.object, Created: sw.created, Model: s.cfg.Model})
	if c.fault != nil && c.fault.Kind == FaultTruncate {
		n := c.r.maxTokens
		if c.r.gen.eosAt > 0 {
			n = min(n, c.r.gen.eosAt)
		}
		sw.cut = max(1, n/2)
	}
	return sw
}

// chunk is a chat.completion.chunk with choices and, with
// continuous_usage_stats, the running usage.
func (sw *streamWriter) chunk(choices []choiceJSON, completion int) chunkJSON {
	return chunkJSON{ID: sw.id, Object: sw.object, Created: sw.created, Model: sw.s.cfg.Model, Choices: choices, Usage: sw.runningUsage(completion)}
}

// runningUsage is a chunk's usage with continuous_usage_stats, else nil.
func (sw *streamWriter) runningUsage(completion int) *usageJSON {
	if !sw.continuous {
		return nil
	}
	return &usageJSON{PromptTokens: sw.prompt, TotalTokens: sw.prompt + completion, CompletionTokens: completion}
}

// sendNew sends the tokens sampled since the last call, each engine
// step's at its sampling time plus half a round trip, grouped into chunks
// as vLLM's output processor groups them (chunks.go), and the closing
// chunks when the request finished. ok is false when the client went
// away.
func (sw *streamWriter) sendNew(ctx context.Context) (finished, ok bool) {
	eng, r := sw.c.eng, sw.c.r
	// Whether it finished is read with the tokens, under the engine's
	// lock, so the last token and its finish reason go together.
	eng.mu.Lock()
	sw.times = append(sw.times[:0], r.times[sw.sent:]...)
	times := sw.times
	view := *r
	eng.mu.Unlock()
	finished = view.finishReason != "" || view.err != nil
	limit := view.generated
	if view.finishReason == "error" {
		limit-- // the failed step's output is the error, sent below
	}
	j := sw.sent
	for _, n := range stepGroups(times) {
		at := times[j-sw.sent]
		if j += n; j > limit {
			break
		}
		sw.due = at + sw.c.rt/2
		if eng.clock.sleepUntil(ctx, sw.due) != nil {
			return false, false
		}
		last := finished && j == view.generated && view.finishReason != "error"
		if k := sw.ch.take(j, last); k > 0 {
			sw.sendTokens(&view, j-k, j, last)
			if sw.firstDue < 0 {
				sw.firstDue = sw.due
			}
		}
		if sw.cut >= 0 && j >= sw.cut {
			sw.out.flush()
			eng.abort(r)
			panic(http.ErrAbortHandler) // the connection drops mid-stream
		}
	}
	sw.sent += len(times)
	if sw.out.err != nil {
		return false, false
	}
	if finished {
		sw.finish(&view)
	}
	return finished, true
}

// finish sends what ends the stream: the error object of a failed
// request, or the usage-only chunk; then [DONE].
func (sw *streamWriter) finish(view *request) {
	switch {
	case view.err != nil:
		sw.out.data(map[string]any{"error": map[string]any{"message": view.err.Error(), "type": "InternalServerError", "param": nil, "code": http.StatusInternalServerError}})
	case view.finishReason == "error":
		e := generationError()
		sw.out.data(map[string]any{"error": map[string]any{"message": e.Message, "type": e.Type, "param": nil, "code": e.Status}})
	case sw.usage:
		n := view.generated
		sw.out.chunk(sw.head, &chunkJSON{ID: sw.id, Object: sw.object, Created: sw.created, Model: sw.s.cfg.Model, Choices: []choiceJSON{},
			Usage: &usageJSON{PromptTokens: sw.prompt, TotalTokens: sw.prompt + n, CompletionTokens: n}})
	}
	sw.out.done()
	sw.out.flush()
}

// resetConnection closes the client's connection with no answer.
func resetConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // no hijacker (HTTP/2): abort the stream
}

func logprobsJSON(c []contentLogprob) json.RawMessage {
	b, err := marshal(map[string]any{"content": c})
	if err != nil {
		return jsonNull
	}
	return b
}

// continuationLogprob is a generated token's logprobs entry: the sampled
// token, then the asked ids (logprob_token_ids, de-duplicated, the sampled
// one not repeated) or the top_logprobs most probable, as vLLM's
// _make_logprob_dict orders them.
func (s *Server) continuationLogprob(req *chatRequest, topK int, lps map[int]float64, sampled int) contentLogprob {
	asIDs := req.ReturnAsTokenIDs != nil && *req.ReturnAsTokenIDs
	spell := func(id int) string {
		if asIDs {
			return "token_id:" + strconv.Itoa(id)
		}
		return tokenText(id)
	}
	lp := func(id int) float64 {
		if v, ok := lps[id]; ok {
			return v
		}
		return MinLogprob
	}
	cl := contentLogprob{logprobEntry: entry(spell(sampled), lp(sampled)), TopLogprobs: []logprobEntry{}}
	switch {
	case len(req.LogprobTokenIDs) > 0:
		cl.TopLogprobs = append(cl.TopLogprobs, entry(spell(sampled), lp(sampled)))
		seen := map[int]bool{sampled: true}
		for _, id := range req.LogprobTokenIDs {
			if !seen[id] {
				seen[id] = true
				cl.TopLogprobs = append(cl.TopLogprobs, entry(spell(id), lp(id)))
			}
		}
	case topK != 0:
		order := rank(lps)
		k := topK
		if k < 0 || k > len(order) {
			k = len(order)
		}
		if lim := s.cfg.Profile.MaxLogprobs; lim >= 0 {
			k = min(k, lim)
		}
		for _, t := range order[:k] {
			cl.TopLogprobs = append(cl.TopLogprobs, entry(spell(t.id), t.lp))
		}
	}
	return cl
}
