package stub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// contractTarget is a server the contract suite runs against: the twin
// in-process, the twin in a container (container_test.go, through
// export_test.go), or a live vLLM.
type contractTarget struct {
	BaseURL string
	Model   string // empty: the first of /v1/models
	APIKey  string
	// DevMode: the reset endpoints must answer; DevModeKnown && !DevMode:
	// they must be 404.
	DevMode, DevModeKnown bool
	// ImageLimit is --limit-mm-per-prompt's image count, 0 when unknown.
	ImageLimit int
	// MaxLogprobs is --max-logprobs (vLLM's default 20; -1 = no cap).
	MaxLogprobs int
	// Exclusive: nobody else sends requests, so metric deltas are exact.
	Exclusive bool
}

// contractSuite asserts vLLM's serving contract (see
// shared/reference/vllm-contract.md) against a target. It asserts only what
// a real vLLM also does, so the same suite runs against all three targets.
func contractSuite(t *testing.T, tg contractTarget) {
	ctx := t.Context()
	hc := &http.Client{}
	do := func(method, path string, body any, hdr map[string]string) (int, http.Header, []byte) {
		t.Helper()
		var rd io.Reader
		switch b := body.(type) {
		case nil:
		case []byte:
			rd = bytes.NewReader(b)
		default:
			data, err := json.Marshal(b)
			require.NoError(t, err)
			rd = bytes.NewReader(data)
		}
		req, err := http.NewRequestWithContext(ctx, method, tg.BaseURL+path, rd)
		require.NoError(t, err)
		if rd != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if tg.APIKey != "" {
			req.Header.Set("Authorization", "Bearer "+tg.APIKey)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := hc.Do(req)
		require.NoError(t, err, "%s %s", method, path)
		defer res.Body.Close()
		data, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, res.Header, data
	}
	requireError := func(code int, data []byte, status int, msg string) map[string]any {
		t.Helper()
		require.Equal(t, status, code, "%s: body %s", msg, data)
		var body struct {
			Error map[string]any `json:"error"`
		}
		require.NoError(t, json.Unmarshal(data, &body), "%s: error body is not JSON: %s", msg, data)
		require.NotNil(t, body.Error, "%s: no error object: %s", msg, data)
		require.NotEmpty(t, body.Error["message"], msg)
		require.EqualValues(t, status, body.Error["code"], "%s: code", msg)
		return body.Error
	}

	// /v1/models first: the suite needs the served name and max_model_len.
	code, _, data := do(http.MethodGet, "/v1/models", nil, nil)
	require.Equal(t, http.StatusOK, code, "%s", data)
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			Object      string `json:"object"`
			OwnedBy     string `json:"owned_by"`
			Root        string `json:"root"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(data, &models))
	require.Equal(t, "list", models.Object)
	require.NotEmpty(t, models.Data)
	card := models.Data[0]
	if tg.Model == "" {
		tg.Model = card.ID
	}
	require.Equal(t, tg.Model, card.ID, "served model name")
	require.Equal(t, "model", card.Object)
	require.Equal(t, "vllm", card.OwnedBy)
	require.NotEmpty(t, card.Root, "vllm bench serve reads data[0].root")
	require.Positive(t, card.MaxModelLen)
	maxLen := card.MaxModelLen

	t.Run("health", func(t *testing.T) {
		code, _, data := do(http.MethodGet, "/health", nil, nil)
		require.Equal(t, http.StatusOK, code)
		require.Empty(t, data)
	})
	t.Run("version", func(t *testing.T) {
		code, _, data := do(http.MethodGet, "/version", nil, nil)
		require.Equal(t, http.StatusOK, code)
		var v struct{ Version string }
		require.NoError(t, json.Unmarshal(data, &v))
		require.NotEmpty(t, v.Version)
	})

	t.Run("tokenize", func(t *testing.T) {
		seen := map[int]string{}
		for _, ctl := range []string{"0", "1", "2", "3", "4"} {
			code, _, data := do(http.MethodPost, "/tokenize", map[string]any{"model": tg.Model, "prompt": ctl, "add_special_tokens": false}, nil)
			require.Equal(t, http.StatusOK, code, "%s", data)
			var tr struct {
				Count       int   `json:"count"`
				MaxModelLen int   `json:"max_model_len"`
				Tokens      []int `json:"tokens"`
			}
			require.NoError(t, json.Unmarshal(data, &tr))
			require.Equal(t, 1, tr.Count, "control %q is one token", ctl)
			require.Len(t, tr.Tokens, 1)
			require.Equal(t, maxLen, tr.MaxModelLen)
			require.NotContains(t, seen, tr.Tokens[0], "controls %q and %q share a token", ctl, seen[tr.Tokens[0]])
			seen[tr.Tokens[0]] = ctl
		}
		code, _, data := do(http.MethodPost, "/tokenize", map[string]any{"model": tg.Model, "prompt": "Compare the check with the register row."}, nil)
		require.Equal(t, http.StatusOK, code)
		var tr struct {
			Count  int   `json:"count"`
			Tokens []int `json:"tokens"`
		}
		require.NoError(t, json.Unmarshal(data, &tr))
		require.Equal(t, len(tr.Tokens), tr.Count)
		require.Greater(t, tr.Count, 3)
	})

	spec := judgments.Spec{Name: "contract", Questions: []judgments.Question{
		judgments.NewNoul("same_shape", "Do image 1 and the text describe the same shape?", "They match.", "They differ."),
		judgments.NewChoice("colour", "Pick the colour. Choose one:",
			judgments.Option{Label: "red"}, judgments.Option{Label: "green"}, judgments.Option{Label: "blue"}),
	}}
	item := judgments.Item{ID: "item-1", State: "A grey square on a white page.", Images: []judgments.Image{twintest.PNGImage(t, 64, 64, 7)}}
	client := judgments.NewClient(tg.BaseURL, judgments.WithModel(tg.Model), judgments.WithAPIKey(tg.APIKey), judgments.WithRequestIDPrefix("contract"))
	controls, err := client.Tokenize(ctx, spec.Controls())
	require.NoError(t, err)
	urls := []string{item.Images[0].DataURL()}

	chat := func(req any, rid string) (int, http.Header, map[string]any, []byte) {
		t.Helper()
		code, hdr, data := do(http.MethodPost, "/v1/chat/completions", req, map[string]string{"X-Request-Id": rid})
		var body map[string]any
		if code == http.StatusOK {
			require.NoError(t, json.Unmarshal(data, &body), "%s", data)
		}
		return code, hdr, body, data
	}

	t.Run("chat token_ids", func(t *testing.T) {
		q := spec.Questions[1]
		req, err := judgments.BuildRequest(tg.Model, judgments.ModeTokenIDs, 0, item, q, controls, urls)
		require.NoError(t, err)
		rid := judgments.RequestID("contract", item.ID, q.ID)
		code, hdr, body, data := chat(req, rid)
		require.Equal(t, http.StatusOK, code, "%s", data)
		require.Equal(t, "chatcmpl-"+rid, body["id"], "the completion id ends with X-Request-Id")
		if h := hdr.Get("X-Request-Id"); h != "" {
			require.Equal(t, rid, h)
		}
		require.Equal(t, "chat.completion", body["object"])
		require.Equal(t, tg.Model, body["model"])
		choice := body["choices"].([]any)[0].(map[string]any)
		require.Equal(t, "assistant", choice["message"].(map[string]any)["role"])
		require.Equal(t, "length", choice["finish_reason"], "max_tokens 1 ends on length")
		content := choice["logprobs"].(map[string]any)["content"].([]any)
		require.Len(t, content, 1)
		top := content[0].(map[string]any)["top_logprobs"].([]any)
		require.Len(t, top, len(q.Options), "exactly the requested ids")
		for i, e := range top {
			e := e.(map[string]any)
			tok := e["token"].(string)
			require.Equal(t, "token_id:"+strconv.Itoa(controls[judgments.Control(i)]), tok, "requested ids, in request order")
			lp := e["logprob"].(float64)
			require.LessOrEqual(t, lp, 0.0)
			require.GreaterOrEqual(t, lp, MinLogprob)
			var b []byte
			for _, x := range e["bytes"].([]any) {
				b = append(b, byte(x.(float64)))
			}
			require.Equal(t, tok, string(b), "bytes are the token's UTF-8")
		}
		usage := body["usage"].(map[string]any)
		require.Positive(t, usage["prompt_tokens"])
		require.EqualValues(t, 1, usage["completion_tokens"])
		require.Equal(t, usage["prompt_tokens"].(float64)+1, usage["total_tokens"])
	})

	t.Run("judge", func(t *testing.T) {
		j, err := client.Judge(ctx, spec, controls, item)
		require.NoError(t, err)
		require.Len(t, j.Answers, len(spec.Questions))
		for _, a := range j.Answers {
			sum := 0.0
			for _, p := range a.Probabilities {
				sum += p
			}
			require.InDelta(t, 1, sum, 1e-9, a.Question)
		}
	})

	t.Run("prompt tokens count the image", func(t *testing.T) {
		q := spec.Questions[0]
		with, err := judgments.BuildRequest(tg.Model, judgments.ModeTokenIDs, 0, item, q, controls, urls)
		require.NoError(t, err)
		bare := item
		bare.Images = nil
		without, err := judgments.BuildRequest(tg.Model, judgments.ModeTokenIDs, 0, bare, q, controls, nil)
		require.NoError(t, err)
		_, _, a, data := chat(with, "contract|img|with")
		require.NotNil(t, a, "%s", data)
		_, _, b, data := chat(without, "contract|img|without")
		require.NotNil(t, b, "%s", data)
		pa := a["usage"].(map[string]any)["prompt_tokens"].(float64)
		pb := b["usage"].(map[string]any)["prompt_tokens"].(float64)
		require.Greater(t, pa, pb+16, "image placeholder tokens are part of prompt_tokens")
	})

	t.Run("chat top_logprobs", func(t *testing.T) {
		q := spec.Questions[1]
		req, err := judgments.BuildRequest(tg.Model, judgments.ModeTopLogprobs, 5, item, q, controls, urls)
		require.NoError(t, err)
		code, _, body, data := chat(req, "contract|top|k5")
		require.Equal(t, http.StatusOK, code, "%s", data)
		content := body["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)["content"].([]any)
		top := content[0].(map[string]any)["top_logprobs"].([]any)
		require.Len(t, top, 5)
		for _, e := range top {
			require.LessOrEqual(t, e.(map[string]any)["logprob"].(float64), 0.0)
		}
	})

	t.Run("errors", func(t *testing.T) {
		base := func() map[string]any {
			return map[string]any{"model": tg.Model, "max_tokens": 1, "logprobs": true,
				"messages": []any{map[string]any{"role": "user", "content": "Say 0 or 1."}}}
		}
		code, _, _, data := chat([]byte(`{"model": "x", "messages": [`), "contract|err|json")
		requireError(code, data, http.StatusBadRequest, "malformed JSON")

		r := base()
		r["model"] = "no-such-model"
		code, _, _, data = chat(r, "contract|err|model")
		e := requireError(code, data, http.StatusNotFound, "unknown model")
		require.Contains(t, e["message"], "no-such-model")

		r = base()
		r["logprobs"] = false
		r["top_logprobs"] = 2
		code, _, _, data = chat(r, "contract|err|logprobs")
		requireError(code, data, http.StatusBadRequest, "top_logprobs without logprobs")

		if tg.MaxLogprobs >= 0 {
			r = base()
			r["top_logprobs"] = tg.MaxLogprobs + 1
			code, _, _, data = chat(r, "contract|err|maxlogprobs")
			requireError(code, data, http.StatusBadRequest, "top_logprobs above --max-logprobs")
		}

		r = base()
		r["messages"] = []any{map[string]any{"role": "user", "content": strings.Repeat(" hello", maxLen+8)}}
		code, _, _, data = chat(r, "contract|err|long")
		e = requireError(code, data, http.StatusBadRequest, "prompt longer than max_model_len")
		msg := strings.ToLower(fmt.Sprint(e["message"]))
		require.True(t, e["param"] == "input_tokens" || e["param"] == "input_text" || strings.Contains(msg, "context length") ||
			strings.Contains(msg, "maximum model length"), "a context-length error: %v", e)

		if tg.ImageLimit > 0 {
			many := item
			many.Images = nil
			var us []string
			for i := range tg.ImageLimit + 1 {
				many.Images = append(many.Images, twintest.PNGImage(t, 32, 32, 100+i))
				us = append(us, many.Images[i].DataURL())
			}
			req, err := judgments.BuildRequest(tg.Model, judgments.ModeTokenIDs, 0, many, spec.Questions[0], controls, us)
			require.NoError(t, err)
			code, _, _, data = chat(req, "contract|err|images")
			e = requireError(code, data, http.StatusBadRequest, "too many images")
			require.Contains(t, e["message"], fmt.Sprintf("At most %d image(s)", tg.ImageLimit))
		}
	})

	t.Run("metrics", func(t *testing.T) {
		code, hdr, data := do(http.MethodGet, "/metrics", nil, nil)
		require.Equal(t, http.StatusOK, code)
		require.True(t, strings.HasPrefix(hdr.Get("Content-Type"), "text/plain; version=0.0.4"), hdr.Get("Content-Type"))
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(bytes.NewReader(data))
		require.NoError(t, err)
		for name, typ := range map[string]string{
			"vllm:num_requests_running": "GAUGE", "vllm:num_requests_waiting": "GAUGE", "vllm:kv_cache_usage_perc": "GAUGE",
			"vllm:prompt_tokens_total": "COUNTER", "vllm:generation_tokens_total": "COUNTER",
			"vllm:request_success_total": "COUNTER", "vllm:prefix_cache_queries_total": "COUNTER",
			"vllm:prefix_cache_hits_total": "COUNTER", "vllm:num_preemptions_total": "COUNTER",
			"vllm:e2e_request_latency_seconds": "HISTOGRAM", "vllm:request_queue_time_seconds": "HISTOGRAM",
			"vllm:request_prefill_time_seconds": "HISTOGRAM", "vllm:time_to_first_token_seconds": "HISTOGRAM",
			"vllm:iteration_tokens_total": "HISTOGRAM", "vllm:request_prompt_tokens": "HISTOGRAM",
		} {
			f, ok := fams[name]
			require.True(t, ok, "family %s missing", name)
			require.Equal(t, typ, f.GetType().String(), name)
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				require.Equal(t, tg.Model, labels["model_name"], name)
				require.Contains(t, labels, "engine", name)
			}
		}
		reasons := map[string]bool{}
		for _, m := range fams["vllm:request_success_total"].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "finished_reason" {
					reasons[l.GetValue()] = true
				}
			}
		}
		for _, r := range []string{"stop", "length", "abort"} {
			require.True(t, reasons[r], "request_success has a %s series from the start", r)
		}
		for name, want := range map[string][]float64{
			"vllm:e2e_request_latency_seconds": requestLatencyBuckets, "vllm:request_queue_time_seconds": requestLatencyBuckets,
			"vllm:request_prefill_time_seconds": requestLatencyBuckets, "vllm:time_to_first_token_seconds": ttftBuckets,
			"vllm:iteration_tokens_total": iterationTokenBuckets, "vllm:request_prompt_tokens": build125Buckets(maxLen),
		} {
			var got []float64
			for _, b := range fams[name].GetMetric()[0].GetHistogram().GetBucket() {
				got = append(got, b.GetUpperBound())
			}
			require.Equal(t, append(append([]float64{}, want...), math.Inf(1)), got, "%s bucket edges", name)
		}
	})

	t.Run("metrics deltas", func(t *testing.T) {
		before := twintest.ScrapeMetrics(ctx, t, hc, tg.BaseURL)
		q := spec.Questions[0]
		req, err := judgments.BuildRequest(tg.Model, judgments.ModeTokenIDs, 0, item, q, controls, urls)
		require.NoError(t, err)
		code, _, body, data := chat(req, "contract|delta|one")
		require.Equal(t, http.StatusOK, code, "%s", data)
		after := twintest.ScrapeMetrics(ctx, t, hc, tg.BaseURL)
		prompt := body["usage"].(map[string]any)["prompt_tokens"].(float64)
		d := func(name string) float64 { return after.Value(name) - before.Value(name) }
		c1, _ := before.Hist("vllm:e2e_request_latency_seconds")
		c2, _ := after.Hist("vllm:e2e_request_latency_seconds")
		if tg.Exclusive {
			require.Equal(t, 1.0, d("vllm:request_success_total"))
			require.Equal(t, prompt, d("vllm:prompt_tokens_total"), "prompt_tokens counts the whole prompt")
			require.Equal(t, 1.0, d("vllm:generation_tokens_total"))
			require.Equal(t, prompt, d("vllm:prefix_cache_queries_total"), "prefix cache queries are tokens")
			require.Equal(t, 1.0, c2-c1)
		} else {
			require.GreaterOrEqual(t, d("vllm:request_success_total"), 1.0)
			require.GreaterOrEqual(t, d("vllm:prompt_tokens_total"), prompt)
			require.GreaterOrEqual(t, c2-c1, 1.0)
		}
	})

	t.Run("dev mode", func(t *testing.T) {
		switch {
		case tg.DevMode:
			code, _, data := do(http.MethodPost, "/reset_prefix_cache", nil, nil)
			require.Equal(t, http.StatusOK, code, "%s", data)
			if len(bytes.TrimSpace(data)) > 0 {
				var v struct {
					Success *bool `json:"success"`
				}
				require.NoError(t, json.Unmarshal(data, &v), "%s", data)
				require.NotNil(t, v.Success, "%s", data)
			}
			code, _, _ = do(http.MethodPost, "/reset_mm_cache", nil, nil)
			require.Equal(t, http.StatusOK, code)
		case tg.DevModeKnown:
			for _, p := range []string{"/reset_prefix_cache", "/reset_mm_cache"} {
				code, _, _ := do(http.MethodPost, p, nil, nil)
				require.Equal(t, http.StatusNotFound, code, "%s without VLLM_SERVER_DEV_MODE", p)
			}
		default:
			t.Skip("dev mode unknown for this target (VETBENCH_DEV_MODE)")
		}
	})
}

// TestContractInProcess runs the suite against the twin in-process, with
// dev mode on and off.
func TestContractInProcess(t *testing.T) {
	for _, dev := range []bool{true, false} {
		t.Run(fmt.Sprintf("dev=%t", dev), func(t *testing.T) {
			rs, err := Start(WithDevMode(dev))
			require.NoError(t, err)
			t.Cleanup(func() { _ = rs.Close() })
			p := rs.Profile()
			contractSuite(t, contractTarget{BaseURL: rs.URL(), DevMode: dev, DevModeKnown: true,
				ImageLimit: p.LimitImages, MaxLogprobs: p.MaxLogprobs, Exclusive: true})
		})
	}
}

// TestContractLive runs the suite against a live vLLM named by
// VETBENCH_ENDPOINT (VETBENCH_MODEL, VETBENCH_API_KEY; VETBENCH_DEV_MODE=1
// when it runs with VLLM_SERVER_DEV_MODE=1, VETBENCH_IMAGE_LIMIT and
// VETBENCH_MAX_LOGPROBS when not vLLM's defaults).
func TestContractLive(t *testing.T) {
	url := os.Getenv("VETBENCH_ENDPOINT")
	if url == "" {
		t.Skip("VETBENCH_ENDPOINT not set: no live vLLM to check the contract against")
	}
	tg := contractTarget{BaseURL: strings.TrimRight(strings.TrimSuffix(strings.TrimRight(url, "/"), "/v1"), "/"),
		Model: os.Getenv("VETBENCH_MODEL"), APIKey: os.Getenv("VETBENCH_API_KEY"), MaxLogprobs: 20}
	if v := os.Getenv("VETBENCH_DEV_MODE"); v != "" {
		tg.DevMode, tg.DevModeKnown = truthyEnv(v), true
	}
	if v := os.Getenv("VETBENCH_IMAGE_LIMIT"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "VETBENCH_IMAGE_LIMIT")
		tg.ImageLimit = n
	}
	if v := os.Getenv("VETBENCH_MAX_LOGPROBS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "VETBENCH_MAX_LOGPROBS")
		tg.MaxLogprobs = n
	}
	contractSuite(t, tg)
}

func truthyEnv(s string) bool {
	switch strings.ToLower(s) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
