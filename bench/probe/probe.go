// Package probe asks a vLLM server who it is (/v1/models, /version) and
// empties its caches before a cold measurement (/reset_prefix_cache,
// /reset_mm_cache, /reset_encoder_cache). What it learns goes into the
// receipt's Pins and Server.CacheReset, so two runs against different
// models, builds or cache states cannot be compared without anyone noticing.
package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// maxBody bounds what probe reads from any answer; these are tiny JSON bodies.
const maxBody = 1 << 20

// Info is what the server says about itself.
type Info struct {
	// Served is /v1/models, in the server's order (base model first, then
	// LoRA adapters).
	Served []receipts.ServedModel
	// Version is vLLM's version from /version; empty when the server has no
	// /version (then Notes says so).
	Version string
	// Notes are facts worth showing that are not errors.
	Notes []string
}

// Server reads /v1/models and /version. authorize may be nil; it adds the
// caller's credentials (the API key guards /v1/*).
func Server(ctx context.Context, hc *http.Client, baseURL string, authorize func(*http.Request)) (Info, error) {
	base := strings.TrimRight(baseURL, "/")
	shown := redact(base)
	var info Info

	var models struct {
		Data []struct {
			ID          string `json:"id"`
			Root        string `json:"root"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	status, body, final, err := callFinal(ctx, hc, http.MethodGet, base+"/v1/models", authorize)
	if err != nil {
		return info, err
	}
	info.noteRedirect("/v1/models", base+"/v1/models", final)
	if status == http.StatusUnauthorized {
		return info, judgments.Unauthorized("GET "+shown+"/v1/models", keySent(authorize))
	}
	if status != http.StatusOK {
		return info, fmt.Errorf("GET %s/v1/models: HTTP %d: %s", shown, status, snippet(authorize, body))
	}
	if err := json.Unmarshal(body, &models); err != nil {
		return info, fmt.Errorf("GET %s/v1/models: decode %d-byte body: %w", shown, len(body), err)
	}
	if len(models.Data) == 0 {
		return info, fmt.Errorf("GET %s/v1/models: the server lists no model", shown)
	}
	for i, m := range models.Data {
		if m.ID == "" {
			return info, fmt.Errorf("GET %s/v1/models: data[%d] has no id", shown, i)
		}
		info.Served = append(info.Served, receipts.ServedModel{ID: m.ID, Root: m.Root, MaxModelLen: m.MaxModelLen})
	}

	status, body, final, err = callFinal(ctx, hc, http.MethodGet, base+"/version", authorize)
	info.noteRedirect("/version", base+"/version", final)
	switch {
	case err != nil:
		return info, err
	case status == http.StatusNotFound:
		info.Notes = append(info.Notes, "the server has no /version: build unknown (not vLLM?)")
	case status == http.StatusUnauthorized:
		return info, judgments.Unauthorized("GET "+shown+"/version", keySent(authorize))
	case status != http.StatusOK:
		return info, fmt.Errorf("GET %s/version: HTTP %d: %s", shown, status, snippet(authorize, body))
	default:
		var v struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return info, fmt.Errorf("GET %s/version: decode %d-byte body: %w", shown, len(body), err)
		}
		if v.Version == "" {
			return info, fmt.Errorf("GET %s/version: no version in %s", shown, snippet(authorize, body))
		}
		info.Version = v.Version
	}
	return info, nil
}

// Check fails unless model is one of the served ids: a run configured for one
// model and answered by another must not produce a receipt.
func (i Info) Check(model string) error {
	ids := make([]string, len(i.Served))
	for n, m := range i.Served {
		ids[n] = m.ID
	}
	if !slices.Contains(ids, model) {
		return fmt.Errorf("model %q is not served (the server lists %q)", model, ids)
	}
	return nil
}

// Pin records the probe in a receipt's pins.
func (i Info) Pin(p *receipts.Pins) {
	p.Served = slices.Clone(i.Served)
	p.ServerBuild = i.Version
}

// DefaultTimeout bounds each request of this package when neither the
// context nor the HTTP client does: no wait on a server is unbounded.
const DefaultTimeout = 10 * time.Second

// noteRedirect records where a probe was answered when a redirect (within
// the origin: a Guard-ed client follows no other) moved it.
func (i *Info) noteRedirect(path, asked, final string) {
	if final != "" && final != asked {
		i.Notes = append(i.Notes, fmt.Sprintf("GET %s was redirected: answered at %s", path, redact(final)))
	}
}

// call sends one request with no body and returns the status and body.
func call(ctx context.Context, hc *http.Client, method, target string, authorize func(*http.Request)) (int, []byte, error) {
	status, body, _, err := callFinal(ctx, hc, method, target, authorize)
	return status, body, err
}

// callFinal is call that also returns the URL that answered (after
// redirects).
func callFinal(ctx context.Context, hc *http.Client, method, target string, authorize func(*http.Request)) (int, []byte, string, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	if _, ok := ctx.Deadline(); !ok && hc.Timeout <= 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return 0, nil, "", fmt.Errorf("%s %s: %w", method, redact(target), judgments.RedactError(err))
	}
	req.Header.Set("Accept", "application/json")
	if authorize != nil {
		authorize(req)
	}
	res, err := hc.Do(req)
	if err != nil {
		// *url.Error names the URL, redacted here.
		return 0, nil, "", fmt.Errorf("%s: %w", method, judgments.RedactError(err))
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return 0, nil, "", fmt.Errorf("%s %s: read body: %w", method, redact(target), err)
	}
	return res.StatusCode, body, res.Request.URL.String(), nil
}

// redact hides a URL's user info and query: errors end up in logs.
func redact(raw string) string { return judgments.RedactURL(raw) }

// snippet is the start of a server's body fit for a message: the key
// authorize sends redacted (a server may echo it, and one shorter than
// judgments.MinMaskedKey is not masked on the wire), at most 200 bytes,
// Printable (the message reaches the terminal).
func snippet(authorize func(*http.Request), b []byte) string {
	s := judgments.SentKey(authorize).Redact(strings.TrimSpace(string(b)))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return judgments.Printable(s)
}

// keySent says whether authorize puts a bearer token on a request: what a
// 401 means depends on it (judgments.AuthHint). The key is not kept.
func keySent(authorize func(*http.Request)) bool {
	return judgments.SentKey(authorize) != ""
}
