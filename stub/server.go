package stub

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Version is what /version reports: the vLLM release the twin follows,
// marked as the twin.
const Version = "0.30.0+vetbench.twin"

// AdjustFunc changes the candidate logits of one request before they are
// normalised: keys are the control token ids of the question's options
// (ControlTokenID), values logits. item and question come from the
// request's X-Request-Id (judgments.RequestID). Tests use it as a positive
// control: flip one verdict, shift one Noul.
type AdjustFunc func(item, question string, logits map[int]float64)

type config struct {
	profile    Profile
	model      string
	timeScale  float64
	slowdown   float64
	batchNoise float64
	spread     Spread
	replay     *Replay
	adjust     AdjustFunc
	faults     []Fault
	devMode    bool
	allowance  time.Duration
	vllm       vllmOptions
}

// Option configures a Server.
type Option func(*config) error

// WithProfile sets the profile (default ProfileFast).
func WithProfile(p Profile) Option {
	return func(c *config) error { c.profile = p; return nil }
}

// WithProfileName sets the profile by name (ProfileByName).
func WithProfileName(name string) Option {
	return func(c *config) error {
		p, err := ProfileByName(name)
		c.profile = p
		return err
	}
}

// WithModel sets the served model name (default: the profile's).
func WithModel(name string) Option {
	return func(c *config) error { c.model = name; return nil }
}

// WithTimeScale runs the twin s times faster than real time: every model
// duration d sleeps d/s of wall time. /metrics still records d (model
// seconds, as the profiled server would have measured), so scrapes of a
// time-scaled twin read like the real server's; a client's wall-clock
// latencies must be multiplied by s (and rates divided by s) to compare.
func WithTimeScale(s float64) Option {
	return func(c *config) error {
		if !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("time scale %v: want a positive number", s)
		}
		c.timeScale = s
		return nil
	}
}

// WithSlowdown multiplies every duration the server spends (engine steps,
// scheduling, the API frontend; not the network) by f (1.2 = a 20% slower
// server), so a speed gate can be shown to fire.
func WithSlowdown(f float64) Option {
	return func(c *config) error {
		if !(f > 0) || math.IsInf(f, 0) {
			return fmt.Errorf("slowdown %v: want a positive number", f)
		}
		c.slowdown = f
		return nil
	}
}

// WithBatchNoise bounds the noise added to each candidate logit by the
// batch a request's prefill ran in (default DefaultBatchNoise; 0 turns it
// off). A request alone in its batch gets none.
func WithBatchNoise(amp float64) Option {
	return func(c *config) error {
		if !(amp >= 0) || math.IsInf(amp, 0) {
			return fmt.Errorf("batch noise %v: want 0 or more", amp)
		}
		c.batchNoise = amp
		return nil
	}
}

// WithSpread sets the answer model's confidence spread.
func WithSpread(sp Spread) Option {
	return func(c *config) error {
		if sp.Confident < 0 || sp.NearTie < 0 || sp.Confident+sp.NearTie > 1 {
			return fmt.Errorf("spread %+v: fractions must be >= 0 and sum to at most 1", sp)
		}
		c.spread = sp
		return nil
	}
}

// WithReplay serves recorded distributions (NewReplay).
func WithReplay(r Replay) Option {
	return func(c *config) error { c.replay = &r; return nil }
}

// WithAdjust installs an adjust hook.
func WithAdjust(fn AdjustFunc) Option {
	return func(c *config) error { c.adjust = fn; return nil }
}

// WithFaults adds faults (see Fault).
func WithFaults(fs ...Fault) Option {
	return func(c *config) error { c.faults = append(c.faults, fs...); return nil }
}

// WithTransportAllowance takes d of wall time per request out of the
// modelled network round trip: the wall time the real transport and client
// add to every request (loopback HTTP, JSON) would otherwise count
// timeScale times in a client's model-time latency. Measure it as the
// round trip of a trivial request (see MeasureTransport); 0 (the default)
// takes nothing out.
func WithTransportAllowance(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("transport allowance %s: want 0 or more", d)
		}
		c.allowance = d
		return nil
	}
}

// WithDevMode mounts the cache reset endpoints, as VLLM_SERVER_DEV_MODE=1
// does; without it they answer 404.
func WithDevMode(on bool) Option {
	return func(c *config) error { c.devMode = on; return nil }
}

// Stats are the twin's own counters, for tests.
type Stats struct {
	// ChatRequests counts chat completion requests that passed validation.
	ChatRequests int
	// Served counts answers sent (including spoiled ones).
	Served int
	// Steps counts engine steps.
	Steps int
	// BatchedPrefills counts requests whose prefill finished in a step
	// with other sequences (the ones batch noise can move).
	BatchedPrefills int
	// FaultsFired counts fired faults by kind.
	FaultsFired map[FaultKind]int
	// ReplayServed, ReplayMissing and ReplayMismatch count replayed
	// answers, requests the receipt had no answer for, and answers whose
	// label count did not match the prompt's options; ReplayOmitted is the
	// receipt's answers that carry no probabilities.
	ReplayServed, ReplayMissing, ReplayMismatch, ReplayOmitted int
	// Dead says whether the engine is dead.
	Dead bool
}

// Server is the vLLM twin as an http.Handler. Close stops its engine.
type Server struct {
	cfg config
	// eng is engine 0, which also holds the API server's frontend and the
	// clock; engines are all of them (WithDataParallel), lb spreads
	// requests over them.
	eng     *engine
	engines []*engine
	lb      *balancer
	mux     *http.ServeMux
	cancel  context.CancelFunc
	done    chan struct{}
	// apiKeys are the sha256 of --api-key's keys; guarded the path
	// prefixes they guard.
	apiKeys [][32]byte
	guarded []string
	// images resolves the requests' image data URLs (imageCache).
	images *imageCache
	// bodies are buffers for chat request bodies (readBody).
	bodies sync.Pool

	mu     sync.Mutex
	rng    *mrand.Rand // network jitter
	seq    int
	faults []*faultState
	stats  Stats
}

// New builds a twin and starts its engine. Defaults: ProfileFast, time
// scale 1, no slowdown, DefaultBatchNoise, DefaultSpread, no faults, dev
// mode off.
func New(opts ...Option) (*Server, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("stub: %w", err)
		}
	}
	if err := cfg.profile.Validate(); err != nil {
		return nil, fmt.Errorf("stub: %w", err)
	}
	if cfg.model == "" {
		cfg.model = cfg.profile.Model
	}
	s := &Server{cfg: cfg, done: make(chan struct{}), rng: mrand.New(mrand.NewPCG(1, 2)), stats: Stats{FaultsFired: map[FaultKind]int{}},
		images: newImageCache(imageCacheBytes)}
	for _, f := range cfg.faults {
		s.faults = append(s.faults, newFaultState(f))
	}
	if cfg.replay != nil {
		s.stats.ReplayOmitted = cfg.replay.Omitted
	}
	s.eng = newEngine(cfg.profile, cfg.model, cfg.timeScale, cfg.slowdown)
	s.engines = []*engine{s.eng}
	for i := 1; i < cfg.vllm.dataParallel; i++ {
		e := newEngine(cfg.profile, cfg.model, cfg.timeScale, cfg.slowdown)
		e.index, e.clock = i, s.eng.clock
		e.reset()
		s.engines = append(s.engines, e)
	}
	s.lb = newBalancer(s.engines)
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		defer close(s.done)
		var wg sync.WaitGroup
		for _, e := range s.engines {
			wg.Go(func() { e.run(ctx) })
		}
		wg.Wait()
	}()
	s.mux = http.NewServeMux()
	var routes []string
	handle := func(pattern string, h http.HandlerFunc) {
		s.mux.HandleFunc(pattern, h)
		_, path, _ := strings.Cut(pattern, " ")
		if path == "" {
			path = pattern
		}
		routes = append(routes, path)
	}
	handle("POST /v1/chat/completions", s.chat)
	handle("POST /tokenize", s.tokenize)
	handle("POST /detokenize", s.detokenize)
	handle("GET /v1/models", s.models)
	handle("GET /version", s.version)
	handle("GET /health", s.health)
	handle("/ping", s.ping)
	handle("GET /load", s.load)
	handle("/metrics", s.metrics)
	if cfg.devMode {
		handle("POST /reset_prefix_cache", s.resetPrefixCache)
		handle("POST /reset_mm_cache", s.resetMMCache)
		handle("POST /reset_encoder_cache", s.resetEncoderCache)
	}
	for _, k := range cfg.vllm.apiKeys {
		s.apiKeys = append(s.apiKeys, sha256.Sum256([]byte(k)))
	}
	s.guarded = guardedPrefixes(routes)
	return s, nil
}

// ServeHTTP serves vLLM's OpenAI-compatible API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.denied(w, r) {
		return
	}
	if strings.HasPrefix(r.URL.Path, "/metrics") {
		// vLLM mounts its prometheus app on ^/metrics(?P<path>.*)$: no redirect.
		s.metrics(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Close stops the engine; requests in flight fail.
func (s *Server) Close() error {
	s.killAll()
	s.cancel()
	<-s.done
	return nil
}

// Profile is the twin's profile.
func (s *Server) Profile() Profile { return s.cfg.profile }

// Model is the served model name.
func (s *Server) Model() string { return s.cfg.model }

// TimeScale is how much faster than real time the twin runs.
func (s *Server) TimeScale() float64 { return s.cfg.timeScale }

// KillEngine kills the engine as a crashed EngineCore would: requests in
// flight and new ones fail with 500 EngineDeadError, /health answers 503.
func (s *Server) KillEngine() { s.killAll() }

// ReviveEngine restarts a dead engine with empty caches and fresh
// metrics (counters restart at 0 with new _created times, as a restarted
// server's do).
func (s *Server) ReviveEngine() {
	for _, e := range s.engines {
		e.revive()
	}
}

// Stats returns the twin's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	st := s.stats
	st.FaultsFired = make(map[FaultKind]int, len(s.stats.FaultsFired))
	for k, v := range s.stats.FaultsFired {
		st.FaultsFired[k] = v
	}
	s.mu.Unlock()
	for _, e := range s.engines {
		e.mu.Lock()
		st.Steps += e.steps
		st.BatchedPrefills += e.batched
		st.Dead = st.Dead || e.dead
		e.mu.Unlock()
	}
	return st
}

func (s *Server) version(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": s.reportedVersion()})
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	if s.anyDead() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	created := time.Now().Unix()
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{map[string]any{
		"id": s.cfg.model, "object": "model", "created": created, "owned_by": "vllm",
		"root": s.cfg.profile.Root, "parent": nil, "max_model_len": s.cfg.profile.MaxModelLen,
		"permission": []any{map[string]any{
			"id": "modelperm-vetbenchtwin", "object": "model_permission", "created": created,
			"allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true,
			"allow_search_indices": false, "allow_view": true, "allow_fine_tuning": false,
			"organization": "*", "group": nil, "is_blocking": false,
		}},
	}}})
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", ContentType)
	_ = s.writeMetrics(w)
}

// resetPrefixCache resets every engine's prefix cache; like vLLM (a
// utility call to all engines, "only the result from the first engine is
// returned", core_client.py) it answers engine 0's success.
func (s *Server) resetPrefixCache(w http.ResponseWriter, _ *http.Request) {
	ok := false
	for i, e := range s.engines {
		e.mu.Lock()
		done := e.c.pool.reset()
		e.mu.Unlock()
		if i == 0 {
			ok = done
		}
	}
	writeJSON(w, http.StatusOK, map[string]bool{"success": ok})
}

func (s *Server) resetMMCache(w http.ResponseWriter, _ *http.Request) {
	s.eng.mu.Lock()
	s.eng.fe.mm.reset()
	s.eng.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (s *Server) resetEncoderCache(w http.ResponseWriter, _ *http.Request) {
	for _, e := range s.engines {
		e.mu.Lock()
		e.c.enc.reset()
		e.mu.Unlock()
	}
	w.WriteHeader(http.StatusOK)
}

// MaxLogprobTokenIDs is the most logprob_token_ids one request may name
// (MAX_LOGPROB_TOKEN_IDS, vllm/sampling_params.py); --max-logprobs bounds
// top_logprobs only.
const MaxLogprobTokenIDs = 128

// maxBody bounds a request body (two large images fit many times over).
const maxBody = 64 << 20

// roundTrip draws one request's network round trip (model seconds).
func (s *Server) roundTrip() float64 {
	s.mu.Lock()
	u := s.rng.Float64()
	s.mu.Unlock()
	return max(0, s.eng.t.roundTrip(u)-s.cfg.allowance.Seconds()*s.cfg.timeScale)
}

// Model time on the request path is computed from when the handler
// started: the request reaches the frontend half a round trip later (the
// handler sleeps until then, so the frontend queue forms in model-time
// order), and every later stage is an absolute model time, so the twin's
// own JSON and hashing work and a late timer do not stretch the model.

func (s *Server) checkModel(name string) *apiError {
	if name != "" && name != s.cfg.model {
		return &apiError{Status: http.StatusNotFound, Type: "NotFoundError", Param: "model",
			Message: fmt.Sprintf("The model `%s` does not exist.", name)}
	}
	return nil
}

type tokenizeRequest struct {
	Model               string        `json:"model"`
	Prompt              *string       `json:"prompt"`
	Messages            []wireMessage `json:"messages"`
	AddSpecialTokens    *bool         `json:"add_special_tokens"`
	AddGenerationPrompt *bool         `json:"add_generation_prompt"`
	ReturnTokenStrs     bool          `json:"return_token_strs"`
}

// tokenize serves POST /tokenize: a prompt (special tokens added unless
// add_special_tokens is false) or chat messages (through the template).
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	recv := s.eng.clock.now()
	var req tokenizeRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		writeError(w, badRequest("body", "read body: %v", err))
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, jsonDecodeError(err))
		return
	}
	if e := s.checkModel(req.Model); e != nil {
		writeError(w, e)
		return
	}
	var ids []int
	var pieces []string
	switch {
	case req.Prompt != nil:
		if req.AddSpecialTokens == nil || *req.AddSpecialTokens {
			ids, pieces = append(ids, TokenBOS), append(pieces, "<bos>")
		}
		for _, t := range Tokenize(*req.Prompt) {
			ids, pieces = append(ids, t.ID), append(pieces, t.Piece)
		}
	case len(req.Messages) > 0:
		msgs, e := (&chatRequest{Messages: req.Messages, body: body}).messages(s.images)
		if e != nil {
			writeError(w, e)
			return
		}
		gen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt
		p, err := renderChat(msgs, gen, false, s.cfg.profile.ImageTokenBudget)
		if err != nil {
			writeError(w, badRequest("messages", "%v", err))
			return
		}
		ids = p.Tokens
	default:
		writeError(w, validationError("prompt", "{'type': 'missing', 'loc': ('body', 'prompt'), 'msg': 'Field required'}"))
		return
	}
	rt := s.roundTrip()
	if s.eng.clock.sleepUntil(r.Context(), recv+rt/2) != nil {
		return
	}
	_, done := s.tokenizeFrontend(recv + rt/2)
	if s.eng.clock.sleepUntil(r.Context(), done+rt/2) != nil {
		return
	}
	var strs any
	if req.ReturnTokenStrs {
		strs = pieces
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": s.cfg.profile.MaxModelLen,
		"tokens": ids, "token_strs": strs})
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Tokens []int  `json:"tokens"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&req); err != nil {
		writeError(w, jsonDecodeError(err))
		return
	}
	if e := s.checkModel(req.Model); e != nil {
		writeError(w, e)
		return
	}
	var b strings.Builder
	for _, id := range req.Tokens {
		b.WriteString(tokenText(id))
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": b.String()})
}

// chat serves POST /v1/chat/completions.
func (s *Server) chat(w http.ResponseWriter, hr *http.Request) {
	recv := s.eng.clock.now()
	rid := hr.Header.Get("X-Request-Id")
	if rid == "" {
		rid = newRequestID()
	}
	w.Header().Set("X-Request-Id", rid)
	body, release, err := s.readBody(hr)
	if err != nil {
		writeError(w, badRequest("body", "read body: %v", err))
		return
	}
	defer release()
	var req chatRequest
	if err := s.decodeChat(body, &req); err != nil {
		writeError(w, jsonDecodeError(err))
		return
	}
	if s.cfg.vllm.legacy {
		req.LogprobTokenIDs = nil // before PR #43463: an unknown field, ignored
	}
	topK, e := req.validate()
	if e != nil {
		writeError(w, e)
		return
	}
	if e := s.checkModel(req.Model); e != nil {
		writeError(w, e)
		return
	}
	msgs, e := req.messages(s.images)
	if e != nil {
		writeError(w, e)
		return
	}
	images := 0
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Image != nil {
				images++
			}
		}
	}
	if images > s.cfg.profile.LimitImages {
		writeError(w, badRequest("image", "At most %d image(s) may be provided in one prompt. Set `--limit-mm-per-prompt` to increase this limit.", s.cfg.profile.LimitImages))
		return
	}
	thinking := false
	if v, ok := req.ChatTemplateKwargs["enable_thinking"].(bool); ok {
		thinking = v
	}
	p, err := renderChat(msgs, req.AddGenerationPrompt == nil || *req.AddGenerationPrompt, thinking, s.cfg.profile.ImageTokenBudget)
	if err != nil {
		writeError(w, badRequest("messages", "%v", err))
		return
	}
	maxLen := s.cfg.profile.MaxModelLen
	maxTokens := maxLen - len(p.Tokens)
	if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	if req.MaxCompletionTokens != nil {
		maxTokens = *req.MaxCompletionTokens
	}
	if e := promptTooLong(&req, len(p.Tokens), maxLen); e != nil {
		writeError(w, e)
		return
	}
	if maxTokens < 1 {
		writeError(w, badRequest("max_tokens", "max_tokens must be at least 1, got %d.", maxTokens))
		return
	}
	if len(p.Tokens)+maxTokens > maxLen {
		writeError(w, badRequest("input_tokens",
			"This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains at least %d input tokens, for a total of at least %d tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=%d)",
			maxLen, maxTokens, len(p.Tokens), len(p.Tokens)+maxTokens, len(p.Tokens)))
		return
	}
	if e := req.checkSampling(maxTokens); e != nil {
		writeError(w, e)
		return
	}
	if e := s.samplingError(&req, topK); e != nil {
		writeError(w, e)
		return
	}

	fault := s.pickFault(rid)
	if fault != nil {
		switch fault.Kind {
		case FaultHTTP500:
			writeError(w, &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: "injected fault: internal server error"})
			return
		case FaultHTTP429:
			ra := fault.RetryAfter
			if ra == 0 {
				ra = 1
			}
			w.Header().Set("Retry-After", strconv.Itoa(ra))
			writeError(w, &apiError{Status: http.StatusTooManyRequests, Type: "RateLimitError", Message: "injected fault: too many requests"})
			return
		case FaultHTTP400:
			writeError(w, badRequest("", "injected fault: bad request"))
			return
		case FaultEngineDead:
			s.killAll()
		}
	}
	ctx := hr.Context()
	if s.anyDead() {
		writeError(w, &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: EngineDeadMessage})
		return
	}
	rt := s.roundTrip()
	digests := make([]string, len(p.Images))
	for i, im := range p.Images {
		digests[i] = im.Digest
	}
	if s.eng.clock.sleepUntil(ctx, recv+rt/2) != nil {
		return
	}
	eng, arrival, ready := s.handOff(recv+rt/2, digests, len(p.Tokens))
	r := &request{prompt: p, hashes: blockHashes(p, s.cfg.profile.BlockSize, req.CacheSalt), maxTokens: maxTokens,
		arrival: arrival, done: make(chan struct{})}
	decodeFaults(r, &req, fault, maxTokens)
	s.cfg.profile.applyFeatures(r, &req)
	if err := eng.submit(r, ready); err != nil {
		writeError(w, &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: EngineDeadMessage})
		return
	}
	if req.streaming() {
		s.stream(w, hr, streamCall{eng: eng, rid: rid, req: &req, topK: topK, r: r, fault: fault, rt: rt, ready: ready})
		return
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		eng.abort(r)
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
	resp := s.answer(rid, &req, topK, r)
	if fault != nil {
		fault.spoil(resp)
	}
	out, err := marshal(resp.wire())
	if err != nil {
		writeError(w, &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: err.Error()})
		return
	}
	if s.eng.clock.sleepUntil(ctx, r.finished+rt/2) != nil {
		return
	}
	s.mu.Lock()
	s.stats.Served++
	s.mu.Unlock()
	if fault != nil {
		switch fault.Kind {
		case FaultSlow:
			d := fault.Delay
			if d == 0 {
				d = 30 * time.Second
			}
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return
			}
		case FaultReset:
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler) // no hijacker (HTTP/2): abort the stream
		case FaultTruncate:
			out = out[:len(out)/2]
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// readBody reads a request body (at most maxBody bytes, as io.ReadAll
// of a LimitReader would) into a pooled buffer sized by Content-Length;
// release returns the buffer, once nothing refers to the body any more.
func (s *Server) readBody(r *http.Request) (body []byte, release func(), err error) {
	bp, _ := s.bodies.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	buf := (*bp)[:0]
	if n := r.ContentLength; n > 0 && int64(cap(buf)) < min(n, maxBody)+1 {
		buf = make([]byte, 0, min(n, maxBody)+1) // +1: io.EOF without a regrowth
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
