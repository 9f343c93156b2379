package stub

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// message is one chat message with its content split into parts.
type message struct {
	Role  string
	Parts []part
}

// generateFields is what chat and completion requests share: the model, the
// length, sampling, logprobs by id, streaming, and what the twin refuses.
type generateFields struct {
	Model             string          `json:"model"`
	MaxTokens         *int            `json:"max_tokens"`
	Temperature       *float64        `json:"temperature"`
	LogprobTokenIDs   []int           `json:"logprob_token_ids"`
	ReturnAsTokenIDs  *bool           `json:"return_tokens_as_token_ids"`
	Stream            *bool           `json:"stream"`
	StreamOptions     json.RawMessage `json:"stream_options"`
	IgnoreEOS         *bool           `json:"ignore_eos"`
	MinTokens         *int            `json:"min_tokens"`
	N                 *int            `json:"n"`
	CacheSalt         string          `json:"cache_salt"`
	StructuredOutputs json.RawMessage `json:"structured_outputs"`
	ResponseFormat    json.RawMessage `json:"response_format"`
}

// chatRequest is the part of vLLM's ChatCompletionRequest the twin reads.
// Unknown fields are accepted and ignored, as vLLM's extra="allow" does.
type chatRequest struct {
	generateFields
	Messages            []wireMessage   `json:"messages"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Logprobs            *bool           `json:"logprobs"`
	TopLogprobs         json.RawMessage `json:"top_logprobs"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt"`
	ChatTemplateKwargs  map[string]any  `json:"chat_template_kwargs"`

	// body is the request as sent, for the rare question the generic
	// decoding of the messages cannot answer (contentMissing).
	body []byte
	// lifted are the images whose data URLs decodeChat took out of the
	// body before decoding it; the URLs read "\x00<index>" instead.
	lifted []*partImage
}

// liftMin is the shortest data URL decodeChat lifts out of a body.
const liftMin = 1 << 10

// decodeChat decodes a chat request body as json.Unmarshal does, but
// without scanning its image data URLs — nearly all of a request's bytes
// — character by character, several times over: each URL that stands as
// the value of a "url" or "image_url" key, unescaped, is taken out
// (liftImageURLs) and resolved through the image cache, and the rest is
// decoded. Should any of them not be a plain, decodable data URL, or the
// rest not decode, the whole body is decoded the ordinary way, so errors
// are exactly encoding/json's and the messages' own.
func (s *Server) decodeChat(body []byte, req *chatRequest) error {
	if rest, urls := liftImageURLs(body); urls != nil {
		ims := make([]*partImage, len(urls))
		ok := true
		for i, u := range urls {
			if ims[i], ok = s.images.getPlain(u); !ok {
				break
			}
		}
		if ok {
			var r chatRequest
			if json.Unmarshal(rest, &r) == nil {
				*req = r
				req.body, req.lifted = body, ims
				return nil
			}
		}
	}
	err := json.Unmarshal(body, req)
	req.body = body
	return err
}

// liftImageURLs finds the strings of body that are the value of a "url"
// or "image_url" key, start with "data:", hold no backslash and are at
// least liftMin long, and returns body with each replaced by "\u0000<i>"
// (i counts them) and their contents; nil when there are none, or when
// body holds "\u0000" itself. Strings are found as JSON finds them (a
// quote not escaped by an odd run of backslashes ends one), and a string
// only ever becomes another string, so the rest decodes to what body
// would, placeholders aside, and fails to decode exactly where body does.
func liftImageURLs(body []byte) ([]byte, [][]byte) {
	if len(body) < liftMin || bytes.Contains(body, []byte(`\u0000`)) {
		return nil, nil
	}
	var out []byte
	var urls [][]byte
	copied := 0  // body[:copied] is in out
	keyEnd := -1 // just past the last "url"/"image_url" string
	for i := 0; ; {
		q := bytes.IndexByte(body[i:], '"')
		if q < 0 {
			break
		}
		open := i + q
		end := open + 1
		for {
			q := bytes.IndexByte(body[end:], '"')
			if q < 0 {
				return nil, nil // unterminated: encoding/json will say so
			}
			end += q
			n := 0
			for k := end - 1; k > open && body[k] == '\\'; k-- {
				n++
			}
			if n%2 == 0 {
				break
			}
			end++
		}
		content := body[open+1 : end]
		switch {
		case keyEnd >= 0 && isColon(body[keyEnd:open]) && len(content) >= liftMin &&
			bytes.HasPrefix(content, []byte("data:")) && bytes.IndexByte(content, '\\') < 0:
			out = append(out, body[copied:open+1]...)
			out = append(out, `\u0000`...)
			out = strconv.AppendInt(out, int64(len(urls)), 10)
			urls = append(urls, content)
			copied = end
			keyEnd = -1
		case string(content) == "url" || string(content) == "image_url":
			keyEnd = end + 1
		default:
			keyEnd = -1
		}
		i = end + 1
	}
	if urls == nil {
		return nil, nil
	}
	return append(out, body[copied:]...), urls
}

// isColon says whether b is a colon between JSON whitespace.
func isColon(b []byte) bool {
	return string(bytes.Trim(b, " \t\r\n")) == ":"
}

// wireMessage is one chat message as sent. Content is decoded generically
// (a string, or a list of part objects) in the one pass that decodes the
// body: the image data URLs in it are most of a request's bytes, and
// holding them as json.RawMessage to decode again would scan each of them
// several times more (see BenchmarkTwinCPU).
type wireMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// apiError is a vLLM error answer: HTTP status = code.
type apiError struct {
	Status  int
	Type    string
	Message string
	Param   string // empty = null
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Message) }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "BadRequestError", Message: fmt.Sprintf(format, args...), Param: param}
}

// validationError is FastAPI/pydantic's request validation failure as
// vLLM's handler reports it: 400, type "Bad Request".
func validationError(param, msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "Bad Request", Param: param,
		Message: "1 validation error:\n  " + msg}
}

func writeError(w http.ResponseWriter, e *apiError) {
	var param any
	if e.Param != "" {
		param = e.Param
	}
	writeJSON(w, e.Status, map[string]any{"error": map[string]any{
		"message": e.Message, "type": e.Type, "param": param, "code": e.Status,
	}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// marshal encodes JSON without HTML escaping (as Python's json does).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// validate applies ChatCompletionRequest's field validators, in the order
// vLLM's pydantic model runs them.
func (r *chatRequest) validate() (topLogprobs int, err *apiError) {
	if len(r.Messages) == 0 {
		return 0, validationError("messages", "{'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}")
	}
	if len(r.TopLogprobs) > 0 && string(r.TopLogprobs) != "null" {
		n, perr := strconv.Atoi(string(r.TopLogprobs))
		if perr != nil {
			return 0, validationError("top_logprobs", "Value error, `top_logprobs` must be an integer.")
		}
		if n < 0 && n != -1 {
			return 0, validationError("top_logprobs", "Value error, `top_logprobs` must be a positive value or -1.")
		}
		if n != 0 && !r.logprobs() {
			return 0, validationError("top_logprobs", "Value error, when using `top_logprobs`, `logprobs` must be set to true.")
		}
		topLogprobs = n
	}
	if r.LogprobTokenIDs != nil && len(r.LogprobTokenIDs) == 0 {
		// [] decodes to an empty, non-nil slice; null and absent to nil.
		return 0, validationError("logprob_token_ids", "Value error, `logprob_token_ids` must not be an empty list. (parameter=logprob_token_ids)")
	}
	if len(r.LogprobTokenIDs) > 0 && !r.logprobs() {
		return 0, validationError("logprob_token_ids", "Value error, when using `logprob_token_ids`, `logprobs` must be set to true. (parameter=logprob_token_ids)")
	}
	if e := r.checkStreamOptions(); e != nil {
		return 0, e
	}
	return topLogprobs, r.checkServed()
}

// checkStreamOptions is the validator chat and completion requests share:
// stream_options only with stream. vLLM's validate_stream_options tests
// `data.get("stream_options") and not data.get("stream")`, so a falsy
// value ({}, null) passes it without stream.
func (r *generateFields) checkStreamOptions() *apiError {
	if pyTruthy(r.StreamOptions) && !r.streaming() {
		return validationError("stream_options", "Value error, Stream options can only be defined when `stream=True`.")
	}
	return nil
}

// checkServed refuses, with a 400 that says so, what the twin does not
// model (n > 1, constrained outputs), and reads stream_options.
func (r *generateFields) checkServed() *apiError {
	if r.N != nil && *r.N != 1 {
		return badRequest("n", "the vetbench twin serves n=1 only (got n=%d)", *r.N)
	}
	if _, e := r.streamOptions(); e != nil {
		return e
	}
	if len(r.StructuredOutputs) > 0 && string(r.StructuredOutputs) != "null" {
		return badRequest("structured_outputs", "the vetbench twin does not constrain outputs; drop structured_outputs")
	}
	if f := strings.TrimSpace(string(r.ResponseFormat)); f != "" && f != "null" && !strings.Contains(f, `"text"`) {
		return badRequest("response_format", "the vetbench twin answers text only; drop response_format")
	}
	return nil
}

func (r *chatRequest) logprobs() bool { return r.Logprobs != nil && *r.Logprobs }

// messages decodes the chat messages: string content or a list of text
// and image_url parts (OpenAI's {"type":"image_url","image_url":{"url":…}}
// and vLLM's bare {"image_url": "…"}). Images must be data: URLs; images
// resolves them (decoded, hashed and measured once per distinct URL).
// Part keys match as encoding/json matches struct fields (exact, else
// case-insensitive).
func (r *chatRequest) messages(images *imageCache) ([]message, *apiError) {
	out := make([]message, 0, len(r.Messages))
	for i, wm := range r.Messages {
		m := message{Role: wm.Role}
		if m.Role == "" {
			return nil, validationError(fmt.Sprintf("messages.%d.role", i), "Field required")
		}
		invalid := validationError(fmt.Sprintf("messages.%d.content", i), "Input should be a valid string or a list of content parts")
		var list []any
		switch c := wm.Content.(type) {
		case string:
			m.Parts = []part{{Text: c}}
			out = append(out, m)
			continue
		case nil:
			// null is an empty string; no content at all is invalid.
			if r.contentMissing(i) {
				return nil, invalid
			}
			m.Parts = []part{{Text: ""}}
			out = append(out, m)
			continue
		case []any:
			list = c
		default:
			return nil, invalid
		}
		// Every part's shape first (as decoding them all at once would),
		// then each part's meaning in order.
		parts := make([]wirePart, len(list))
		for j, el := range list {
			wp, ok := toWirePart(el)
			if !ok {
				return nil, invalid
			}
			parts[j] = wp
		}
		for j, wp := range parts {
			where := fmt.Sprintf("messages.%d.content.%d", i, j)
			switch {
			case wp.Text != nil && (wp.Type == "text" || wp.Type == ""):
				m.Parts = append(m.Parts, part{Text: *wp.Text})
			case wp.hasImageURL:
				url, err := imageURL(wp.ImageURL)
				if err != nil {
					return nil, badRequest(where, "%v", err)
				}
				im, err := r.image(images, url)
				if err != nil {
					return nil, badRequest(where, "%v", err)
				}
				m.Parts = append(m.Parts, part{Image: im})
			default:
				return nil, badRequest(where, "unsupported content part type %q", wp.Type)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// image resolves an image URL: one decodeChat lifted, or through images.
func (r *chatRequest) image(images *imageCache, url string) (*partImage, error) {
	if rest, ok := strings.CutPrefix(url, "\x00"); ok && r.lifted != nil {
		if i, err := strconv.Atoi(rest); err == nil && i >= 0 && i < len(r.lifted) {
			return r.lifted[i], nil
		}
	}
	return images.get(url)
}

// contentMissing says whether message i of the body has no content key at
// all (decoded generically, a missing key and null are both nil). Rare, so
// it decodes the body again.
func (r *chatRequest) contentMissing(i int) bool {
	var shape struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if r.body == nil || json.Unmarshal(r.body, &shape) != nil || i >= len(shape.Messages) {
		return r.body != nil
	}
	return len(shape.Messages[i].Content) == 0
}

// wirePart is one content part.
type wirePart struct {
	Type        string
	Text        *string
	ImageURL    any
	hasImageURL bool
}

// toWirePart reads a decoded part as encoding/json would decode it into
// {type string; text *string; image_url json.RawMessage}: an object (or
// null, an empty part) whose type is a string or null and whose text is
// a string or null; ok is false where that decoding would fail.
func toWirePart(v any) (wp wirePart, ok bool) {
	if v == nil {
		return wp, true
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		return wp, false
	}
	if t, found := field(obj, "type"); found {
		switch t := t.(type) {
		case string:
			wp.Type = t
		case nil:
		default:
			return wp, false
		}
	}
	if t, found := field(obj, "text"); found {
		switch t := t.(type) {
		case string:
			wp.Text = &t
		case nil:
		default:
			return wp, false
		}
	}
	wp.ImageURL, wp.hasImageURL = field(obj, "image_url")
	return wp, true
}

// field looks a key up as encoding/json matches a struct field: the exact
// name, else any key equal under case folding.
func field(obj map[string]any, name string) (any, bool) {
	if v, ok := obj[name]; ok {
		return v, true
	}
	for k, v := range obj {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// imageURL is the URL of an image_url value: {"url": "…"} or a bare
// string.
func imageURL(v any) (string, error) {
	switch v := v.(type) {
	case map[string]any:
		if u, ok := field(v, "url"); ok {
			if s, ok := u.(string); ok && s != "" {
				return s, nil
			}
		}
	case string:
		if v != "" {
			return v, nil
		}
	}
	return "", errors.New("image_url has no url")
}

// jsonDecodeError is FastAPI's answer to a body that is not JSON.
func jsonDecodeError(err error) *apiError {
	msg := strings.ReplaceAll(err.Error(), "'", `"`)
	return validationError("body", fmt.Sprintf("{'type': 'json_invalid', 'loc': ('body', 0), 'msg': 'JSON decode error', 'input': {}, 'ctx': {'error': '%s'}}", msg))
}

// logprobEntry is one logprob on the wire; Logprob nil is sent as null.
type logprobEntry struct {
	Token   string   `json:"token"`
	Logprob *float64 `json:"logprob"`
	Bytes   []int    `json:"bytes"`
}

type contentLogprob struct {
	logprobEntry
	TopLogprobs []logprobEntry `json:"top_logprobs"`
}

func tokenBytes(s string) []int {
	b := []byte(s)
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

func entry(token string, lp float64) logprobEntry {
	v := lp
	return logprobEntry{Token: token, Logprob: &v, Bytes: tokenBytes(token)}
}

// pyTruthy is whether Python finds JSON value v (absent: None) true: not
// null, false, 0, "", [] or {}.
func pyTruthy(v json.RawMessage) bool {
	var x any
	if len(v) == 0 || json.Unmarshal(v, &x) != nil {
		return len(v) > 0
	}
	switch x := x.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}
