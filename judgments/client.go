package judgments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// DefaultTopLogprobs is vLLM's default --max-logprobs, the most top_logprobs a
// stock server returns.
const DefaultTopLogprobs = 20

// ErrNoTokenizer means the server has no /tokenize endpoint (404).
var ErrNoTokenizer = errors.New("server has no /tokenize endpoint")

// ErrTruncatedBody means a 200 answer's body ended before its JSON did (a
// cut connection, a proxy that gave up), as opposed to a body that is not
// the JSON expected.
var ErrTruncatedBody = errors.New("body ends before its JSON does")

// StatusError is a non-200 answer from the server, with vLLM's error body.
type StatusError struct {
	Endpoint   string
	Code       int
	Type       string
	Param      string
	Message    string
	RetryAfter time.Duration // from a Retry-After header, 0 when absent
	// KeySent says whether the request carried a bearer token; it decides
	// what a 401 means (see AuthHint). The key itself is never kept.
	KeySent bool
}

// ErrUnauthorized matches every 401 answer (a *StatusError with Code 401).
var ErrUnauthorized = errors.New("HTTP 401 Unauthorized")

// AuthHint says what a 401 means for the run: vLLM's --api-key guards
// /v1/*, /tokenize and the cache resets, and the run sent no key, or sent
// one the server refused.
func AuthHint(keySent bool) string {
	if keySent {
		return "the key was refused (check VETBENCH_API_KEY)"
	}
	return "the server wants an API key (VETBENCH_API_KEY)"
}

// Unauthorized is the 401 a caller of another endpoint (/v1/models,
// /metrics) reports, in the client's words; endpoint may be empty when the
// caller's error already names it.
func Unauthorized(endpoint string, keySent bool) *StatusError {
	return &StatusError{Endpoint: endpoint, Code: http.StatusUnauthorized, KeySent: keySent}
}

// ImageLimit says whether err is vLLM's refusal of a prompt's images
// (validate_num_items: a 400 on param "image", "At most N image(s) may be
// provided in one prompt."), and N: 0 for a model without a vision tower
// or a server started with --limit-mm-per-prompt '{"image": 0}'. Every
// request with more images than N is refused the same way, so a caller
// stops asking instead of counting failures. raisable says vLLM named
// the flag that raises N (the model takes more); without it N is the
// model's own limit.
func ImageLimit(err error) (limit int, raisable, ok bool) {
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest {
		return 0, false, false
	}
	rest, found := strings.CutPrefix(se.Message, "At most ")
	if !found || !strings.Contains(rest, " image(s) may be provided in one prompt") {
		return 0, false, false
	}
	n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ' ')])
	return n, strings.Contains(rest, "--limit-mm-per-prompt"), err == nil && n >= 0
}

// Is makes a 401 match ErrUnauthorized.
func (e *StatusError) Is(target error) bool {
	return target == ErrUnauthorized && e.Code == http.StatusUnauthorized
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("HTTP %d", e.Code)
	if e.Endpoint != "" {
		msg = e.Endpoint + ": " + msg
	}
	if e.Code == http.StatusUnauthorized {
		// vLLM's body is {"error": "Unauthorized"}: the status says it all.
		return msg + ": " + AuthHint(e.KeySent)
	}
	if e.Type != "" {
		msg += " " + e.Type
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return msg
}

// Client scores judgments against one OpenAI-compatible server.
type Client struct {
	baseURL     string
	model       string
	apiKey      string
	http        *http.Client
	mode        Mode
	topLogprobs int
	timeout     time.Duration
	control     time.Duration // bounds /tokenize; 0: timeout
	secret      Secret        // the key, redacted from what servers send
	idPrefix    string
	dispatch    Dispatch

	mu       sync.Mutex
	controls Controls // tokenize cache: one /tokenize per control per client

	wire    *wire     // encoded body parts, built once (wire.go)
	buffers sync.Pool // *bytes.Buffer: response bodies
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithModel sets the model name sent in every request.
func WithModel(m string) ClientOption { return func(c *Client) { c.model = m } }

// WithAPIKey sends "Authorization: Bearer <key>". The key never leaves the client.
func WithAPIKey(k string) ClientOption { return func(c *Client) { c.apiKey = k } }

// WithHTTPClient replaces the default HTTP client.
func WithHTTPClient(h *http.Client) ClientOption { return func(c *Client) { c.http = h } }

// WithMode sets the scoring mode (default ModeTokenIDs).
func WithMode(m Mode) ClientOption { return func(c *Client) { c.mode = m } }

// WithTopLogprobs sets top_logprobs in ModeTopLogprobs (default DefaultTopLogprobs).
func WithTopLogprobs(n int) ClientOption { return func(c *Client) { c.topLogprobs = n } }

// WithRequestTimeout bounds each HTTP request (0 = no bound beyond ctx).
func WithRequestTimeout(d time.Duration) ClientOption { return func(c *Client) { c.timeout = d } }

// WithControlTimeout bounds each control request (/tokenize): a server
// that does not answer one is found out in the control timeout, not in a
// judgment's (0 = the request timeout).
func WithControlTimeout(d time.Duration) ClientOption { return func(c *Client) { c.control = d } }

// WithRequestIDPrefix sets the X-Request-Id prefix (see RequestID).
func WithRequestIDPrefix(p string) ClientOption { return func(c *Client) { c.idPrefix = p } }

// DefaultIdleConnsPerHost is the default transport's idle connections per
// host: at least one per request in flight, so that no request at the
// levels vetbench runs (up to 64 judgments, each up to 4 questions at
// once) pays for a new connection.
const DefaultIdleConnsPerHost = 256

// IdleConnTimeout is how long a client keeps an idle connection: under
// vLLM's keep-alive (uvicorn's timeout_keep_alive, VLLM_HTTP_TIMEOUT_KEEP_ALIVE,
// 5 s), so the client drops a connection before the server closes it and
// never sends a request down one the server is closing (a POST is not
// retried by net/http: the request would fail).
const IdleConnTimeout = 4 * time.Second

// NewTransport is an HTTP transport that keeps an idle connection for
// each of inFlight requests (at least DefaultIdleConnsPerHost): net/http
// keeps 2 by default, and every request beyond them would dial anew.
// Idle connections are dropped after IdleConnTimeout.
func NewTransport(inFlight int) *http.Transport {
	return &http.Transport{MaxIdleConnsPerHost: max(inFlight, DefaultIdleConnsPerHost), IdleConnTimeout: IdleConnTimeout}
}

// NewClient returns a client for the server at baseURL (no trailing /v1).
func NewClient(baseURL string, opts ...ClientOption) *Client {
	c := &Client{
		baseURL:     strings.TrimRight(baseURL, "/"),
		http:        &http.Client{Transport: NewTransport(0)},
		mode:        ModeTokenIDs,
		topLogprobs: DefaultTopLogprobs,
		idPrefix:    "vetbench",
		dispatch:    DispatchInOrder,
		controls:    Controls{},
	}
	for _, o := range opts {
		o(c)
	}
	c.secret = Secret(c.apiKey)
	c.http = c.secret.Guard(c.http) // the key masked in answers; redirects within the origin
	c.wire = newWire(c.model, c.mode, c.topLogprobs)
	return c
}

// Mode is the client's scoring mode.
func (c *Client) Mode() Mode { return c.mode }

// Model is the model name the client sends.
func (c *Client) Model() string { return c.model }

// BaseURL is the server's base URL.
func (c *Client) BaseURL() string { return c.baseURL }

// HTTPClient is the client's HTTP client, for callers that read other
// endpoints of the same server (/metrics, /version).
func (c *Client) HTTPClient() *http.Client { return c.http }

// Authorize adds the client's credentials to a request of the caller's.
func (c *Client) Authorize(req *http.Request) { Authorize(req, c.apiKey) }

// Authorize sends key as a bearer token on req (nothing when key is
// empty): the one place an API key goes onto a request, whichever client
// sends it.
func Authorize(req *http.Request, key string) {
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
}

// Tokenize pins each control string to its token id with POST /tokenize, once
// per control for the life of the client. A control that is not exactly one
// token is an error: it cannot be scored by a single next-token logprob.
func (c *Client) Tokenize(ctx context.Context, controls []string) (Controls, error) {
	out := Controls{}
	for i, ctrl := range controls {
		c.mu.Lock()
		id, ok := c.controls[ctrl]
		c.mu.Unlock()
		if !ok {
			ids, err := c.tokenize(ctx, ctrl)
			if err != nil {
				return nil, err
			}
			if len(ids) != 1 {
				return nil, fmt.Errorf("tokenize %q: %d tokens, want 1: native Choice supports %d options on this tokenizer; got %d",
					ctrl, len(ids), i, len(controls))
			}
			id = ids[0]
			c.mu.Lock()
			c.controls[ctrl] = id
			c.mu.Unlock()
		}
		out[ctrl] = id
	}
	return out, nil
}

type tokenizeRequest struct {
	Model            string `json:"model,omitempty"`
	Prompt           string `json:"prompt"`
	AddSpecialTokens bool   `json:"add_special_tokens"`
}

type tokenizeResponse struct {
	Count  int   `json:"count"`
	Tokens []int `json:"tokens"`
}

func (c *Client) tokenize(ctx context.Context, text string) ([]int, error) {
	body, err := json.Marshal(tokenizeRequest{Model: c.model, Prompt: text})
	if err != nil {
		return nil, err
	}
	var resp tokenizeResponse
	if err := c.post(ctx, "/tokenize", "", body, &resp); err != nil {
		var se *StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound {
			return nil, fmt.Errorf("tokenize %q: %w: %w", text, ErrNoTokenizer, err)
		}
		return nil, fmt.Errorf("tokenize %q: %w", text, err)
	}
	return resp.Tokens, nil
}

// ChatRequest is the scoring request on the wire: go-openai's request plus
// vLLM's fields. The shadowing fields exist because go-openai drops
// temperature 0 and max_tokens 0 (omitempty); these always reach the server.
type ChatRequest struct {
	openai.ChatCompletionRequest
	MaxTokens              int            `json:"max_tokens"`
	Temperature            float32        `json:"temperature"`
	Logprobs               bool           `json:"logprobs"`
	TopLogprobs            int            `json:"top_logprobs,omitempty"`
	LogprobTokenIDs        []int          `json:"logprob_token_ids,omitempty"`
	ReturnTokensAsTokenIDs bool           `json:"return_tokens_as_token_ids,omitempty"`
	AddGenerationPrompt    bool           `json:"add_generation_prompt"`
	ChatTemplateKwargs     map[string]any `json:"chat_template_kwargs"`
}

// BuildRequest builds the scoring request of one question about one item.
// urls are the item's image data URLs (built once per item).
func BuildRequest(model string, mode Mode, topLogprobs int, it Item, q Question, controls Controls, urls []string) (ChatRequest, error) {
	parts, err := Content(it, q, urls)
	if err != nil {
		return ChatRequest{}, err
	}
	return chatRequest(model, mode, topLogprobs, q, controls, parts)
}

// chatRequest is the request of q with the given content parts.
func chatRequest(model string, mode Mode, topLogprobs int, q Question, controls Controls, parts []openai.ChatMessagePart) (ChatRequest, error) {
	r := ChatRequest{
		ChatCompletionRequest: openai.ChatCompletionRequest{
			Model:    model,
			Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, MultiContent: parts}},
		},
		MaxTokens:           1,
		Temperature:         0,
		Logprobs:            true,
		AddGenerationPrompt: true,
		ChatTemplateKwargs:  map[string]any{"enable_thinking": false},
	}
	switch mode {
	case ModeTokenIDs:
		for _, ctrl := range q.Controls() {
			id, ok := controls[ctrl]
			if !ok {
				return ChatRequest{}, &CandidateError{Question: q.ID, Control: ctrl, Err: fmt.Errorf("no token id pinned: %w", ErrMissingCandidate)}
			}
			r.LogprobTokenIDs = append(r.LogprobTokenIDs, id)
		}
		r.ReturnTokensAsTokenIDs = true
	case ModeTopLogprobs:
		r.TopLogprobs = topLogprobs
	default:
		return ChatRequest{}, fmt.Errorf("unknown scoring mode %q", mode)
	}
	return r, nil
}

// chatResponse is the slice of the response that scoring reads, decoded
// with nullable logprobs: go-openai's float64 would turn a null into a 0
// (p = 1).
type chatResponse struct {
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
}

// The parts of chatResponse, aliases of unnamed structs: json.Unmarshal's
// errors name no struct for them, as before the fast decoder (decode.go)
// needed to name them.
type (
	chatChoice = struct {
		Logprobs *chatLogprobs `json:"logprobs"`
	}
	chatLogprobs = struct {
		Content []chatPosition `json:"content"`
	}
	chatPosition = struct {
		Token       string         `json:"token"`
		TopLogprobs []TokenLogprob `json:"top_logprobs"`
	}
	chatUsage = struct {
		PromptTokens        int               `json:"prompt_tokens"`
		PromptTokensDetails *chatTokenDetails `json:"prompt_tokens_details"`
	}
	chatTokenDetails = struct {
		CachedTokens *int `json:"cached_tokens"`
	}
)

// ScoreResponse turns one chat completion body, as the server sent it, into
// the question's answer: the first position's candidate logprobs (Candidates),
// the decision (Decide), the sampled token, the prompt tokens and, when the
// server sent them, the cached prompt tokens.
func ScoreResponse(q Question, body []byte, controls Controls, mode Mode) (Answer, error) {
	var resp chatResponse
	if err := unmarshalChat(body, &resp); err != nil {
		return Answer{}, fmt.Errorf("decode chat response: %w", err)
	}
	return score(q, &resp, controls, mode)
}

// unmarshalChat is json.Unmarshal(data, resp) for a fresh resp, by the
// fast decoder where it applies (decode.go).
func unmarshalChat(data []byte, resp *chatResponse) error {
	if decodeChat(data, resp) {
		return nil
	}
	*resp = chatResponse{}
	return json.Unmarshal(data, resp)
}

// score is ScoreResponse on a decoded response.
func score(q Question, resp *chatResponse, controls Controls, mode Mode) (Answer, error) {
	if len(resp.Choices) == 0 || resp.Choices[0].Logprobs == nil || len(resp.Choices[0].Logprobs.Content) == 0 {
		return Answer{}, &CandidateError{Question: q.ID, Err: ErrNoLogprobs}
	}
	first := resp.Choices[0].Logprobs.Content[0]
	sc, err := Candidates(q, Position{Sampled: first.Token, Entries: first.TopLogprobs}, controls, mode)
	if err != nil {
		return Answer{}, err
	}
	a, err := Decide(q, sc.Logprobs)
	if err != nil {
		return Answer{}, err
	}
	a.Sampled, a.OffFormat, a.DuplicateDecodings = sc.Sampled, sc.OffFormat, sc.DuplicateDecodings
	a.PromptTokens = resp.Usage.PromptTokens
	if d := resp.Usage.PromptTokensDetails; d != nil && d.CachedTokens != nil {
		n := *d.CachedTokens
		a.CachedTokens = &n
	}
	return a, nil
}

// Judgment is one item's answers, in question order.
type Judgment struct {
	Item         string
	Answers      []Answer
	PromptTokens int
	// Requests counts the scoring requests sent; Tokenizes the /tokenize
	// requests sent for the judgment (the typevet dispatch's, 0 otherwise).
	Requests  int
	Tokenizes int
}

// JudgeError is a failed judgment: which item, which question, and why.
type JudgeError struct {
	Item     string
	Question string
	Err      error
}

func (e *JudgeError) Error() string {
	return fmt.Sprintf("item %s: question %s: %v", e.Item, e.Question, e.Err)
}

func (e *JudgeError) Unwrap() error { return e.Err }

// Judge asks every question of spec about it, each as its own request
// carrying all the images: one after another, the first failure ending the
// judgment, or, with WithFanOut, all at once; with DispatchTypevet each
// control is tokenized anew first (tokenizeControls). Either way Answers
// are in question order and hold the answers before the first question
// (in order) that failed, whose error is the one returned; Requests counts
// the questions asked (with fan-out, all of them).
func (c *Client) Judge(ctx context.Context, spec Spec, controls Controls, it Item) (Judgment, error) {
	if c.dispatch == DispatchFanOut && len(spec.Questions) > 1 {
		return c.judgeAtOnce(ctx, spec, controls, it)
	}
	j := Judgment{Item: it.ID, Answers: make([]Answer, 0, len(spec.Questions))}
	if c.dispatch == DispatchTypevet {
		var err error
		if j.Tokenizes, err = c.tokenizeControls(ctx, spec, controls, it.ID); err != nil {
			return j, err
		}
	}
	for _, q := range spec.Questions {
		a, err := c.ask(ctx, it, q, controls)
		j.Requests++
		if err != nil {
			return j, &JudgeError{Item: it.ID, Question: q.ID, Err: err}
		}
		j.PromptTokens += a.PromptTokens
		j.Answers = append(j.Answers, a)
	}
	return j, nil
}

// judgeAtOnce asks every question concurrently and waits for all of them:
// a failure does not cancel the others, so which error is reported never
// depends on timing.
func (c *Client) judgeAtOnce(ctx context.Context, spec Spec, controls Controls, it Item) (Judgment, error) {
	n := len(spec.Questions)
	answers, errs := make([]Answer, n), make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() { answers[i], errs[i] = c.ask(ctx, it, spec.Questions[i], controls) })
	}
	answers[0], errs[0] = c.ask(ctx, it, spec.Questions[0], controls)
	wg.Wait()
	j := Judgment{Item: it.ID, Answers: make([]Answer, 0, n), Requests: n}
	for i, q := range spec.Questions {
		if errs[i] != nil {
			return j, &JudgeError{Item: it.ID, Question: q.ID, Err: errs[i]}
		}
		j.PromptTokens += answers[i].PromptTokens
		j.Answers = append(j.Answers, answers[i])
	}
	return j, nil
}

const chatPath = "/v1/chat/completions"

// ask sends one question: the body from the client's encoded parts (or,
// where they do not apply, json.Marshal of BuildRequest: the same bytes),
// the answer decoded once into the fields scoring reads.
func (c *Client) ask(ctx context.Context, it Item, q Question, controls Controls) (Answer, error) {
	parts, n, ok := c.wire.body(it, q, controls)
	if !ok {
		urls := make([]string, len(it.Images))
		for i, im := range it.Images {
			urls[i] = im.DataURL()
		}
		req, err := BuildRequest(c.model, c.mode, c.topLogprobs, it, q, controls, urls)
		if err != nil {
			return Answer{}, err
		}
		body, err := json.Marshal(req)
		if err != nil {
			return Answer{}, fmt.Errorf("encode request: %w", err)
		}
		parts, n = [][]byte{body}, len(body)
	}
	var resp chatResponse
	err := c.send(ctx, chatPath, RequestID(c.idPrefix, it.ID, q.ID), parts, n, c.timeout, func(data []byte) error {
		err := unmarshalChat(data, &resp)
		var se *json.SyntaxError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &se):
			return decodeError(chatPath, data, err)
		}
		// Valid JSON of the wrong shape: scoring's words, as ScoreResponse says it.
		return fmt.Errorf("decode chat response: %w", err)
	})
	if err != nil {
		return Answer{}, err
	}
	return score(q, &resp, controls, c.mode)
}

// post sends a JSON body and decodes a 200 answer into out.
func (c *Client) post(ctx context.Context, path, requestID string, body []byte, out any) error {
	timeout := c.timeout
	if c.control > 0 {
		timeout = c.control
	}
	return c.send(ctx, path, requestID, [][]byte{body}, len(body), timeout, func(data []byte) error {
		if err := json.Unmarshal(data, out); err != nil {
			return decodeError(path, data, err)
		}
		return nil
	})
}

// maxPooledBuffer is the largest response buffer kept for reuse: answers
// are a few hundred bytes; a huge one (an error page) is let go.
const maxPooledBuffer = 1 << 20

// send posts a body of n bytes, given as parts, and hands a 200 answer's
// body to decode; the bytes are the client's pooled buffer, valid only
// during the call. Anything else is a *StatusError.
func (c *Client) send(ctx context.Context, path, requestID string, parts [][]byte, n int, timeout time.Duration, decode func([]byte) error) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+path, &partsBody{parts: parts})
	if err != nil {
		return fmt.Errorf("%s: %w", path, RedactError(err))
	}
	req.ContentLength = int64(n)
	req.GetBody = func() (io.ReadCloser, error) { return &partsBody{parts: parts}, nil }
	req.Header.Set("Content-Type", "application/json")
	if requestID != "" {
		req.Header.Set("X-Request-Id", requestID)
	}
	c.Authorize(req)
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", path, RedactError(err))
	}
	defer res.Body.Close()
	buf, _ := c.buffers.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			c.buffers.Put(buf)
		}
	}()
	buf.Reset()
	limit := BodyLimit(path, res.StatusCode)
	if res.ContentLength > 0 {
		buf.Grow(int(min(res.ContentLength, limit+1, maxPooledBuffer)))
	}
	if _, err := buf.ReadFrom(io.LimitReader(res.Body, limit+1)); err != nil {
		return fmt.Errorf("%s: read body: %w", path, err)
	}
	data, over := buf.Bytes(), int64(buf.Len()) > limit
	if res.StatusCode != http.StatusOK {
		// The status is the news; a huge error body is read no further.
		return ParseStatusError(path, res, data[:min(int64(len(data)), limit)], c.secret)
	}
	if over {
		return fmt.Errorf("%s: %w: more than %d bytes (the cap on %s), not read further", path, ErrBodyTooLarge, limit, bodyKind(path))
	}
	return decode(data)
}

// Caps on a response body, by kind. A hostile or broken server's 2 GB
// reply is cut at its cap, so memory is bounded by the judgments in
// flight × MaxChatBody. The figures are far above what vLLM sends:
// a one-token chat answer with 20 top logprobs is ~3 KB, a /tokenize of
// a control ~100 bytes, an error body a few hundred.
const (
	MaxChatBody     = 1 << 20  // a chat completion (one position's logprobs)
	MaxTokenizeBody = 1 << 20  // a /tokenize answer
	MaxErrorBody    = 64 << 10 // any non-200 body: its message is what is kept
)

// ErrBodyTooLarge is a 200 answer over its kind's cap.
var ErrBodyTooLarge = errors.New("response body too large")

// BodyLimit is the cap on the body of an answer to path with status code.
func BodyLimit(path string, code int) int64 {
	switch {
	case code != http.StatusOK:
		return MaxErrorBody
	case path == "/tokenize":
		return MaxTokenizeBody
	}
	return MaxChatBody
}

func bodyKind(path string) string {
	if path == "/tokenize" {
		return "a tokenize answer"
	}
	return "a chat answer"
}

// decodeError is a 200 body that did not decode, saying whether it was cut short.
func decodeError(path string, data []byte, err error) error {
	if truncatedJSON(data, err) {
		return fmt.Errorf("%s: decode %d-byte body: %w: %w", path, len(data), ErrTruncatedBody, err)
	}
	return fmt.Errorf("%s: decode %d-byte body: %w", path, len(data), err)
}

// truncatedJSON says whether err is a syntax error at the very end of
// data: a JSON document cut short, whatever character it was cut at
// (encoding/json reports a cut inside a number as an invalid ' ').
func truncatedJSON(data []byte, err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se) && se.Offset >= int64(len(bytes.TrimRight(data, " \t\r\n")))
}

// MaxMessage is how many characters of an error's message, type and param
// are kept: vLLM's own fit whole (a context-length error runs to ~330, a
// validation error lists at most 10 entries), a hostile server's 64 KiB
// does not reach every receipt and log line.
const MaxMessage = 2000

// clip cuts s to MaxMessage characters (runes, so no UTF-8 sequence is
// split), marking the cut with "…".
func clip(s string) string {
	n := 0
	for i := range s {
		if n == MaxMessage {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// ParseStatusError reads the body of a non-200 answer to path (data: as
// much of it as was read, at most MaxErrorBody) as vLLM writes it:
// {"error": {message, type, param, code}} since 0.10.1, flat before, and
// {"error": "Unauthorized"} from the --api-key middleware; code may be an
// int or a string; any other body is its text. Retry-After is kept. Its
// strings have the key redacted, are made Printable (they reach the
// terminal), then are clipped to MaxMessage characters (in that order: a
// key cut in two would no longer match).
func ParseStatusError(path string, res *http.Response, data []byte, key Secret) *StatusError {
	e := statusError(path, res, data)
	safe := func(s string) string { return clip(Printable(key.Redact(s))) }
	e.Message, e.Type, e.Param = safe(e.Message), safe(e.Type), safe(e.Param)
	return e
}

// statusError is ParseStatusError before redaction and clipping.
func statusError(path string, res *http.Response, data []byte) *StatusError {
	e := &StatusError{Endpoint: path, Code: res.StatusCode}
	if res.Request != nil {
		e.KeySent = res.Request.Header.Get("Authorization") != ""
	}
	if s := res.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			e.RetryAfter = time.Duration(n) * time.Second
		} else if t, err := http.ParseTime(s); err == nil {
			e.RetryAfter = max(time.Until(t), 0)
		}
	}
	type info struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
	}
	var nested struct {
		Error *info `json:"error"`
	}
	var bare struct {
		Error string `json:"error"`
	}
	var flat info
	switch {
	case json.Unmarshal(data, &nested) == nil && nested.Error != nil:
		flat = *nested.Error
	case json.Unmarshal(data, &bare) == nil && bare.Error != "":
		// {"error": "Unauthorized"}: --api-key's 401 carries a string.
		flat.Message = bare.Error
	case json.Unmarshal(data, &flat) == nil && flat.Message != "":
	default:
		flat.Message = strings.TrimSpace(string(data))
	}
	e.Message, e.Type = flat.Message, flat.Type
	if flat.Param != nil {
		e.Param = *flat.Param
	}
	return e
}
