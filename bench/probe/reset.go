package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// Reset defaults: five tries 0.2, 0.4, 0.8, 1.6 s apart (about 3 s) leave
// time for aborted requests to release their KV blocks.
const (
	DefaultResetAttempts = 5
	DefaultResetBackoff  = 200 * time.Millisecond
)

// ResetOption configures ResetCaches.
type ResetOption func(*resetConfig)

type resetConfig struct {
	attempts int
	backoff  time.Duration
	external bool
}

// WithAttempts sets how many times a refused prefix reset is tried (≥ 1).
func WithAttempts(n int) ResetOption { return func(c *resetConfig) { c.attempts = max(n, 1) } }

// WithBackoff sets the first wait between tries; it doubles after each.
func WithBackoff(d time.Duration) ResetOption { return func(c *resetConfig) { c.backoff = d } }

// WithResetExternal also clears the KV connector's offload tier
// (?reset_external=true). Without it a server with a CPU/disk offload tier
// keeps serving prefix hits after the reset (vllm#57727), visible as
// external_prefix_cache_hits in the scrape.
func WithResetExternal() ResetOption { return func(c *resetConfig) { c.external = true } }

// WarmArm is the CacheReset of a run that did not reset: the reader is told
// the caches may hold earlier traffic.
func WarmArm() receipts.CacheReset {
	return receipts.CacheReset{Arm: receipts.ArmWarm, Note: "caches not reset: may hold earlier runs' prefixes and images"}
}

// ResetCaches empties the server's prefix, multimodal-processor and encoder
// caches so the measured window does not measure its own warm cache (a ladder
// of runs at rising concurrency otherwise reports up to 86% more throughput
// than the same server cold, vllm#52884).
//
// The endpoints exist only with VLLM_SERVER_DEV_MODE=1: a 404 means dev mode
// is off and is recorded, not an error. The prefix reset answers 200 with
// {"success": bool} since vLLM 0.26 (false while requests hold blocks: retried
// with backoff, then recorded as not reset; a 409 is the same refusal in one
// variant) and 200 with an empty body before (vLLM does not check, so it is
// recorded as reset but unconfirmed). Any other status is an error: the
// runner cannot claim a cold arm it did not get.
func ResetCaches(ctx context.Context, hc *http.Client, baseURL string, authorize func(*http.Request), opts ...ResetOption) (receipts.CacheReset, error) {
	cfg := resetConfig{attempts: DefaultResetAttempts, backoff: DefaultResetBackoff}
	for _, o := range opts {
		o(&cfg)
	}
	base := strings.TrimRight(baseURL, "/")
	out := receipts.CacheReset{Requested: true, Arm: receipts.ArmCold}
	var notes []string

	prefixPath := "/reset_prefix_cache"
	if cfg.external {
		prefixPath += "?reset_external=true"
	}
	targets := []struct {
		name, path string
		retry      bool
		done       *bool
	}{
		{"prefix", prefixPath, true, &out.Prefix},
		{"mm", "/reset_mm_cache", false, &out.MM},
		{"encoder", "/reset_encoder_cache", false, &out.Encoder},
	}
	devModeOff := false
	for _, tg := range targets {
		res, err := resetOne(ctx, hc, base+tg.path, authorize, tg.retry, cfg)
		if err != nil {
			return out, err
		}
		*tg.done = res.done
		switch {
		case res.notFound && tg.name == "prefix":
			devModeOff = true
		case res.notFound && !devModeOff:
			notes = append(notes, tg.name+" cache: no reset endpoint on this server (404)")
		case res.note != "":
			notes = append(notes, tg.name+" cache: "+res.note)
		}
	}
	if devModeOff {
		notes = append([]string{"reset endpoints answer 404: VLLM_SERVER_DEV_MODE is off, caches not reset"}, notes...)
	}
	out.Note = strings.Join(notes, "; ")
	return out, nil
}

type resetResult struct {
	done, notFound bool
	note           string
}

func resetOne(ctx context.Context, hc *http.Client, target string, authorize func(*http.Request), retry bool, cfg resetConfig) (resetResult, error) {
	wait := cfg.backoff
	attempts := 1
	if retry {
		attempts = cfg.attempts
	}
	for try := 1; ; try++ {
		status, body, err := call(ctx, hc, http.MethodPost, target, authorize)
		if err != nil {
			return resetResult{}, err
		}
		shown := redact(target)
		var refused string
		switch status {
		case http.StatusOK:
			trimmed := bytes.TrimSpace(body)
			if len(trimmed) == 0 {
				// /reset_mm_cache and /reset_encoder_cache always answer
				// so; only the prefix reset can say more (since 0.26).
				r := resetResult{done: true}
				if retry {
					r.note = "200 with empty body (this vLLM does not confirm the reset)"
				}
				return r, nil
			}
			var v struct {
				Success *bool `json:"success"`
			}
			if err := json.Unmarshal(trimmed, &v); err != nil || v.Success == nil {
				return resetResult{}, fmt.Errorf("POST %s: 200 with unexpected body %s (want empty or {\"success\": bool})", shown, snippet(authorize, body))
			}
			if *v.Success {
				return resetResult{done: true}, nil
			}
			refused = `{"success": false}`
		case http.StatusNotFound:
			return resetResult{notFound: true}, nil
		case http.StatusConflict:
			refused = "409 " + snippet(authorize, body)
		case http.StatusUnauthorized:
			return resetResult{}, judgments.Unauthorized("POST "+shown, keySent(authorize))
		default:
			return resetResult{}, fmt.Errorf("POST %s: HTTP %d: %s", shown, status, snippet(authorize, body))
		}
		if try >= attempts {
			return resetResult{note: fmt.Sprintf("not reset: refused %d time(s), last %s (requests still hold KV blocks?)", try, refused)}, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return resetResult{}, fmt.Errorf("POST %s: %w", redact(target), ctx.Err())
		case <-t.C:
		}
		wait *= 2
	}
}
