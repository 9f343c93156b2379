package stub

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"time"
)

// The chat completion handler, in its steps: read and validate the
// request (as vLLM's serving layer does, before the engine sees it), fire
// the faults that answer instead of the engine, hand the request to the
// engine at its model time, then answer, streamed (stream.go) or whole.

// chatCall is one validated chat completion request on its way through
// the handler.
type chatCall struct {
	rid       string
	recv      float64 // model time the handler started
	req       chatRequest
	topK      int
	p         prompt
	maxTokens int
	fault     *faultState
	rt        float64 // the request's network round trip, model seconds
	eng       *engine
	r         *request
	ready     float64 // model time the engine got it
	// completion says the request came to /v1/completions: a prompt
	// continued as it stands, answered as text_completion (completion.go).
	completion bool
	// echo is the prompt text a completion with echo=true answers first.
	echo string
}

// chat serves POST /v1/chat/completions.
func (s *Server) chat(w http.ResponseWriter, hr *http.Request) {
	s.serveGeneration(w, hr, &chatCall{}, s.parseChat)
}

// serveGeneration serves a generation request (chat or completion) once
// parse has validated it into c.
func (s *Server) serveGeneration(w http.ResponseWriter, hr *http.Request, c *chatCall, parse func([]byte, *chatCall) *apiError) {
	c.recv, c.rid = s.arrived(hr), hr.Header.Get("X-Request-Id")
	if c.rid == "" {
		c.rid = newRequestID()
	}
	w.Header().Set("X-Request-Id", c.rid)
	body, release, err := s.readBody(hr)
	defer release()
	if err != nil {
		writeError(w, badRequest("body", "read body: %v", err))
		return
	}
	if e := parse(body, c); e != nil {
		writeError(w, e)
		return
	}
	c.fault = s.pickFault(c.rid)
	if s.answeredByFault(w, c.fault) {
		return
	}
	if !s.submitChat(w, hr, c) {
		return
	}
	if c.req.streaming() {
		s.stream(w, hr, c)
		return
	}
	s.answerWhole(w, hr, c)
}

// parseChat decodes and validates a chat request as vLLM's serving layer
// does, and renders its prompt.
func (s *Server) parseChat(body []byte, c *chatCall) *apiError {
	req := &c.req
	if err := s.decodeChat(body, req); err != nil {
		return jsonDecodeError(err)
	}
	if s.cfg.Legacy {
		req.LogprobTokenIDs = nil // before PR #43463: an unknown field, ignored
	}
	topK, e := req.validate()
	if e != nil {
		return e
	}
	c.topK = topK
	if e := s.checkModel(req.Model); e != nil {
		return e
	}
	msgs, e := req.messages(s.images)
	if e != nil {
		return e
	}
	if e := s.checkImages(msgs); e != nil {
		return e
	}
	thinking := false
	if v, ok := req.ChatTemplateKwargs["enable_thinking"].(bool); ok {
		thinking = v
	}
	p, err := renderChat(msgs, req.AddGenerationPrompt == nil || *req.AddGenerationPrompt, thinking, s.cfg.Profile.ImageTokenBudget)
	if err != nil {
		return badRequest("messages", "%v", err)
	}
	c.p = p
	return s.checkLimits(c)
}

// checkLimits sets the call's max_tokens and applies vLLM's checks of
// length and sampling once the prompt is tokenized.
func (s *Server) checkLimits(c *chatCall) (e *apiError) {
	if c.maxTokens, e = s.checkLength(&c.req, len(c.p.Tokens)); e != nil {
		return e
	}
	if e := c.req.checkSampling(c.maxTokens); e != nil {
		return e
	}
	return s.samplingError(&c.req, c.topK)
}

// checkImages refuses more images than --limit-mm-per-prompt allows.
func (s *Server) checkImages(msgs []message) *apiError {
	images := 0
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Image != nil {
				images++
			}
		}
	}
	if s.cfg.Profile.NoVision && images > 0 {
		// A model that supports no images: no flag raises the limit, so
		// vLLM's message (validate_num_items) names none.
		return badRequest("image", "At most 0 image(s) may be provided in one prompt.")
	}
	if lim := s.cfg.Profile.LimitImages; images > lim {
		return badRequest("image", "At most %d image(s) may be provided in one prompt. Set `--limit-mm-per-prompt` to increase this limit.", lim)
	}
	return nil
}

// checkLength is the request's max_tokens (what is left of max_model_len
// when it names none) and vLLM's 400s for a prompt and output that do not
// fit.
func (s *Server) checkLength(req *chatRequest, promptTokens int) (maxTokens int, e *apiError) {
	maxLen := s.cfg.Profile.MaxModelLen
	maxTokens = maxLen - promptTokens
	if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	if req.MaxCompletionTokens != nil {
		maxTokens = *req.MaxCompletionTokens
	}
	if e := promptTooLong(req, promptTokens, maxLen); e != nil {
		return 0, e
	}
	if maxTokens < 1 {
		return 0, badRequest("max_tokens", "max_tokens must be at least 1, got %d.", maxTokens)
	}
	if promptTokens+maxTokens > maxLen {
		return 0, badRequest("input_tokens",
			"This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains at least %d input tokens, for a total of at least %d tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=%d)",
			maxLen, maxTokens, promptTokens, promptTokens+maxTokens, promptTokens)
	}
	return maxTokens, nil
}

// answeredByFault answers the faults that answer instead of the engine
// (HTTP 500, 429, 400) and kills the engine for engine-dead; true when the
// request is answered.
func (s *Server) answeredByFault(w http.ResponseWriter, f *faultState) bool {
	if f == nil {
		return false
	}
	switch f.Kind {
	case FaultHTTP500:
		writeError(w, &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: "injected fault: internal server error"})
		return true
	case FaultHTTP429:
		ra := f.RetryAfter
		if ra == 0 {
			ra = 1
		}
		w.Header().Set("Retry-After", strconv.Itoa(ra))
		writeError(w, &apiError{Status: http.StatusTooManyRequests, Type: "RateLimitError", Message: "injected fault: too many requests"})
		return true
	case FaultHTTP400:
		writeError(w, badRequest("", "injected fault: bad request"))
		return true
	case FaultEngineDead:
		s.killAll()
	}
	return false
}

// errEngineDeadAPI is the 500 a request gets from a dead engine.
func errEngineDeadAPI() *apiError {
	return &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: EngineDeadMessage}
}

// submitChat waits until the request reaches the frontend (half a round
// trip after the handler started, in model time), passes it through the
// frontend and hands it to an engine; false when it was answered (a dead
// engine) or the client went away.
func (s *Server) submitChat(w http.ResponseWriter, hr *http.Request, c *chatCall) bool {
	if s.anyDead() {
		writeError(w, errEngineDeadAPI())
		return false
	}
	c.rt = s.roundTrip()
	digests := make([]string, len(c.p.Images))
	for i, im := range c.p.Images {
		digests[i] = im.Digest
	}
	if s.eng.clock.sleepUntil(hr.Context(), c.recv+c.rt/2) != nil {
		return false
	}
	eng, arrival, ready, job := s.handOff(c.recv+c.rt/2, digests, len(c.p.Tokens))
	c.eng, c.ready = eng, ready
	c.r = &request{prompt: c.p, hashes: blockHashes(c.p, s.cfg.Profile.BlockSize, c.req.CacheSalt), maxTokens: c.maxTokens,
		arrival: arrival, fe: job, done: make(chan struct{})}
	decodeFaults(c.r, &c.req, c.fault, c.maxTokens)
	if !c.completion { // a completion has no chat template: nothing splits off as reasoning
		s.cfg.Profile.applyFeatures(c.r, &c.req)
	}
	if err := eng.submit(c.r, ready); err != nil {
		writeError(w, errEngineDeadAPI())
		return false
	}
	return true
}

// answerWhole waits for the engine to finish the request and sends the
// whole completion half a round trip after its last token.
func (s *Server) answerWhole(w http.ResponseWriter, hr *http.Request, c *chatCall) {
	ctx, r := hr.Context(), c.r
	select {
	case <-r.done:
	case <-ctx.Done():
		c.eng.abort(r)
		return
	}
	if r.err != nil {
		writeError(w, &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: r.err.Error()})
		return
	}
	if r.finishReason == "error" {
		writeError(w, generationError())
		return
	}
	resp := s.answer(c.rid, &c.req, c.topK, r)
	if c.fault != nil {
		c.fault.spoil(resp)
	}
	wire := resp.wire
	if c.completion {
		wire = func() map[string]any { return resp.completionWire(c.echo) }
	}
	out, err := marshal(wire())
	if err != nil {
		writeError(w, &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: err.Error()})
		return
	}
	if s.eng.clock.sleepUntil(ctx, r.finished+c.rt/2) != nil {
		return
	}
	s.countServed()
	out, ok := s.lateFault(w, hr, c.fault, out)
	if !ok {
		return
	}
	// Counted before the write, as countServed is: a client that scrapes
	// /metrics the moment it has the body finds this delivery there (its
	// count after the flush raced that scrape: 33 deliveries for 32
	// requests in a window, TestMeasureSaysTwinFellBehind). Its delay is
	// taken when the body is handed to the socket, microseconds before.
	c.eng.firstDelivered(r.finished+c.rt/2, c.recv)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// lateFault applies the faults that spoil a finished answer on its way
// out: slow (wait), reset (drop the connection), truncate (half the
// body). ok is false when nothing is left to send.
func (s *Server) lateFault(w http.ResponseWriter, hr *http.Request, f *faultState, out []byte) (_ []byte, ok bool) {
	if f == nil {
		return out, true
	}
	switch f.Kind {
	case FaultSlow:
		return out, waitSlowFault(hr, f)
	case FaultReset:
		resetConnection(w)
		return nil, false
	case FaultTruncate:
		return out[:len(out)/2], true
	}
	return out, true
}

// waitSlowFault waits the slow fault's delay (wall time; 30 s when unset);
// false when the client went away first.
func waitSlowFault(hr *http.Request, f *faultState) bool {
	d := f.Delay
	if d == 0 {
		d = 30 * time.Second
	}
	select {
	case <-time.After(d):
		return true
	case <-hr.Context().Done():
		return false
	}
}

func (s *Server) countServed() {
	s.mu.Lock()
	s.stats.Served++
	s.mu.Unlock()
}

// maxBodyReserve is the most of a claimed Content-Length readBody sets
// aside before the bytes arrive: a client may claim 64 MiB and send 4
// (900 such connections reserved 61 GB of address space); past it the
// buffer grows with what has been read, as vLLM holds only what it got.
const maxBodyReserve = 1 << 20

// readBody reads a request body (at most maxBody bytes, as io.ReadAll
// of a LimitReader would) into a pooled buffer sized by Content-Length
// (up to maxBodyReserve); release returns the buffer, once nothing refers
// to the body any more.
func (s *Server) readBody(r *http.Request) (body []byte, release func(), err error) {
	bp, _ := s.bodies.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	buf := (*bp)[:0]
	if n := min(r.ContentLength, maxBody, maxBodyReserve); n > 0 && int64(cap(buf)) < n+1 {
		buf = make([]byte, 0, n+1) // +1: io.EOF without a regrowth
	}
	lr := io.LimitReader(r.Body, maxBody)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, rerr := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			err = rerr
			break
		}
	}
	release = func() {
		*bp = buf
		s.bodies.Put(bp)
	}
	return buf, release, err
}

// pickFault counts a validated chat request and returns the first fault
// that fires on it, if any.
func (s *Server) pickFault(rid string) *faultState {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.stats.ChatRequests++
	for _, f := range s.faults {
		if f.fires(s.seq, rid) {
			s.stats.FaultsFired[f.Kind]++
			return f
		}
	}
	return nil
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
