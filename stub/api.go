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

// chatRequest is the part of vLLM's ChatCompletionRequest the twin reads.
// Unknown fields are accepted and ignored, as vLLM's extra="allow" does.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	Logprobs            *bool           `json:"logprobs"`
	TopLogprobs         json.RawMessage `json:"top_logprobs"`
	LogprobTokenIDs     []int           `json:"logprob_token_ids"`
	ReturnAsTokenIDs    *bool           `json:"return_tokens_as_token_ids"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt"`
	ChatTemplateKwargs  map[string]any  `json:"chat_template_kwargs"`
	Stream              *bool           `json:"stream"`
	StreamOptions       json.RawMessage `json:"stream_options"`
	IgnoreEOS           *bool           `json:"ignore_eos"`
	MinTokens           *int            `json:"min_tokens"`
	N                   *int            `json:"n"`
	CacheSalt           string          `json:"cache_salt"`
	StructuredOutputs   json.RawMessage `json:"structured_outputs"`
	ResponseFormat      json.RawMessage `json:"response_format"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type wirePart struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
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
	if len(r.StreamOptions) > 0 && string(r.StreamOptions) != "null" && (r.Stream == nil || !*r.Stream) {
		return 0, validationError("stream_options", "Value error, Stream options can only be defined when `stream=True`.")
	}
	if r.N != nil && *r.N != 1 {
		return 0, badRequest("n", "the vetbench twin serves n=1 only (got n=%d)", *r.N)
	}
	if _, e := r.streamOptions(); e != nil {
		return 0, e
	}
	if len(r.StructuredOutputs) > 0 && string(r.StructuredOutputs) != "null" {
		return 0, badRequest("structured_outputs", "the vetbench twin does not constrain outputs; drop structured_outputs")
	}
	if f := strings.TrimSpace(string(r.ResponseFormat)); f != "" && f != "null" && !strings.Contains(f, `"text"`) {
		return 0, badRequest("response_format", "the vetbench twin answers text only; drop response_format")
	}
	return topLogprobs, nil
}

func (r *chatRequest) logprobs() bool { return r.Logprobs != nil && *r.Logprobs }

// messages decodes the chat messages: string content or a list of text
// and image_url parts (OpenAI's {"type":"image_url","image_url":{"url":…}}
// and vLLM's bare {"image_url": "…"}). Images must be data: URLs.
func (r *chatRequest) messages() ([]message, *apiError) {
	out := make([]message, 0, len(r.Messages))
	for i, wm := range r.Messages {
		m := message{Role: wm.Role}
		if m.Role == "" {
			return nil, validationError(fmt.Sprintf("messages.%d.role", i), "Field required")
		}
		var s string
		if err := json.Unmarshal(wm.Content, &s); err == nil {
			m.Parts = []part{{Text: s}}
			out = append(out, m)
			continue
		}
		var parts []wirePart
		if err := json.Unmarshal(wm.Content, &parts); err != nil {
			return nil, validationError(fmt.Sprintf("messages.%d.content", i), "Input should be a valid string or a list of content parts")
		}
		for j, wp := range parts {
			switch {
			case wp.Text != nil && (wp.Type == "text" || wp.Type == ""):
				m.Parts = append(m.Parts, part{Text: *wp.Text})
			case len(wp.ImageURL) > 0:
				url, err := imageURL(wp.ImageURL)
				if err != nil {
					return nil, badRequest(fmt.Sprintf("messages.%d.content.%d", i, j), "%v", err)
				}
				data, err := decodeDataURL(url)
				if err != nil {
					return nil, badRequest(fmt.Sprintf("messages.%d.content.%d", i, j), "%v", err)
				}
				m.Parts = append(m.Parts, part{Image: data})
			default:
				return nil, badRequest(fmt.Sprintf("messages.%d.content.%d", i, j), "unsupported content part type %q", wp.Type)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

func imageURL(raw json.RawMessage) (string, error) {
	var obj struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(raw, &obj); err == nil && obj.URL != "" {
		return obj.URL, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil && s != "" {
		return s, nil
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
