package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/judgments"
)

// TokenIDsMinVersion is the first vLLM release whose chat endpoint
// honours logprob_token_ids: PR #43463 (merged 2026-07-13) landed after
// 0.25.0, and 0.25.1 is a two-commit patch release without it, so 0.26.0
// is the floor for token_ids scoring. Older servers score with
// top_logprobs (VETBENCH_SCORING=top_logprobs, or
// VETBENCH_SCORING_FALLBACK=true to fall back by itself).
const TokenIDsMinVersion = "0.26.0"

// TokenIDs is what one request told about logprob_token_ids (vLLM PR
// #43463): a server that honours it returns every asked id at the first
// position; an older one ignores the field, as it ignores any unknown one,
// and returns none.
type TokenIDs struct {
	// Honoured: every asked id came back.
	Honoured bool
	// Asked are the ids asked; Missing those the answer did not carry.
	Asked, Missing []int
}

// LogprobTokenIDs asks the server for one token with logprob_token_ids set
// to ids (the run's control token ids) and says whether the answer carries
// them, before anything is measured: a server that ignores the field would
// fail every question of a token_ids run with "missing candidate". The
// request is a short text prompt, outside every measured window.
func LogprobTokenIDs(ctx context.Context, hc *http.Client, baseURL string, authorize func(*http.Request), model string, ids []int) (TokenIDs, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	out := TokenIDs{Asked: append([]int(nil), ids...)}
	base := strings.TrimRight(baseURL, "/")
	target := base + "/v1/chat/completions"
	shown := redact(target)
	body, err := json.Marshal(map[string]any{
		"model": model, "max_tokens": 1, "temperature": 0, "logprobs": true,
		"logprob_token_ids": ids, "return_tokens_as_token_ids": true,
		"messages": []any{map[string]any{"role": "user", "content": "Answer with one character."}},
	})
	if err != nil {
		return out, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return out, fmt.Errorf("POST %s: %w", shown, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "vetbench-probe|capability|logprob_token_ids")
	if authorize != nil {
		authorize(req)
	}
	res, err := hc.Do(req)
	if err != nil {
		return out, fmt.Errorf("POST: %w", err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return out, fmt.Errorf("POST %s: read body: %w", shown, err)
	}
	switch {
	case res.StatusCode == http.StatusUnauthorized:
		return out, judgments.Unauthorized("POST "+shown, req.Header.Get("Authorization") != "")
	case res.StatusCode != http.StatusOK:
		return out, fmt.Errorf("POST %s (logprob_token_ids probe): HTTP %d: %s", shown, res.StatusCode, snippet(authorize, data))
	}
	var resp struct {
		Choices []struct {
			Logprobs *struct {
				Content []struct {
					TopLogprobs []struct {
						Token string `json:"token"`
					} `json:"top_logprobs"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return out, fmt.Errorf("POST %s (logprob_token_ids probe): decode %d-byte body: %w", shown, len(data), err)
	}
	got := map[int]bool{}
	if len(resp.Choices) > 0 && resp.Choices[0].Logprobs != nil && len(resp.Choices[0].Logprobs.Content) > 0 {
		for _, e := range resp.Choices[0].Logprobs.Content[0].TopLogprobs {
			if s, ok := strings.CutPrefix(e.Token, "token_id:"); ok {
				if id, err := strconv.Atoi(s); err == nil {
					got[id] = true
				}
			}
		}
	}
	for _, id := range ids {
		if !got[id] {
			out.Missing = append(out.Missing, id)
		}
	}
	out.Honoured = len(out.Missing) == 0
	return out, nil
}
