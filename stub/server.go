package stub

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Version is what /version reports: the vLLM release the twin follows,
// marked as the twin.
const Version = "0.30.0+vetbench.twin"

// Stats are the twin's own counters, for tests.
type Stats struct {
	// ChatRequests counts generation requests (chat and completions) that
	// passed validation.
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
	cfg Config
	// eng is engine 0, which also holds the API server's frontend and the
	// clock; engines are all of them (Config.DataParallel), lb spreads
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

// New builds a twin from cfg (its zero fields take their defaults; see
// Config) and starts its engine.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.Resolve()
	if err != nil {
		return nil, fmt.Errorf("stub: %w", err)
	}
	s := &Server{cfg: cfg, done: make(chan struct{}), rng: mrand.New(mrand.NewPCG(1, 2)), stats: Stats{FaultsFired: map[FaultKind]int{}},
		images: newImageCache(imageCacheBytes)}
	for _, f := range cfg.Faults {
		s.faults = append(s.faults, newFaultState(f))
	}
	if cfg.Replay != nil {
		s.stats.ReplayOmitted = cfg.Replay.Omitted
	}
	if cfg.Log != nil {
		cfg.Log = &syncWriter{w: cfg.Log} // engines and stream handlers log
	}
	s.eng = newEngine(cfg.Profile, cfg.Model, cfg.TimeScale, cfg.Slowdown, cfg.Log)
	s.engines = []*engine{s.eng}
	for i := 1; i < cfg.DataParallel; i++ {
		e := newEngine(cfg.Profile, cfg.Model, cfg.TimeScale, cfg.Slowdown, cfg.Log)
		e.index, e.clock, e.deadlines.engine = i, s.eng.clock, i
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
	handle("POST /v1/completions", s.completion)
	handle("POST /tokenize", s.tokenize)
	handle("POST /detokenize", s.detokenize)
	handle("GET /v1/models", s.models)
	handle("GET /version", s.version)
	handle("GET /health", s.health)
	handle("/ping", s.ping)
	handle("GET /load", s.load)
	handle("/metrics", s.metrics)
	if cfg.DevMode {
		handle("POST /reset_prefix_cache", s.resetPrefixCache)
		handle("POST /reset_mm_cache", s.resetMMCache)
		handle("POST /reset_encoder_cache", s.resetEncoderCache)
	}
	for _, k := range cfg.APIKeys {
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
func (s *Server) Profile() Profile { return s.cfg.Profile }

// Model is the served model name.
func (s *Server) Model() string { return s.cfg.Model }

// TimeScale is how much faster than real time the twin runs.
func (s *Server) TimeScale() float64 { return s.cfg.TimeScale }

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
		"id": s.cfg.Model, "object": "model", "created": created, "owned_by": "vllm",
		"root": s.cfg.Profile.Root, "parent": nil, "max_model_len": s.cfg.Profile.MaxModelLen,
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
	return max(0, s.eng.t.roundTrip(u)-s.eng.clock.model(s.cfg.TransportAllowance))
}

// Model time on the request path is computed from when the handler
// started: the request reaches the frontend half a round trip later (the
// handler sleeps until then, so the frontend queue forms in model-time
// order), and every later stage is an absolute model time, so the twin's
// own JSON and hashing work and a late timer do not stretch the model.

func (s *Server) checkModel(name string) *apiError {
	if name != "" && name != s.cfg.Model {
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
	recv := s.arrived(r)
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
		p, err := renderChat(msgs, gen, false, s.cfg.Profile.ImageTokenBudget)
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
	writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": s.cfg.Profile.MaxModelLen,
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
