// Package tokenstest is a small fake vLLM for tests of the token
// benchmarks: streamed chat completions in vLLM's chunk shape (role chunk,
// one chunk per token with continuous usage, the usage-only chunk,
// [DONE]), /v1/models, /version, /tokenize and a /metrics page with the
// gauges a sustained-decode cell reads (vllm:num_requests_running,
// vllm:num_requests_waiting, vllm:cache_config_info). It is not the twin:
// it has no timing model, only knobs that make each failure a benchmark
// must detect happen on purpose (a short stream, a loop, a queue, an error
// mid-stream, a small KV cache).
//
// Why a second fake beside the twin: its tests pick each request's fate
// with a Go func over what the request said (Tokens, Loop, Fail) and read
// back what each request sent (Requests), per request and without a
// timing model, which a vLLM twin configured by stub.Config (a model of a
// server, the same in-process, in a container and as vllmstub) cannot
// carry across a command line.
package tokenstest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Config sets the fake's behaviour. The zero value serves a model named
// "fake" that answers every request with exactly max_tokens tokens.
type Config struct {
	Model       string // default "fake"
	Root        string // /v1/models root; default "org/" + Model
	Version     string // /version; default "0.0.0-fake"
	MaxModelLen int    // default 1 << 20
	// TokenDelay and FirstDelay are real-time waits before each token and
	// before the first; 0 sends as fast as the client reads.
	TokenDelay, FirstDelay time.Duration
	// MaxRunning > 0 lets that many streams decode at once; the others
	// wait (and count as waiting on /metrics) until one ends.
	MaxRunning int
	// ExtraWaiting is added to num_requests_waiting on /metrics (a server
	// shared with someone else's load).
	ExtraWaiting int
	// BlockSize and GPUBlocks are the KV capacity vllm:cache_config_info
	// reports; 0 GPUBlocks leaves the metric out.
	BlockSize, GPUBlocks int
	// NoMetrics answers /metrics with 404; NoTokenize answers /tokenize so.
	NoMetrics, NoTokenize bool
	// Tokens, when set, says how many tokens a request gets (default its
	// max_tokens); fewer makes a short stream with finish_reason "stop".
	Tokens func(r Request) int
	// Loop, when set and true for a request, makes its text one repeated
	// 4-character cycle ("duct").
	Loop func(r Request) bool
	// Fail, when set, returns 0 for a normal request, an HTTP status to
	// answer before the stream, or -1 for an error object after the first
	// token.
	Fail func(r Request) int
	// Hostile, when set, names how a request's stream misbehaves after
	// its role chunk, none of which ever goes quiet: "endless" (a token
	// every TokenDelay past max_tokens, no finish, no usage chunk, no
	// [DONE]), "ping" (a ": ping" comment every 100 ms forever), "flood"
	// (4 KB content chunks as fast as they are read); "" a normal stream.
	Hostile func(r Request) string
	// CharsPerToken is how prompt text is counted (default 4); each image
	// adds ImageTokens (default 256); the chat template adds 10.
	CharsPerToken, ImageTokens int
}

// Request is what the fake read of one chat completion.
type Request struct {
	Seq       int // 1-based arrival order
	Text      string
	Images    []string
	MaxTokens int
	IgnoreEOS bool
	// Temperature is nil when the body did not send one.
	Temperature *float64
	Prompt      int // prompt tokens as counted
}

// Server is a running fake.
type Server struct {
	*httptest.Server
	cfg Config

	mu       sync.Mutex
	seq      int
	requests []Request
	running  int
	waiting  int
	slots    chan struct{}
	gen      int
}

// Start serves cfg on a loopback port; Close it when done.
func Start(cfg Config) *Server {
	if cfg.Model == "" {
		cfg.Model = "fake"
	}
	if cfg.Root == "" {
		cfg.Root = "org/" + cfg.Model
	}
	if cfg.Version == "" {
		cfg.Version = "0.0.0-fake"
	}
	if cfg.MaxModelLen == 0 {
		cfg.MaxModelLen = 1 << 20
	}
	if cfg.CharsPerToken == 0 {
		cfg.CharsPerToken = 4
	}
	if cfg.ImageTokens == 0 {
		cfg.ImageTokens = 256
	}
	s := &Server{cfg: cfg}
	if cfg.MaxRunning > 0 {
		s.slots = make(chan struct{}, cfg.MaxRunning)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"object": "list", "data": []map[string]any{{
			"id": cfg.Model, "object": "model", "root": cfg.Root, "max_model_len": cfg.MaxModelLen}}})
	})
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"version": cfg.Version})
	})
	mux.HandleFunc("POST /tokenize", s.tokenize)
	mux.HandleFunc("GET /metrics", s.metrics)
	s.Server = httptest.NewServer(mux)
	return s
}

// Requests returns the chat requests read so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count counts prompt tokens the way the fake does: template overhead,
// text at CharsPerToken, ImageTokens per image.
func (s *Server) Count(text string, images int) int {
	return 10 + (len([]rune(text))+s.cfg.CharsPerToken-1)/s.cfg.CharsPerToken + images*s.cfg.ImageTokens
}

type wireBody struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	MaxTokens     int      `json:"max_tokens"`
	IgnoreEOS     bool     `json:"ignore_eos"`
	Temperature   *float64 `json:"temperature"`
	Stream        bool     `json:"stream"`
	StreamOptions *struct {
		IncludeUsage         bool `json:"include_usage"`
		ContinuousUsageStats bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
}

func (b wireBody) read() (text string, images []string, err error) {
	var sb strings.Builder
	for i, m := range b.Messages {
		var str string
		if json.Unmarshal(m.Content, &str) == nil {
			sb.WriteString(str)
			continue
		}
		var parts []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL *struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			return "", nil, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		for _, p := range parts {
			switch {
			case p.Type == "text":
				sb.WriteString(p.Text)
			case p.Type == "image_url" && p.ImageURL != nil:
				images = append(images, p.ImageURL.URL)
			}
		}
	}
	return sb.String(), images, nil
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	if s.cfg.NoTokenize {
		http.NotFound(w, r)
		return
	}
	var b wireBody
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		writeError(w, 400, err.Error())
		return
	}
	text, images, err := b.read()
	if err != nil {
		writeError(w, 400, err.Error())
		return
	}
	n := s.Count(text, len(images))
	writeJSON(w, 200, map[string]any{"count": n, "max_model_len": s.cfg.MaxModelLen, "tokens": make([]int, n)})
}

// chat serves one streamed chat completion in vLLM's steps: read and
// record the request, refuse what vLLM would refuse (or the test injects),
// wait for a running slot, then stream the tokens.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	b, req, ok := s.readChat(w, r)
	if !ok {
		return
	}
	fail, ok := s.admit(w, b, req)
	if !ok {
		return
	}
	n := b.MaxTokens
	if s.cfg.Tokens != nil {
		n = min(s.cfg.Tokens(req), b.MaxTokens)
	}
	loop := s.cfg.Loop != nil && s.cfg.Loop(req)
	if !s.acquire(r) {
		return
	}
	defer s.release()
	s.stream(w, r, req, b.MaxTokens, n, loop, fail)
}

// readChat decodes a chat body and records it as the next Request; a body
// the fake cannot read is answered 400 (ok false). Only streams are served:
// the benchmarks this fake tests never ask for anything else.
func (s *Server) readChat(w http.ResponseWriter, r *http.Request) (b wireBody, req Request, ok bool) {
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&b); err != nil {
		writeError(w, 400, err.Error())
		return b, req, false
	}
	text, images, err := b.read()
	if err != nil {
		writeError(w, 400, err.Error())
		return b, req, false
	}
	if !b.Stream {
		writeError(w, 400, "the fake streams only")
		return b, req, false
	}
	s.mu.Lock()
	s.seq++
	req = Request{Seq: s.seq, Text: text, Images: images, MaxTokens: b.MaxTokens, IgnoreEOS: b.IgnoreEOS,
		Temperature: b.Temperature, Prompt: s.Count(text, len(images))}
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	return b, req, true
}

// admit answers, before any stream, what vLLM refuses (a prompt plus
// max_tokens over the context, in vLLM's words) and an injected HTTP
// failure; ok false when it answered. fail < 0 is an error the stream
// sends after its first token.
func (s *Server) admit(w http.ResponseWriter, b wireBody, req Request) (fail int, ok bool) {
	if req.Prompt+b.MaxTokens > s.cfg.MaxModelLen {
		writeError(w, 400, fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion).",
			s.cfg.MaxModelLen, req.Prompt+b.MaxTokens, req.Prompt, b.MaxTokens))
		return 0, false
	}
	if s.cfg.Fail != nil {
		fail = s.cfg.Fail(req)
	}
	if fail > 0 {
		writeError(w, fail, "injected failure")
		return fail, false
	}
	return fail, true
}

// acquire waits for a running slot (when MaxRunning bounds them), counted
// as waiting meanwhile so /metrics shows the queue, then counts the
// request as running; false when the client left while it waited.
func (s *Server) acquire(r *http.Request) bool {
	if s.slots != nil {
		select {
		case s.slots <- struct{}{}:
		default:
			s.mu.Lock()
			s.waiting++
			s.mu.Unlock()
			select {
			case s.slots <- struct{}{}:
				s.mu.Lock()
				s.waiting--
				s.mu.Unlock()
			case <-r.Context().Done():
				s.mu.Lock()
				s.waiting--
				s.mu.Unlock()
				return false
			}
		}
	}
	s.mu.Lock()
	s.running++
	s.mu.Unlock()
	return true
}

// release ends what acquire began.
func (s *Server) release() {
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
	if s.slots != nil {
		<-s.slots
	}
}

// sse writes one request's stream in vLLM's chunk shape.
type sse struct {
	w      http.ResponseWriter
	fl     http.Flusher
	r      *http.Request
	id     string
	model  string
	prompt int
}

// send writes one data line; false when the client is gone, so the
// stream stops at once as vLLM's does.
func (e sse) send(v any) bool {
	data, _ := json.Marshal(v)
	if _, err := fmt.Fprintf(e.w, "data: %s\n\n", data); err != nil {
		return false
	}
	e.fl.Flush()
	return e.r.Context().Err() == nil
}

// hostile streams mode (Config.Hostile) until the client goes away.
func (s *Server) hostile(e sse, mode string) {
	big := strings.Repeat("x", 4<<10)
	for k := 1; e.r.Context().Err() == nil; k++ {
		switch mode {
		case "endless":
			if d := s.cfg.TokenDelay; d > 0 {
				time.Sleep(d)
			}
			if !e.send(e.chunk(choice(map[string]any{"content": Word(1, k)}, nil), k)) {
				return
			}
		case "ping":
			time.Sleep(100 * time.Millisecond)
			if _, err := io.WriteString(e.w, ": ping\n\n"); err != nil {
				return
			}
			e.fl.Flush()
		case "flood":
			if !e.send(e.chunk(choice(map[string]any{"content": big}, nil), k)) {
				return
			}
		default:
			return
		}
	}
}

// chunk is a chat.completion.chunk with continuous usage after k tokens.
func (e sse) chunk(choices any, k int) map[string]any {
	usage := map[string]any{"prompt_tokens": e.prompt, "total_tokens": e.prompt + k, "completion_tokens": k}
	return map[string]any{"id": e.id, "object": "chat.completion.chunk", "created": 1, "model": e.model, "choices": choices, "usage": usage}
}

// choice is the one choice of a chunk.
func choice(delta map[string]any, finish any) []map[string]any {
	return []map[string]any{{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}
}

// stream sends the role chunk, n token chunks (the last with its finish
// reason: "length" at max_tokens, "stop" when shorter), the usage-only
// chunk and [DONE]; fail < 0 sends an error object after the first token
// instead, as vLLM does when the engine dies mid-stream.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req Request, maxTokens, n int, loop bool, fail int) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(200)
	e := sse{w: w, fl: w.(http.Flusher), r: r, id: fmt.Sprintf("chatcmpl-%d", req.Seq), model: s.cfg.Model, prompt: req.Prompt}
	if !e.send(e.chunk(choice(map[string]any{"role": "assistant", "content": ""}, nil), 0)) {
		return
	}
	if s.cfg.Hostile != nil && s.cfg.Hostile(req) != "" {
		s.hostile(e, s.cfg.Hostile(req))
		return
	}
	for k := 1; k <= n; k++ {
		if !s.delay(r, k) {
			return
		}
		var finish any
		if k == n {
			finish = "length"
			if n < maxTokens {
				finish = "stop"
			}
		}
		text := Word(req.Seq, k)
		if loop {
			text = "duct"
		}
		if !e.send(e.chunk(choice(map[string]any{"content": text}, finish), k)) {
			return
		}
		s.mu.Lock()
		s.gen++
		s.mu.Unlock()
		if k == 1 && fail < 0 {
			e.send(map[string]any{"error": map[string]any{"message": "injected error", "type": "InternalServerError", "param": nil, "code": 500}})
			e.send("[DONE]")
			return
		}
	}
	if !e.send(e.chunk([]any{}, n)) {
		return
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	e.fl.Flush()
}

// delay waits before token k (FirstDelay before the first, TokenDelay
// after); false when the client left meanwhile.
func (s *Server) delay(r *http.Request, k int) bool {
	d := s.cfg.TokenDelay
	if k == 1 {
		d = s.cfg.FirstDelay
	}
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

// Word is the fake's k-th token of request seq: a word that never forms
// an exact periodic tail.
func Word(seq, k int) string {
	h := uint32(seq)*2654435761 ^ uint32(k)*40503
	h ^= h >> 13
	h *= 0x5bd1e995
	return fmt.Sprintf(" w%x", h>>8)
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.NoMetrics {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	running, waiting, gen := s.running, s.waiting+s.cfg.ExtraWaiting, s.gen
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	m := s.cfg.Model
	fmt.Fprintf(w, "# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\n")
	fmt.Fprintf(w, "vllm:num_requests_running{engine=\"0\",model_name=%q} %d\n", m, running)
	fmt.Fprintf(w, "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n# TYPE vllm:num_requests_waiting gauge\n")
	fmt.Fprintf(w, "vllm:num_requests_waiting{engine=\"0\",model_name=%q} %d\n", m, waiting)
	fmt.Fprintf(w, "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n# TYPE vllm:generation_tokens_total counter\n")
	fmt.Fprintf(w, "vllm:generation_tokens_total{engine=\"0\",model_name=%q} %d\n", m, gen)
	if s.cfg.GPUBlocks > 0 {
		bs := s.cfg.BlockSize
		if bs == 0 {
			bs = 16
		}
		fmt.Fprintf(w, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n")
		fmt.Fprintf(w, "vllm:cache_config_info{block_size=\"%d\",cache_dtype=\"auto\",enable_prefix_caching=\"True\",engine=\"0\",gpu_memory_utilization=\"0.9\",num_gpu_blocks=\"%d\"} 1.0\n", bs, s.cfg.GPUBlocks)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "BadRequestError", "param": nil, "code": status}})
}
