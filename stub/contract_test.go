package stub

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/stub/internal/twintest"
)

var updateFacts = flag.Bool("update", false, "rewrite testdata/contract_facts.md from the contract suite's facts")

// contractTarget is a server the contract suite runs against: the twin
// in-process, the twin in a container (container_test.go, through
// export_test.go), or a live vLLM. What it is configured with decides which
// facts apply; a fact whose configuration is unknown is skipped, never
// assumed.
type contractTarget struct {
	BaseURL string
	Model   string // empty: the first of /v1/models
	// APIKey is sent on every request; AuthRequired says the server runs
	// with --api-key (APIKey its key), so requests without it get 401.
	APIKey       string
	AuthRequired bool
	// DevMode: the reset endpoints must answer; DevModeKnown && !DevMode:
	// they must be 404.
	DevMode, DevModeKnown bool
	// ImageLimit is --limit-mm-per-prompt's image count, 0 when unknown.
	ImageLimit int
	// MaxLogprobs is --max-logprobs (vLLM's default 20; -1 = no cap).
	MaxLogprobs int
	// Exclusive: nobody else sends requests, so metric deltas are exact.
	Exclusive bool
	// PromptTokensDetails: --enable-prompt-tokens-details is on (true),
	// off (false), or unknown (nil).
	PromptTokensDetails *bool
	// DataParallel is --data-parallel-size; 0 when unknown.
	DataParallel int
	// Legacy: the server is older than logprob_token_ids (PR #43463).
	Legacy bool
	// Version is a live server's /version; facts that do not hold on it
	// (contractFact.Since, Until) are reported not applicable, not
	// failed. Empty for the twin, which plays every fact.
	Version string
}

// need is what a fact needs of its target.
type need int

const (
	needTokenIDs    need = 1 << iota // the server honours logprob_token_ids
	needLegacy                       // the server ignores logprob_token_ids
	needAuth                         // the server runs with --api-key
	needDetailsOn                    // --enable-prompt-tokens-details on
	needDetailsOff                   // --enable-prompt-tokens-details off
	needDP                           // --data-parallel-size >= 2
	needExclusive                    // metric deltas are exact
	needMaxLogprobs                  // --max-logprobs is a cap (>= 0)
	needImageLimit                   // --limit-mm-per-prompt known
)

// contractFact is one fact of vLLM's serving contract, written from vLLM's
// source (shared reference vllm-contract.md §2, §2.9), with the upstream
// file it encodes.
type contractFact struct {
	ID     string // the subtest name
	Fact   string // what vLLM does
	Source string // vllm-project/vllm path (symbol)
	Needs  need
	// Since is the first vLLM release the fact holds on ("" = every
	// release the contract covers, 0.10.1 on; a logprob_token_ids fact
	// defaults to TokenIDsSince); Until the last ("" = the newest seen; a
	// fact of a server older than logprob_token_ids defaults to
	// LegacyUntil). Since "unreleased" is a fact only the twin plays: an
	// open PR's behaviour, or one whose release is unknown. Versions says
	// where the bounds come from.
	Since, Until, Versions string
	Check                  func(t *testing.T, x *contractCtx)
}

// The logprob_token_ids boundary: PR #43463 merged 2026-07-13, after
// 0.25.0; 0.25.1 is a two-commit patch without it (bench/probe
// TokenIDsMinVersion).
const (
	TokenIDsSince = "0.26.0"
	LegacyUntil   = "0.25.1"
	unreleased    = "unreleased"
	tokenIDsPR    = "PR #43463 (merged 2026-07-13, after 0.25.0; 0.25.1 is a two-commit patch)"
)

// versions is the fact's bounds in words, for the facts table.
func (f contractFact) versions() string {
	since, until := f.bounds()
	var s string
	switch {
	case since == unreleased:
		s = "no release (twin only)"
	case since == "" && until == "":
		s = "every release (0.10.1 on)"
	case until == "":
		s = since + " on"
	case since == "":
		s = "up to " + until
	default:
		s = since + " to " + until
	}
	if f.Versions != "" {
		s += ": " + f.Versions
	} else if f.Needs&(needTokenIDs|needLegacy) != 0 {
		s += ": " + tokenIDsPR
	}
	return s
}

func (f contractFact) bounds() (since, until string) {
	since, until = f.Since, f.Until
	if since == "" && f.Needs&needTokenIDs != 0 {
		since = TokenIDsSince
	}
	if until == "" && f.Needs&needLegacy != 0 {
		until = LegacyUntil
	}
	return since, until
}

// appliesTo says whether the fact holds on vLLM version v (a /version
// string: "0.26.0", "0.27.1rc2", "0.25.1.dev12+gabc"; its first three
// numbers are compared). An empty v (the twin) takes every fact; an
// unparsable one only those that hold on every release.
func (f contractFact) appliesTo(v string) (bool, string) {
	since, until := f.bounds()
	if v == "" || (since == "" && until == "") {
		return true, ""
	}
	why := fmt.Sprintf("not applicable to vLLM %s: the fact holds on %s", v, f.versions())
	got, ok := factVersion(v)
	switch {
	case since == unreleased || !ok:
		return false, why
	case since != "" && compareVersions(got, mustVersion(since)) < 0:
		return false, why
	case until != "" && compareVersions(got, mustVersion(until)) > 0:
		return false, why
	}
	return true, ""
}

func factVersion(v string) ([3]int, bool) {
	var out [3]int
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	for i := range out {
		j := 0
		for j < len(v) && v[j] >= '0' && v[j] <= '9' {
			j++
		}
		if j == 0 {
			return out, i > 1 // "0.26" is 0.26.0
		}
		out[i], _ = strconv.Atoi(v[:j])
		v = v[j:]
		if i < 2 {
			if !strings.HasPrefix(v, ".") {
				return out, i >= 1
			}
			v = v[1:]
		}
	}
	return out, true
}

func mustVersion(v string) [3]int {
	out, ok := factVersion(v)
	if !ok {
		panic("contract fact version " + v)
	}
	return out
}

func compareVersions(a, b [3]int) int {
	for i := range a {
		if a[i] != b[i] {
			return a[i] - b[i]
		}
	}
	return 0
}

// contractCtx is what every fact may use: the target, its served model and
// an item with one image and its prompts.
type contractCtx struct {
	tg       contractTarget
	hc       *http.Client
	maxLen   int
	spec     judgments.Spec
	item     judgments.Item
	urls     []string
	client   *judgments.Client
	controls judgments.Controls
	mu       sync.Mutex
	seq      int
}

// do sends a request with the target's key.
func (x *contractCtx) do(t *testing.T, method, path string, body any, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	return x.doKey(t, x.tg.APIKey, method, path, body, hdr)
}

// doKey sends a request with key as the bearer token ("" sends none).
func (x *contractCtx) doKey(t *testing.T, key, method, path string, body any, hdr map[string]string) (int, http.Header, []byte) {
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
	req, err := http.NewRequestWithContext(t.Context(), method, x.tg.BaseURL+path, rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := x.hc.Do(req)
	require.NoError(t, err, "%s %s", method, path)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header, data
}

// chat posts a chat completion; body is decoded on a 200.
func (x *contractCtx) chat(t *testing.T, req any, rid string) (int, http.Header, map[string]any, []byte) {
	t.Helper()
	code, hdr, data := x.do(t, http.MethodPost, "/v1/chat/completions", req, map[string]string{"X-Request-Id": rid})
	var body map[string]any
	if code == http.StatusOK {
		require.NoError(t, json.Unmarshal(data, &body), "%s", data)
	}
	return code, hdr, body, data
}

// rid is a fresh request id (fresh ids keep the twin's answers apart).
func (x *contractCtx) rid(what string) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.seq++
	return fmt.Sprintf("contract|%s|%d", what, x.seq)
}

// text is a text-only chat request with logprobs on.
func (x *contractCtx) text(prompt string) map[string]any {
	return map[string]any{"model": x.tg.Model, "max_tokens": 1, "temperature": 0, "logprobs": true,
		"messages": []any{map[string]any{"role": "user", "content": prompt}}}
}

// requireError checks vLLM's error object: HTTP status = code, a message.
func requireError(t *testing.T, code int, data []byte, status int, msg string) map[string]any {
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

// position is one returned logprobs position.
type position struct {
	token   string
	logprob float64
	entries []positionEntry
}

type positionEntry struct {
	token   string
	logprob float64
	bytes   []byte
}

func firstPosition(t *testing.T, body map[string]any) position {
	t.Helper()
	choice := body["choices"].([]any)[0].(map[string]any)
	content := choice["logprobs"].(map[string]any)["content"].([]any)
	require.NotEmpty(t, content)
	c := content[0].(map[string]any)
	p := position{token: c["token"].(string), logprob: c["logprob"].(float64)}
	for _, e := range c["top_logprobs"].([]any) {
		e := e.(map[string]any)
		var b []byte
		for _, x := range e["bytes"].([]any) {
			b = append(b, byte(x.(float64)))
		}
		p.entries = append(p.entries, positionEntry{token: e["token"].(string), logprob: e["logprob"].(float64), bytes: b})
	}
	return p
}

func ids(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

func tokenIDs(ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "token_id:" + strconv.Itoa(id)
	}
	return out
}

// requireSampledFirst checks vLLM's logprob_token_ids shape: the sampled
// token first, then the requested ids in order, de-duplicated.
func requireSampledFirst(t *testing.T, p position, requested []string) {
	t.Helper()
	want := []string{p.token}
	for _, r := range requested {
		if r != p.token {
			want = append(want, r)
		}
	}
	got := make([]string, len(p.entries))
	for i, e := range p.entries {
		got[i] = e.token
	}
	require.Equal(t, want, got, "the sampled token first, then the requested ids, de-duplicated")
	require.Equal(t, p.logprob, p.entries[0].logprob, "the sampled entry carries the sampled token's logprob")
}

// contractFacts lists every fact the suite checks, in order.
func contractFacts() []contractFact {
	return []contractFact{
		{ID: "models", Source: "vllm/entrypoints/openai/models/serving.py (ModelCard); vllm/benchmarks/serve.py (get_first_model_from_server)",
			Fact: "GET /v1/models lists cards with id, object model, owned_by vllm, root and max_model_len",
			Check: func(t *testing.T, x *contractCtx) {
				// Checked while the suite starts (it needs the served name).
				require.Positive(t, x.maxLen)
			}},
		{ID: "health", Source: "vllm/entrypoints/serve/instrumentator/health.py",
			Fact: "GET /health is 200 with an empty body",
			Check: func(t *testing.T, x *contractCtx) {
				code, _, data := x.do(t, http.MethodGet, "/health", nil, nil)
				require.Equal(t, http.StatusOK, code)
				require.Empty(t, data)
			}},
		{ID: "version", Source: "vllm/entrypoints/serve/instrumentator/basic.py",
			Fact: `GET /version is {"version": "<vllm __version__>"}`,
			Check: func(t *testing.T, x *contractCtx) {
				code, _, data := x.do(t, http.MethodGet, "/version", nil, nil)
				require.Equal(t, http.StatusOK, code)
				var v struct{ Version string }
				require.NoError(t, json.Unmarshal(data, &v))
				require.NotEmpty(t, v.Version)
			}},
		{ID: "tokenize", Source: "vllm/entrypoints/serve/tokenize (POST /tokenize)",
			Fact: "POST /tokenize counts tokens; each control string is one distinct token",
			Check: func(t *testing.T, x *contractCtx) {
				seen := map[int]string{}
				for _, ctl := range []string{"0", "1", "2", "3", "4"} {
					code, _, data := x.do(t, http.MethodPost, "/tokenize", map[string]any{"model": x.tg.Model, "prompt": ctl, "add_special_tokens": false}, nil)
					require.Equal(t, http.StatusOK, code, "%s", data)
					var tr struct {
						Count       int   `json:"count"`
						MaxModelLen int   `json:"max_model_len"`
						Tokens      []int `json:"tokens"`
					}
					require.NoError(t, json.Unmarshal(data, &tr))
					require.Equal(t, 1, tr.Count, "control %q is one token", ctl)
					require.Len(t, tr.Tokens, 1)
					require.Equal(t, x.maxLen, tr.MaxModelLen)
					require.NotContains(t, seen, tr.Tokens[0], "controls %q and %q share a token", ctl, seen[tr.Tokens[0]])
					seen[tr.Tokens[0]] = ctl
				}
				code, _, data := x.do(t, http.MethodPost, "/tokenize", map[string]any{"model": x.tg.Model, "prompt": "Compare the check with the register row."}, nil)
				require.Equal(t, http.StatusOK, code)
				var tr struct {
					Count  int   `json:"count"`
					Tokens []int `json:"tokens"`
				}
				require.NoError(t, json.Unmarshal(data, &tr))
				require.Equal(t, len(tr.Tokens), tr.Count)
				require.Greater(t, tr.Count, 3)
			}},
		{ID: "chat shape", Source: "vllm/entrypoints/openai/chat_completion/protocol.py (ChatCompletionResponse, UsageInfo)",
			Fact:  "a chat completion's id ends with X-Request-Id; max_tokens 1 ends on length; usage counts prompt and completion",
			Needs: needTokenIDs,
			Check: func(t *testing.T, x *contractCtx) {
				q := x.spec.Questions[1]
				req, err := judgments.BuildRequest(x.tg.Model, judgments.ModeTokenIDs, 0, x.item, q, x.controls, x.urls)
				require.NoError(t, err)
				rid := x.rid("shape")
				code, hdr, body, data := x.chat(t, req, rid)
				require.Equal(t, http.StatusOK, code, "%s", data)
				require.Equal(t, "chatcmpl-"+rid, body["id"], "the completion id ends with X-Request-Id")
				if h := hdr.Get("X-Request-Id"); h != "" {
					require.Equal(t, rid, h)
				}
				require.Equal(t, "chat.completion", body["object"])
				require.Equal(t, x.tg.Model, body["model"])
				choice := body["choices"].([]any)[0].(map[string]any)
				require.Equal(t, "assistant", choice["message"].(map[string]any)["role"])
				require.Equal(t, "length", choice["finish_reason"], "max_tokens 1 ends on length")
				content := choice["logprobs"].(map[string]any)["content"].([]any)
				require.Len(t, content, 1)
				usage := body["usage"].(map[string]any)
				require.Positive(t, usage["prompt_tokens"])
				require.EqualValues(t, 1, usage["completion_tokens"])
				require.Equal(t, usage["prompt_tokens"].(float64)+1, usage["total_tokens"])
			}},
		{ID: "logprob_token_ids sampled first", Source: "vllm/v1/engine/logprobs.py (_make_logprob_dict); vllm/entrypoints/openai/chat_completion/serving.py (_get_top_logprobs, return_all)",
			Fact:  "with logprob_token_ids the position holds the sampled token first, then the requested ids, de-duplicated, and all of it is returned: N entries when the greedy token is requested, N+1 when not",
			Needs: needTokenIDs,
			Check: func(t *testing.T, x *contractCtx) {
				q := x.spec.Questions[1]
				req, err := judgments.BuildRequest(x.tg.Model, judgments.ModeTokenIDs, 0, x.item, q, x.controls, x.urls)
				require.NoError(t, err)
				code, _, body, data := x.chat(t, req, judgments.RequestID("contract", x.item.ID, q.ID))
				require.Equal(t, http.StatusOK, code, "%s", data)
				requireSampledFirst(t, firstPosition(t, body), tokenIDs(req.LogprobTokenIDs))
			}},
		{ID: "logprob_token_ids N+1 off-format", Source: "vllm/v1/engine/logprobs.py (_make_logprob_dict); vllm/entrypoints/openai/chat_completion/serving.py (_get_top_logprobs, return_all)",
			Fact:  "when the greedy token is none of the requested ids (a prose answer) the position has N+1 entries, the sampled token first",
			Needs: needTokenIDs,
			Check: func(t *testing.T, x *contractCtx) {
				r := x.text("Reply with the single word Hello.")
				asked := []int{x.controls["0"], x.controls["1"]}
				r["logprob_token_ids"], r["return_tokens_as_token_ids"] = asked, true
				code, _, body, data := x.chat(t, r, x.rid("prose"))
				require.Equal(t, http.StatusOK, code, "%s", data)
				p := firstPosition(t, body)
				require.NotContains(t, tokenIDs(asked), p.token, "the greedy answer to this prompt is prose, no control")
				require.Len(t, p.entries, len(asked)+1)
				requireSampledFirst(t, p, tokenIDs(asked))
			}},
		{ID: "return_tokens_as_token_ids", Source: "vllm/entrypoints/openai/chat_completion/serving.py (format_token_id_placeholder); chat_completion/protocol.py (ChatCompletionLogProb.bytes)",
			Fact:  "return_tokens_as_token_ids spells every token token_id:<id>, the sampled one too; bytes are the UTF-8 bytes of the spelled token; logprobs are natural logs at most 0",
			Needs: needTokenIDs,
			Check: func(t *testing.T, x *contractCtx) {
				q := x.spec.Questions[0]
				req, err := judgments.BuildRequest(x.tg.Model, judgments.ModeTokenIDs, 0, x.item, q, x.controls, x.urls)
				require.NoError(t, err)
				code, _, body, data := x.chat(t, req, x.rid("spell"))
				require.Equal(t, http.StatusOK, code, "%s", data)
				p := firstPosition(t, body)
				require.True(t, strings.HasPrefix(p.token, "token_id:"), p.token)
				for _, e := range p.entries {
					require.True(t, strings.HasPrefix(e.token, "token_id:"), e.token)
					require.Equal(t, e.token, string(e.bytes), "bytes are the token's UTF-8")
					require.LessOrEqual(t, e.logprob, 0.0)
				}
			}},
		{ID: "logprob_token_ids beyond max-logprobs", Source: "vllm/sampling_params.py (_validate_logprobs); vllm/entrypoints/openai/chat_completion/protocol.py (to_sampling_params)",
			Fact:  "logprob_token_ids is not bounded by --max-logprobs (only by 128) and top_logprobs is ignored when it is set",
			Needs: needTokenIDs | needMaxLogprobs,
			Check: func(t *testing.T, x *contractCtx) {
				n := x.tg.MaxLogprobs + 10
				r := x.text("Say 0 or 1.")
				asked := ids(100, n)
				r["logprob_token_ids"], r["return_tokens_as_token_ids"], r["top_logprobs"] = asked, true, 2
				code, _, body, data := x.chat(t, r, x.rid("many"))
				require.Equal(t, http.StatusOK, code, "%s", data)
				requireSampledFirst(t, firstPosition(t, body), tokenIDs(asked))
			}},
		{ID: "logprob_token_ids 400s", Source: "vllm/entrypoints/openai/chat_completion/protocol.py (check_logprobs); vllm/sampling_params.py (MAX_LOGPROB_TOKEN_IDS, _validate_logprobs)",
			Fact:  "a logprob_token_ids without logprobs, with more than 128 ids, or with an out-of-vocabulary id is a 400 naming logprob_token_ids",
			Needs: needTokenIDs,
			Check: func(t *testing.T, x *contractCtx) {
				for name, set := range map[string]func(r map[string]any){
					"without logprobs": func(r map[string]any) { r["logprob_token_ids"], r["logprobs"] = []int{x.controls["0"]}, false },
					"129 ids":          func(r map[string]any) { r["logprob_token_ids"] = ids(100, 129) },
					"out of vocab":     func(r map[string]any) { r["logprob_token_ids"] = []int{x.controls["0"], 10_000_000} },
				} {
					r := x.text("Say 0 or 1.")
					set(r)
					code, _, _, data := x.chat(t, r, x.rid("ids400"))
					e := requireError(t, code, data, http.StatusBadRequest, name)
					require.Equal(t, "logprob_token_ids", e["param"], "%s: %s", name, data)
				}
			}},
		{ID: "logprob_token_ids empty 400", Source: "vllm/entrypoints/openai/chat_completion/protocol.py (logprob_token_ids min_length=1)",
			Fact:  "an empty logprob_token_ids is a 400 naming logprob_token_ids",
			Needs: needTokenIDs, Since: unreleased,
			Versions: "the newest protocol.py seen sets min_length=1, but PR #43463's own text says an empty list keeps the natural top-k: the release that made it a 400 is unknown",
			Check: func(t *testing.T, x *contractCtx) {
				r := x.text("Say 0 or 1.")
				r["logprob_token_ids"] = []int{}
				code, _, _, data := x.chat(t, r, x.rid("ids400"))
				e := requireError(t, code, data, http.StatusBadRequest, "empty")
				require.Equal(t, "logprob_token_ids", e["param"], "%s", data)
			}},
		{ID: "top_logprobs 400s", Source: "vllm/entrypoints/openai/chat_completion/protocol.py (check_logprobs); vllm/sampling_params.py (_validate_logprobs)",
			Fact:  "top_logprobs that is not an integer, negative other than -1, set without logprobs, -1 (the whole vocabulary) or above --max-logprobs is a 400",
			Needs: needMaxLogprobs,
			Check: func(t *testing.T, x *contractCtx) {
				for _, tc := range []struct {
					name  string
					set   func(r map[string]any)
					param string
				}{
					{"not an integer", func(r map[string]any) { r["top_logprobs"] = "two" }, "top_logprobs"},
					{"negative", func(r map[string]any) { r["top_logprobs"] = -2 }, "top_logprobs"},
					{"without logprobs", func(r map[string]any) { r["top_logprobs"], r["logprobs"] = 2, false }, "top_logprobs"},
					{"-1 beyond the cap", func(r map[string]any) { r["top_logprobs"] = -1 }, "logprobs"},
					{"above the cap", func(r map[string]any) { r["top_logprobs"] = x.tg.MaxLogprobs + 1 }, "logprobs"},
				} {
					r := x.text("Say 0 or 1.")
					tc.set(r)
					code, _, _, data := x.chat(t, r, x.rid("top400"))
					e := requireError(t, code, data, http.StatusBadRequest, tc.name)
					require.Equal(t, tc.param, e["param"], "%s: %s", tc.name, data)
				}
			}},
		{ID: "top_logprobs", Source: "vllm/entrypoints/openai/chat_completion/serving.py (_get_top_logprobs); vllm/v1/engine/logprobs.py",
			Fact: "top_logprobs k returns k entries, the sampled token first, every logprob clamped to >= -9999.0",
			Check: func(t *testing.T, x *contractCtx) {
				q := x.spec.Questions[1]
				req, err := judgments.BuildRequest(x.tg.Model, judgments.ModeTopLogprobs, 5, x.item, q, x.controls, x.urls)
				require.NoError(t, err)
				code, _, body, data := x.chat(t, req, x.rid("top"))
				require.Equal(t, http.StatusOK, code, "%s", data)
				p := firstPosition(t, body)
				require.Len(t, p.entries, 5)
				require.Equal(t, p.token, p.entries[0].token, "the sampled token first")
				for _, e := range p.entries {
					require.LessOrEqual(t, e.logprob, 0.0)
					require.GreaterOrEqual(t, e.logprob, MinLogprob)
				}
			}},
		{ID: "completion shape", Source: "vllm/entrypoints/openai/completion/protocol.py (CompletionRequest.max_tokens, CompletionResponse); completion/serving.py (_create_completion_logprobs)",
			Fact: "POST /v1/completions answers text_completion with id cmpl-<X-Request-Id>; max_tokens defaults to 16; logprobs k gives text_offset, token_logprobs, tokens spelling the text and per token at most k+1 entries, the sampled token first",
			Check: func(t *testing.T, x *contractCtx) {
				rid := x.rid("completion")
				code, _, data := x.do(t, http.MethodPost, "/v1/completions", map[string]any{"model": x.tg.Model, "prompt": "Count: 1 2 3",
					"temperature": 0, "ignore_eos": true, "logprobs": 2}, map[string]string{"X-Request-Id": rid})
				require.Equal(t, http.StatusOK, code, "%s", data)
				var body struct {
					ID      string `json:"id"`
					Object  string `json:"object"`
					Choices []struct {
						Text         string `json:"text"`
						FinishReason string `json:"finish_reason"`
						Logprobs     struct {
							TextOffset []int                `json:"text_offset"`
							Tokens     []string             `json:"tokens"`
							Top        []map[string]float64 `json:"top_logprobs"`
						} `json:"logprobs"`
					} `json:"choices"`
					Usage struct {
						CompletionTokens int `json:"completion_tokens"`
					} `json:"usage"`
				}
				require.NoError(t, json.Unmarshal(data, &body), "%s", data)
				require.Equal(t, "cmpl-"+rid, body.ID)
				require.Equal(t, "text_completion", body.Object)
				require.Equal(t, 16, body.Usage.CompletionTokens, "the default max_tokens")
				c := body.Choices[0]
				require.Equal(t, "length", c.FinishReason)
				require.Len(t, c.Logprobs.Tokens, 16)
				require.Equal(t, c.Text, strings.Join(c.Logprobs.Tokens, ""), "the tokens spell the text")
				require.Equal(t, 0, c.Logprobs.TextOffset[0])
				for i, top := range c.Logprobs.Top {
					require.LessOrEqual(t, len(top), 3, "position %d", i)
					require.Contains(t, top, c.Logprobs.Tokens[i], "position %d holds its sampled token", i)
				}
			}},
		{ID: "completion 400s", Source: "vllm/entrypoints/openai/completion/protocol.py (validate_prompt_and_prompt_embeds, check_logprobs, validate_stream_options)",
			Fact: "a completion with no prompt, an empty one, logprobs below -1, or stream_options without stream is a 400 error object",
			Check: func(t *testing.T, x *contractCtx) {
				for _, body := range []map[string]any{
					{"max_tokens": 1},
					{"prompt": "", "max_tokens": 1},
					{"prompt": "Count: 1 2 3", "max_tokens": 1, "logprobs": -2},
					{"prompt": "Count: 1 2 3", "max_tokens": 1, "stream_options": map[string]any{"include_usage": true}},
				} {
					body["model"] = x.tg.Model
					code, _, data := x.do(t, http.MethodPost, "/v1/completions", body, map[string]string{"X-Request-Id": x.rid("completion-400")})
					requireError(t, code, data, http.StatusBadRequest, fmt.Sprint(body))
				}
			}},
		{ID: "completion stream", Source: "vllm/entrypoints/openai/completion/serving.py (completion_stream_generator); vllm/benchmarks/lib/endpoint_request_func.py (async_request_openai_completions)",
			Fact: "a streamed completion, as vllm bench serve's default backend asks for it, sends one text chunk per token (choices[0].text, no delta, no role chunk), then a usage chunk with empty choices and completion_tokens = max_tokens, then [DONE]",
			Check: func(t *testing.T, x *contractCtx) {
				const n = 8
				code, _, data := x.do(t, http.MethodPost, "/v1/completions", map[string]any{"model": x.tg.Model, "prompt": "Count: 1 2 3",
					"repetition_penalty": 1.0, "max_tokens": n, "logprobs": nil, "stream": true,
					"stream_options": map[string]any{"include_usage": true}, "ignore_eos": true}, map[string]string{"X-Request-Id": x.rid("completion-stream")})
				require.Equal(t, http.StatusOK, code, "%s", data)
				var evs []string
				for _, ev := range strings.Split(strings.TrimSpace(string(data)), "\n\n") {
					evs = append(evs, strings.TrimPrefix(ev, "data: "))
				}
				require.Equal(t, "[DONE]", evs[len(evs)-1])
				texts, usage := 0, -1
				for _, ev := range evs[:len(evs)-1] {
					var ch struct {
						Object  string           `json:"object"`
						Choices []map[string]any `json:"choices"`
						Usage   *struct {
							CompletionTokens int `json:"completion_tokens"`
						} `json:"usage"`
					}
					require.NoError(t, json.Unmarshal([]byte(ev), &ch), ev)
					require.Equal(t, "text_completion", ch.Object, ev)
					if len(ch.Choices) == 0 {
						require.NotNil(t, ch.Usage, ev)
						usage = ch.Usage.CompletionTokens
						continue
					}
					require.NotContains(t, ch.Choices[0], "delta", ev)
					require.IsType(t, "", ch.Choices[0]["text"], ev)
					texts++
				}
				require.Equal(t, n, usage, "the usage chunk counts max_tokens")
				require.LessOrEqual(t, texts, n, "at most one chunk per token")
				require.Positive(t, texts)
			}},
		{ID: "temperature 400s", Source: "vllm/sampling_params.py (_verify_args)",
			Fact: "a temperature below 0 is a 400 naming temperature",
			Check: func(t *testing.T, x *contractCtx) {
				for _, temp := range []float64{-0.5} {
					r := x.text("Say 0 or 1.")
					r["temperature"] = temp
					code, _, _, data := x.chat(t, r, x.rid("temp"))
					e := requireError(t, code, data, http.StatusBadRequest, fmt.Sprint("temperature ", temp))
					require.Equal(t, "temperature", e["param"], "%s", data)
				}
			}},
		{ID: "temperature above 2", Source: "vllm/sampling_params.py (_verify_args)",
			Fact: "a temperature above 2 is a 400 naming temperature", Since: "0.24.0",
			Versions: "PR #44965 (merged June 2026; before it only the lower bound was checked); 0.24 rejects it by tenstorrent/vllm-tt-plugin#11",
			Check: func(t *testing.T, x *contractCtx) {
				for _, temp := range []float64{3} {
					r := x.text("Say 0 or 1.")
					r["temperature"] = temp
					code, _, _, data := x.chat(t, r, x.rid("temp"))
					e := requireError(t, code, data, http.StatusBadRequest, fmt.Sprint("temperature ", temp))
					require.Equal(t, "temperature", e["param"], "%s", data)
				}
			}},
		{ID: "judge", Source: "vllm/entrypoints/openai/chat_completion/serving.py",
			Fact:  "every question of a judgment scores in token_ids mode (judgments reads vLLM's shape)",
			Needs: needTokenIDs,
			Check: func(t *testing.T, x *contractCtx) {
				j, err := x.client.Judge(t.Context(), x.spec, x.controls, x.item)
				require.NoError(t, err)
				require.Len(t, j.Answers, len(x.spec.Questions))
				for _, a := range j.Answers {
					sum := 0.0
					for _, p := range a.Probabilities {
						sum += p
					}
					require.InDelta(t, 1, sum, 1e-9, a.Question)
					require.NotEmpty(t, a.Sampled)
				}
			}},
		{ID: "prompt tokens count the image", Source: "vllm/entrypoints/serve/engine/protocol.py (PromptTokenUsageInfo.multimodal_tokens: placeholder tokens already counted in prompt_tokens)",
			Fact: "usage.prompt_tokens includes the image placeholder tokens",
			Check: func(t *testing.T, x *contractCtx) {
				q := x.spec.Questions[0]
				with, err := judgments.BuildRequest(x.tg.Model, judgments.ModeTopLogprobs, 2, x.item, q, x.controls, x.urls)
				require.NoError(t, err)
				bare := x.item
				bare.Images = nil
				without, err := judgments.BuildRequest(x.tg.Model, judgments.ModeTopLogprobs, 2, bare, q, x.controls, nil)
				require.NoError(t, err)
				_, _, a, data := x.chat(t, with, "contract|img|with")
				require.NotNil(t, a, "%s", data)
				_, _, b, data := x.chat(t, without, "contract|img|without")
				require.NotNil(t, b, "%s", data)
				pa := a["usage"].(map[string]any)["prompt_tokens"].(float64)
				pb := b["usage"].(map[string]any)["prompt_tokens"].(float64)
				require.Greater(t, pa, pb+16, "image placeholder tokens are part of prompt_tokens")
			}},
		{ID: "errors", Source: "vllm/entrypoints/serve/exception_handling/error_response.py; handlers/validation.py; vllm/entrypoints/openai/models/serving.py",
			Fact: `errors are {"error": {message, type, param, code}} with HTTP status = code: malformed JSON 400, unknown model 404, a prompt over max_model_len 400`,
			Check: func(t *testing.T, x *contractCtx) {
				code, _, _, data := x.chat(t, []byte(`{"model": "x", "messages": [`), "contract|err|json")
				requireError(t, code, data, http.StatusBadRequest, "malformed JSON")
				r := x.text("Say 0 or 1.")
				r["model"] = "no-such-model"
				code, _, _, data = x.chat(t, r, "contract|err|model")
				e := requireError(t, code, data, http.StatusNotFound, "unknown model")
				require.Contains(t, e["message"], "no-such-model")
				r = x.text(strings.Repeat(" hello", x.maxLen+8))
				code, _, _, data = x.chat(t, r, "contract|err|long")
				e = requireError(t, code, data, http.StatusBadRequest, "prompt longer than max_model_len")
				msg := strings.ToLower(fmt.Sprint(e["message"]))
				require.True(t, e["param"] == "input_tokens" || e["param"] == "input_text" || strings.Contains(msg, "context length") ||
					strings.Contains(msg, "maximum model length"), "a context-length error: %v", e)
			}},
		{ID: "image limit", Source: "vllm/multimodal (validate_num_items)",
			Fact:  "more images than --limit-mm-per-prompt is a 400 saying At most N image(s)",
			Needs: needImageLimit,
			Check: func(t *testing.T, x *contractCtx) {
				many := x.item
				many.Images = nil
				var us []string
				for i := range x.tg.ImageLimit + 1 {
					many.Images = append(many.Images, twintest.PNGImage(t, 32, 32, 100+i))
					us = append(us, many.Images[i].DataURL())
				}
				req, err := judgments.BuildRequest(x.tg.Model, judgments.ModeTopLogprobs, 2, many, x.spec.Questions[0], x.controls, us)
				require.NoError(t, err)
				code, _, _, data := x.chat(t, req, "contract|err|images")
				e := requireError(t, code, data, http.StatusBadRequest, "too many images")
				require.Contains(t, e["message"], fmt.Sprintf("At most %d image(s)", x.tg.ImageLimit))
			}},
		{ID: "metrics", Source: "vllm/v1/metrics/loggers.py (PrometheusStatLogger); vllm/v1/metrics/buckets.py; vllm/entrypoints/serve/instrumentator/metrics.py",
			Fact: "/metrics is text format 0.0.4; counters are <name>_total; every engine series has model_name and engine; request_success has every finished_reason from the start; bucket edges as buckets.py builds them",
			Check: func(t *testing.T, x *contractCtx) {
				code, hdr, data := x.do(t, http.MethodGet, "/metrics", nil, nil)
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
						require.Equal(t, x.tg.Model, labels["model_name"], name)
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
					"vllm:iteration_tokens_total": iterationTokenBuckets, "vllm:request_prompt_tokens": build125Buckets(x.maxLen),
				} {
					var got []float64
					for _, b := range fams[name].GetMetric()[0].GetHistogram().GetBucket() {
						got = append(got, b.GetUpperBound())
					}
					require.Equal(t, append(append([]float64{}, want...), math.Inf(1)), got, "%s bucket edges", name)
				}
			}},
		{ID: "cache_config_info", Source: "vllm/v1/metrics/loggers.py (log_metrics_info, cache_config_info)",
			Fact: "vllm:cache_config_info is a gauge at 1 whose labels are the CacheConfig fields plus engine",
			Check: func(t *testing.T, x *contractCtx) {
				s := twintest.ScrapeMetrics(t.Context(), t, x.hc, x.tg.BaseURL)
				f, ok := s["vllm:cache_config_info"]
				require.True(t, ok)
				for _, m := range f.GetMetric() {
					require.Equal(t, 1.0, m.GetGauge().GetValue())
					labels := map[string]string{}
					for _, l := range m.GetLabel() {
						labels[l.GetName()] = l.GetValue()
					}
					require.Contains(t, labels, "engine")
					require.Contains(t, labels, "block_size")
					require.Contains(t, labels, "enable_prefix_caching")
				}
			}},
		{ID: "metrics deltas", Source: "vllm/v1/metrics/loggers.py; vllm/v1/core/kv_cache_manager.py (record_prefix_cache_stats, vllm#48860); vllm/v1/metrics/stats.py",
			Fact:  "one request moves request_success by 1, prompt_tokens by the whole prompt, prefix_cache_queries by its tokens (once, at admission) and mm_cache_queries by its images (items)",
			Needs: needExclusive,
			Check: func(t *testing.T, x *contractCtx) {
				before := twintest.ScrapeMetrics(t.Context(), t, x.hc, x.tg.BaseURL)
				q := x.spec.Questions[0]
				req, err := judgments.BuildRequest(x.tg.Model, judgments.ModeTopLogprobs, 2, x.item, q, x.controls, x.urls)
				require.NoError(t, err)
				code, _, body, data := x.chat(t, req, x.rid("delta"))
				require.Equal(t, http.StatusOK, code, "%s", data)
				after := twintest.ScrapeMetrics(t.Context(), t, x.hc, x.tg.BaseURL)
				prompt := body["usage"].(map[string]any)["prompt_tokens"].(float64)
				d := func(name string) float64 { return after.Value(name) - before.Value(name) }
				c1, _ := before.Hist("vllm:e2e_request_latency_seconds")
				c2, _ := after.Hist("vllm:e2e_request_latency_seconds")
				require.Equal(t, 1.0, d("vllm:request_success_total"))
				require.Equal(t, prompt, d("vllm:prompt_tokens_total"), "prompt_tokens counts the whole prompt")
				require.Equal(t, 1.0, d("vllm:generation_tokens_total"))
				require.Equal(t, prompt, d("vllm:prefix_cache_queries_total"), "prefix cache queries are tokens")
				require.Equal(t, float64(len(x.item.Images)), d("vllm:mm_cache_queries_total"), "mm cache queries are items")
				require.Equal(t, 1.0, c2-c1)
			}},
		{ID: "dev mode", Source: "vllm/entrypoints/serve/cache/api_router.py; vllm/entrypoints/serve/dev/cache/api_router.py",
			Fact: `the reset endpoints exist only with VLLM_SERVER_DEV_MODE=1 (else 404); /reset_prefix_cache answers 200, empty or {"success": bool}`,
			Check: func(t *testing.T, x *contractCtx) {
				switch {
				case x.tg.DevMode:
					code, _, data := x.do(t, http.MethodPost, "/reset_prefix_cache", nil, nil)
					require.Equal(t, http.StatusOK, code, "%s", data)
					if len(bytes.TrimSpace(data)) > 0 {
						var v struct {
							Success *bool `json:"success"`
						}
						require.NoError(t, json.Unmarshal(data, &v), "%s", data)
						require.NotNil(t, v.Success, "%s", data)
					}
					code, _, _ = x.do(t, http.MethodPost, "/reset_mm_cache", nil, nil)
					require.Equal(t, http.StatusOK, code)
				case x.tg.DevModeKnown:
					for _, p := range []string{"/reset_prefix_cache", "/reset_mm_cache"} {
						code, _, _ := x.do(t, http.MethodPost, p, nil, nil)
						require.Equal(t, http.StatusNotFound, code, "%s without VLLM_SERVER_DEV_MODE", p)
					}
				default:
					t.Skip("dev mode unknown for this target (VETBENCH_DEV_MODE)")
				}
			}},
		{ID: "api-key 401", Source: "vllm/entrypoints/serve/middleware/authenticate.py (AuthenticationMiddleware, PUBLIC_ENDPOINTS)",
			Fact:  `with --api-key, /v1/* answers 401 {"error": "Unauthorized"} (a string) to a missing or wrong bearer token`,
			Needs: needAuth, Versions: "PR #1106 (2023); /v1/* is guarded on every release",
			Check: func(t *testing.T, x *contractCtx) {
				paths := []struct{ method, path string }{
					{http.MethodGet, "/v1/models"}, {http.MethodPost, "/v1/chat/completions"},
				}
				for _, key := range []string{"", "not-the-key"} {
					for _, p := range paths {
						code, _, data := x.doKey(t, key, p.method, p.path, map[string]any{}, nil)
						require.Equal(t, http.StatusUnauthorized, code, "%s %s key %q: %s", p.method, p.path, key, data)
						require.JSONEq(t, `{"error": "Unauthorized"}`, string(data))
					}
				}
				code, _, _ := x.doKey(t, "", http.MethodOptions, "/v1/models", nil, nil)
				require.NotEqual(t, http.StatusUnauthorized, code, "OPTIONS (CORS preflight) passes")
			}},
		{ID: "api-key tokenize and resets", Source: "vllm/entrypoints/serve/middleware/authenticate.py (AuthenticationMiddleware)",
			Fact:  `with --api-key, /tokenize and the resets answer 401 {"error": "Unauthorized"} to a missing or wrong bearer token`,
			Needs: needAuth, Since: unreleased,
			Versions: "PR #58028 (open, Sept 2026); up to 0.29.0 --api-key guards only /v1 (docs/usage/security.md, PR #29922; issue #58144)",
			Check: func(t *testing.T, x *contractCtx) {
				paths := []struct{ method, path string }{{http.MethodPost, "/tokenize"}}
				if x.tg.DevMode {
					paths = append(paths, struct{ method, path string }{http.MethodPost, "/reset_prefix_cache"})
				}
				for _, key := range []string{"", "not-the-key"} {
					for _, p := range paths {
						code, _, data := x.doKey(t, key, p.method, p.path, map[string]any{}, nil)
						require.Equal(t, http.StatusUnauthorized, code, "%s %s key %q: %s", p.method, p.path, key, data)
						require.JSONEq(t, `{"error": "Unauthorized"}`, string(data))
					}
				}
			}},
		{ID: "api-key public paths", Source: "vllm/entrypoints/serve/middleware/authenticate.py (PUBLIC_ENDPOINTS)",
			Fact:  "with --api-key, /health, /ping, /load, /version and /metrics answer without a key",
			Needs: needAuth, Versions: "every release up to 0.29.0 at least; PR #58028 (open) would put /metrics behind the key",
			Check: func(t *testing.T, x *contractCtx) {
				for _, p := range []string{"/health", "/ping", "/version", "/metrics"} {
					code, _, data := x.doKey(t, "", http.MethodGet, p, nil, nil)
					require.Equal(t, http.StatusOK, code, "%s: %s", p, data)
				}
				code, _, _ := x.doKey(t, "", http.MethodGet, "/load", nil, nil)
				require.NotEqual(t, http.StatusUnauthorized, code, "/load is public (it answers only with server load tracking)")
			}},
		{ID: "prompt_tokens_details off", Source: "vllm/entrypoints/openai/chat_completion/serving.py (_make_prompt_tokens_details)",
			Fact:  "usage.prompt_tokens_details is null without --enable-prompt-tokens-details",
			Needs: needDetailsOff,
			Check: func(t *testing.T, x *contractCtx) {
				code, _, body, data := x.chat(t, x.text("Say 0 or 1."), x.rid("details-off"))
				require.Equal(t, http.StatusOK, code, "%s", data)
				usage := body["usage"].(map[string]any)
				require.Contains(t, usage, "prompt_tokens_details")
				require.Nil(t, usage["prompt_tokens_details"])
			}},
		{ID: "prompt_tokens_details cached_tokens", Source: "vllm/entrypoints/openai/chat_completion/serving.py (_make_prompt_tokens_details); vllm/v1/core/sched/scheduler.py (num_cached_tokens)",
			Fact:  "with --enable-prompt-tokens-details, cached_tokens is the request's prefix-cache hit in tokens, the same hit the prefix_cache_hits counter records (0 is sent as 0 by the newest code, as null by the older)",
			Needs: needDetailsOn | needExclusive,
			Check: func(t *testing.T, x *contractCtx) {
				q := x.spec.Questions[0]
				req, err := judgments.BuildRequest(x.tg.Model, judgments.ModeTopLogprobs, 2, x.item, q, x.controls, x.urls)
				require.NoError(t, err)
				req.ChatCompletionRequest.Messages[0].MultiContent[len(req.ChatCompletionRequest.Messages[0].MultiContent)-1].Text += " " + x.rid("details")
				var cached []float64
				var hits []float64
				for range 2 {
					before := twintest.ScrapeMetrics(t.Context(), t, x.hc, x.tg.BaseURL)
					code, _, body, data := x.chat(t, req, x.rid("details"))
					require.Equal(t, http.StatusOK, code, "%s", data)
					after := twintest.ScrapeMetrics(t.Context(), t, x.hc, x.tg.BaseURL)
					d := body["usage"].(map[string]any)["prompt_tokens_details"]
					n := 0.0
					if d != nil {
						n = d.(map[string]any)["cached_tokens"].(float64)
					}
					cached = append(cached, n)
					hits = append(hits, after.Value("vllm:prefix_cache_hits_total")-before.Value("vllm:prefix_cache_hits_total"))
				}
				if x.tg.DataParallel < 2 {
					// With several engines the second may land on another
					// engine, whose prefix cache is its own.
					require.Positive(t, cached[1], "the same prompt again hits the prefix cache")
				}
				require.Equal(t, hits, cached, "per-request cached_tokens reconcile with prefix_cache_hits")
			}},
		{ID: "data parallel engines", Source: "vllm/v1/metrics/loggers.py (create_metric_per_engine); vllm/v1/engine/core_client.py (DPLBAsyncMPClient.get_core_engine_for_request)",
			Fact:  "with --data-parallel-size N every engine series exists once per engine label 0..N-1 and concurrent requests are spread over the engines (least waiting×4+running)",
			Needs: needDP | needExclusive,
			Check: func(t *testing.T, x *contractCtx) {
				before := twintest.ScrapeMetrics(t.Context(), t, x.hc, x.tg.BaseURL)
				var engines []string
				for _, m := range before["vllm:num_requests_running"].GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "engine" {
							engines = append(engines, l.GetValue())
						}
					}
				}
				slices.Sort(engines)
				want := make([]string, x.tg.DataParallel)
				for i := range want {
					want[i] = strconv.Itoa(i)
				}
				require.Equal(t, want, engines)
				n := 2 * x.tg.DataParallel
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						code, _, _, data := x.chat(t, x.text(fmt.Sprintf("Say 0 or 1, request %d.", i)), x.rid("dp"))
						require.Equal(t, http.StatusOK, code, "%s", data)
					})
				}
				wg.Wait()
				after := twintest.ScrapeMetrics(t.Context(), t, x.hc, x.tg.BaseURL)
				total, busy := 0.0, 0
				for _, e := range want {
					d := after.Value("vllm:request_success_total", "engine", e) - before.Value("vllm:request_success_total", "engine", e)
					total += d
					if d > 0 {
						busy++
					}
				}
				require.Equal(t, float64(n), total, "per-engine deltas sum to the requests sent")
				require.Greater(t, busy, 1, "concurrent requests are spread over the engines")
			}},
		{ID: "older server ignores logprob_token_ids", Source: "vllm PR #43463 (logprob_token_ids added 2026-07-13), issue #43466; vllm/entrypoints/serve/engine/protocol.py (OpenAIBaseModel extra=allow)",
			Fact:  "a server older than logprob_token_ids ignores the field like any unknown one: with top_logprobs unset the position's top_logprobs is an empty list",
			Needs: needLegacy,
			Check: func(t *testing.T, x *contractCtx) {
				q := x.spec.Questions[0]
				req, err := judgments.BuildRequest(x.tg.Model, judgments.ModeTokenIDs, 0, x.item, q, x.controls, x.urls)
				require.NoError(t, err)
				code, _, body, data := x.chat(t, req, x.rid("legacy"))
				require.Equal(t, http.StatusOK, code, "%s", data)
				require.Empty(t, firstPosition(t, body).entries)
				r := x.text("Say 0 or 1.")
				r["logprob_token_ids"] = []int{}
				code, _, _, data = x.chat(t, r, x.rid("legacy-empty"))
				require.Equal(t, http.StatusOK, code, "an unknown field is not validated: %s", data)
			}},
	}
}

// contractSuite asserts vLLM's serving contract against a target: each
// fact of contractFacts whose needs the target meets.
func contractSuite(t *testing.T, tg contractTarget) {
	x := &contractCtx{tg: tg, hc: &http.Client{}}
	code, _, data := x.do(t, http.MethodGet, "/v1/models", nil, nil)
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
	if x.tg.Model == "" {
		x.tg.Model = card.ID
	}
	require.Equal(t, x.tg.Model, card.ID, "served model name")
	require.Equal(t, "model", card.Object)
	require.Equal(t, "vllm", card.OwnedBy)
	require.NotEmpty(t, card.Root, "vllm bench serve reads data[0].root")
	require.Positive(t, card.MaxModelLen)
	x.maxLen = card.MaxModelLen

	x.spec = judgments.Spec{Name: "contract", Questions: []judgments.Question{
		judgments.NewNoul("same_shape", "Do image 1 and the text describe the same shape?", "They match.", "They differ."),
		judgments.NewChoice("colour", "Pick the colour. Choose one:",
			judgments.Option{Label: "red"}, judgments.Option{Label: "green"}, judgments.Option{Label: "blue"}),
	}}
	x.item = judgments.Item{ID: "item-1", State: "A grey square on a white page.", Images: []judgments.Image{twintest.PNGImage(t, 64, 64, 7)}}
	x.client = judgments.NewClient(tg.BaseURL, judgments.WithModel(x.tg.Model), judgments.WithAPIKey(tg.APIKey), judgments.WithRequestIDPrefix("contract"))
	var err error
	x.controls, err = x.client.Tokenize(t.Context(), x.spec.Controls())
	require.NoError(t, err)
	x.urls = []string{x.item.Images[0].DataURL()}

	has := func(n need) bool {
		switch n {
		case needTokenIDs:
			return !tg.Legacy
		case needLegacy:
			return tg.Legacy
		case needAuth:
			return tg.AuthRequired && tg.APIKey != ""
		case needDetailsOn:
			return tg.PromptTokensDetails != nil && *tg.PromptTokensDetails
		case needDetailsOff:
			return tg.PromptTokensDetails != nil && !*tg.PromptTokensDetails
		case needDP:
			return tg.DataParallel >= 2
		case needExclusive:
			return tg.Exclusive
		case needMaxLogprobs:
			return tg.MaxLogprobs >= 0
		case needImageLimit:
			return tg.ImageLimit > 0
		}
		return false
	}
	for _, f := range contractFacts() {
		t.Run(f.ID, func(t *testing.T) {
			if ok, why := f.appliesTo(tg.Version); !ok {
				t.Skip(why)
			}
			for n := needTokenIDs; n <= needImageLimit; n <<= 1 {
				if f.Needs&n != 0 && !has(n) {
					t.Skipf("not this target's configuration (fact needs %s)", needName(n))
				}
			}
			f.Check(t, x)
		})
	}
}

func needName(n need) string {
	return map[need]string{needTokenIDs: "logprob_token_ids", needLegacy: "a server before PR #43463", needAuth: "--api-key",
		needDetailsOn: "--enable-prompt-tokens-details", needDetailsOff: "prompt tokens details off", needDP: "--data-parallel-size >= 2",
		needExclusive: "exclusive use", needMaxLogprobs: "a --max-logprobs cap", needImageLimit: "--limit-mm-per-prompt"}[n]
}

// TestContractFacts keeps testdata/contract_facts.md, the list of every
// fact the suite checks with its upstream source, in step with the suite
// (go test ./stub -run TestContractFacts -update rewrites it).
func TestContractFacts(t *testing.T) {
	var b strings.Builder
	b.WriteString("# vLLM facts the contract suite checks\n\n")
	b.WriteString("Written from vLLM's source, not from the twin (stub/contract_test.go, contractFacts); each runs against\n")
	b.WriteString("the twin in-process, the twin in a container and, with VETBENCH_ENDPOINT, a live vLLM.\n\n")
	b.WriteString("Against a live server, a fact that does not hold on its /version is reported not applicable (skipped), not failed.\n\n")
	b.WriteString("| fact | what vLLM does | vLLM versions | upstream source |\n|---|---|---|---|\n")
	seen := map[string]bool{}
	for _, f := range contractFacts() {
		require.NotEmpty(t, f.ID)
		require.NotEmpty(t, f.Fact, f.ID)
		require.NotEmpty(t, f.Source, f.ID)
		require.False(t, seen[f.ID], "duplicate fact %q", f.ID)
		seen[f.ID] = true
		if since, until := f.bounds(); since != "" && since != unreleased {
			mustVersion(since)
		} else if until != "" {
			mustVersion(until)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.ID, strings.ReplaceAll(f.Fact, "|", `\|`), strings.ReplaceAll(f.versions(), "|", `\|`), strings.ReplaceAll(f.Source, "|", `\|`))
	}
	path := filepath.Join("testdata", "contract_facts.md")
	if *updateFacts {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./stub -run TestContractFacts -update")
	require.Equal(t, b.String(), string(got), "%s is stale: run go test ./stub -run TestContractFacts -update", path)
}

func ptrBool(b bool) *bool { return &b }

// TestContractInProcess runs the suite against the twin in-process: the
// default server with dev mode on and off; one with --api-key and
// --enable-prompt-tokens-details; one with --data-parallel-size 2; and one
// playing a server older than logprob_token_ids.
func TestContractInProcess(t *testing.T) {
	p := ProfileFast()
	for _, tc := range []struct {
		name string
		cfg  Config
		tg   contractTarget
	}{
		{"dev=true", Config{DevMode: true}, contractTarget{DevMode: true, DevModeKnown: true, PromptTokensDetails: ptrBool(false)}},
		{"dev=false", Config{DevMode: false}, contractTarget{DevModeKnown: true, PromptTokensDetails: ptrBool(false)}},
		{"api-key details", Config{DevMode: true, APIKeys: []string{"contract-key"}, PromptTokensDetails: true},
			contractTarget{DevMode: true, DevModeKnown: true, APIKey: "contract-key", AuthRequired: true, PromptTokensDetails: ptrBool(true)}},
		{"dp=2", Config{DevMode: true, DataParallel: 2, PromptTokensDetails: true},
			contractTarget{DevMode: true, DevModeKnown: true, DataParallel: 2, PromptTokensDetails: ptrBool(true)}},
		{"older server", Config{Legacy: true, PromptTokensDetails: true},
			contractTarget{DevModeKnown: true, Legacy: true, PromptTokensDetails: ptrBool(true)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := Start(tc.cfg)
			require.NoError(t, err)
			t.Cleanup(func() { _ = rs.Close() })
			tg := tc.tg
			tg.BaseURL, tg.ImageLimit, tg.MaxLogprobs, tg.Exclusive = rs.URL(), p.LimitImages, p.MaxLogprobs, true
			contractSuite(t, tg)
		})
	}
}

// TestContractLive runs the suite against a live vLLM named by
// VETBENCH_ENDPOINT (VETBENCH_MODEL; VETBENCH_API_KEY when it runs with
// --api-key; VETBENCH_DEV_MODE=1 when it runs with VLLM_SERVER_DEV_MODE=1;
// VETBENCH_PROMPT_TOKENS_DETAILS=1 or 0 and VETBENCH_DATA_PARALLEL=N when
// known; VETBENCH_IMAGE_LIMIT and VETBENCH_MAX_LOGPROBS when not vLLM's
// defaults; VETBENCH_EXCLUSIVE=1 when nothing else uses the server).
func TestContractLive(t *testing.T) {
	url := os.Getenv("VETBENCH_ENDPOINT")
	if url == "" {
		t.Skip("VETBENCH_ENDPOINT not set: no live vLLM to check the contract against")
	}
	tg := contractTarget{BaseURL: strings.TrimRight(strings.TrimSuffix(strings.TrimRight(url, "/"), "/v1"), "/"),
		Model: os.Getenv("VETBENCH_MODEL"), APIKey: os.Getenv("VETBENCH_API_KEY"), MaxLogprobs: 20}
	tg.AuthRequired = tg.APIKey != ""
	tg.Exclusive = truthyEnv(os.Getenv("VETBENCH_EXCLUSIVE"))
	if v := os.Getenv("VETBENCH_DEV_MODE"); v != "" {
		tg.DevMode, tg.DevModeKnown = truthyEnv(v), true
	}
	if v := os.Getenv("VETBENCH_PROMPT_TOKENS_DETAILS"); v != "" {
		tg.PromptTokensDetails = ptrBool(truthyEnv(v))
	}
	tg.Version = liveVersion(t, tg.BaseURL)
	tg.Legacy = tg.Version != "" && !(contractFact{Needs: needTokenIDs}).appliesToVersion(tg.Version)
	for env, dst := range map[string]*int{"VETBENCH_IMAGE_LIMIT": &tg.ImageLimit, "VETBENCH_MAX_LOGPROBS": &tg.MaxLogprobs, "VETBENCH_DATA_PARALLEL": &tg.DataParallel} {
		if v := os.Getenv(env); v != "" {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, env)
			*dst = n
		}
	}
	contractSuite(t, tg)
}

// liveVersion is the server's /version ("" when it has none: then every
// fact is checked).
func liveVersion(t *testing.T, base string) string {
	res, err := http.Get(base + "/version")
	if err != nil {
		t.Logf("GET /version: %v: every fact checked", err)
		return ""
	}
	defer res.Body.Close()
	var v struct {
		Version string `json:"version"`
	}
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&v) != nil {
		return ""
	}
	return v.Version
}

func (f contractFact) appliesToVersion(v string) bool { ok, _ := f.appliesTo(v); return ok }

// TestContractFactsByVersion: a live server's /version decides which
// facts apply; the twin (no version) plays them all.
func TestContractFactsByVersion(t *testing.T) {
	byID := map[string]contractFact{}
	for _, f := range contractFacts() {
		byID[f.ID] = f
	}
	for _, tc := range []struct {
		fact, version string
		applies       bool
	}{
		{"judge", "0.26.0", true},
		{"judge", "0.25.1", false},
		{"judge", "0.25.1.dev40+g1234", false},
		{"judge", "0.27.1rc2", true},
		{"judge", "", true},
		{"older server ignores logprob_token_ids", "0.25.0", true},
		{"older server ignores logprob_token_ids", "0.26.0", false},
		{"temperature above 2", "0.23.1", false},
		{"temperature above 2", "0.24.0", true},
		{"temperature 400s", "0.11.0", true},
		{"api-key tokenize and resets", "0.29.0", false},
		{"api-key tokenize and resets", "", true},
		{"logprob_token_ids empty 400", "0.30.0", false},
		{"health", "not-a-version", true},
		{"judge", "not-a-version", false},
	} {
		f, ok := byID[tc.fact]
		require.True(t, ok, tc.fact)
		got, why := f.appliesTo(tc.version)
		require.Equal(t, tc.applies, got, "%s on %q", tc.fact, tc.version)
		if !got {
			require.Contains(t, why, "not applicable to vLLM "+tc.version)
		}
	}
}

func truthyEnv(s string) bool {
	switch strings.ToLower(s) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
