package stream

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Message is one chat message: text, and at most one image as a URL (a
// data: URL for the benchmarks, so no server fetch is timed). The text part
// goes first and the image after it, as `vllm bench serve` sends them.
type Message struct {
	Role     string // "user" when empty
	Text     string
	ImageURL string
}

// Request is one streamed chat completion. The zero values of the sampling
// fields are sent as they are: temperature 0 (greedy) is always on the
// wire, never left to the server's default.
type Request struct {
	// Model is sent as "model"; empty leaves it out (the server's only model).
	Model    string
	Messages []Message
	// Prompt, when set instead of Messages, is sent to /v1/completions
	// as it stands: no chat template (vllm bench serve's default
	// backend, openai).
	Prompt string
	// MaxTokens is the fixed output length; with IgnoreEOS the server
	// generates exactly this many tokens unless it fails or is cut.
	MaxTokens   int
	IgnoreEOS   bool
	Temperature float64
	// MinTokens, when > 0, is vLLM's min_tokens.
	MinTokens int
	// Seed, when set, is sent as "seed".
	Seed *int64
	// CacheSalt, when set, keeps this request's prefix-cache blocks apart
	// from any other salt's (≤128 plain characters; see the contract §2.1).
	CacheSalt string
	// ChatTemplateKwargs is sent as chat_template_kwargs when non-nil
	// (e.g. {"enable_thinking": false}).
	ChatTemplateKwargs map[string]any
	// ID is sent as X-Request-Id when non-empty.
	ID string
}

// Text returns a request for one user text prompt with a fixed output
// length: greedy, ignore_eos, max_tokens = outputTokens.
func Text(prompt string, outputTokens int) Request {
	return Request{
		Messages:  []Message{{Role: "user", Text: prompt}},
		MaxTokens: outputTokens, IgnoreEOS: true,
	}
}

// Completion returns a request for one prompt sent to /v1/completions,
// with a fixed output length, like Text.
func Completion(prompt string, outputTokens int) Request {
	return Request{Prompt: prompt, MaxTokens: outputTokens, IgnoreEOS: true}
}

// Path is the endpoint r is posted to.
func (r Request) Path() string {
	if r.Prompt != "" {
		return CompletionsPath
	}
	return Path
}

// Image returns a request for one user prompt with one image (a data: URL)
// and a fixed output length, like Text.
func Image(prompt, imageURL string, outputTokens int) Request {
	r := Text(prompt, outputTokens)
	r.Messages[0].ImageURL = imageURL
	return r
}

// DataURL encodes image bytes as a data: URL.
func DataURL(mime string, data []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// Validate reports a request that cannot be sent.
func (r Request) Validate() error {
	var errs []error
	switch {
	case r.Prompt != "" && len(r.Messages) > 0:
		errs = append(errs, errors.New("both a prompt and messages: a completion has one, a chat completion the other"))
	case r.Prompt == "" && len(r.Messages) == 0:
		errs = append(errs, errors.New("no messages"))
	case r.Prompt != "" && r.ChatTemplateKwargs != nil:
		errs = append(errs, errors.New("chat_template_kwargs on a completion: it has no chat template"))
	}
	for i, m := range r.Messages {
		if m.Text == "" && m.ImageURL == "" {
			errs = append(errs, fmt.Errorf("messages[%d]: empty", i))
		}
		if m.ImageURL != "" && !strings.HasPrefix(m.ImageURL, "data:") &&
			!strings.HasPrefix(m.ImageURL, "http://") && !strings.HasPrefix(m.ImageURL, "https://") &&
			!strings.HasPrefix(m.ImageURL, "file://") {
			errs = append(errs, fmt.Errorf("messages[%d]: image URL is not data:, http(s): or file:", i))
		}
	}
	if r.MaxTokens < 1 {
		errs = append(errs, fmt.Errorf("max_tokens %d is below 1", r.MaxTokens))
	}
	if r.MinTokens < 0 || (r.MinTokens > 0 && r.MinTokens > r.MaxTokens) {
		errs = append(errs, fmt.Errorf("min_tokens %d is outside [0, max_tokens %d]", r.MinTokens, r.MaxTokens))
	}
	if r.Temperature < 0 {
		errs = append(errs, fmt.Errorf("temperature %v is negative", r.Temperature))
	}
	if len(r.CacheSalt) > 128 {
		errs = append(errs, fmt.Errorf("cache_salt is %d characters; at most 128", len(r.CacheSalt)))
	}
	return errors.Join(errs...)
}

// wire is the request body. Fields vLLM reads that are not here are left
// to the server.
type wire struct {
	Model              string         `json:"model,omitempty"`
	Messages           []wireMessage  `json:"messages,omitempty"`
	Prompt             string         `json:"prompt,omitempty"`
	Stream             bool           `json:"stream"`
	StreamOptions      streamOptions  `json:"stream_options"`
	MaxTokens          int            `json:"max_tokens"`
	Temperature        float64        `json:"temperature"`
	IgnoreEOS          bool           `json:"ignore_eos,omitempty"`
	MinTokens          int            `json:"min_tokens,omitempty"`
	Seed               *int64         `json:"seed,omitempty"`
	CacheSalt          string         `json:"cache_salt,omitempty"`
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs,omitempty"`
}

type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats"`
}

type wireMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"` // a string, or parts with an image
}

type wirePart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

// Body returns the JSON body of r: stream on, with the usage chunk and
// continuous usage stats (a running completion_tokens on every chunk).
func (r Request) Body() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	w := wire{
		Model:              r.Model,
		Prompt:             r.Prompt,
		Stream:             true,
		StreamOptions:      streamOptions{IncludeUsage: true, ContinuousUsageStats: true},
		MaxTokens:          r.MaxTokens,
		Temperature:        r.Temperature,
		IgnoreEOS:          r.IgnoreEOS,
		MinTokens:          r.MinTokens,
		Seed:               r.Seed,
		CacheSalt:          r.CacheSalt,
		ChatTemplateKwargs: r.ChatTemplateKwargs,
	}
	for _, m := range r.Messages {
		role := m.Role
		if role == "" {
			role = "user"
		}
		wm := wireMessage{Role: role, Content: m.Text}
		if m.ImageURL != "" {
			var parts []wirePart
			if m.Text != "" {
				parts = append(parts, wirePart{Type: "text", Text: m.Text})
			}
			parts = append(parts, wirePart{Type: "image_url", ImageURL: &imageURL{URL: m.ImageURL}})
			wm.Content = parts
		}
		w.Messages = append(w.Messages, wm)
	}
	return json.Marshal(w)
}
