package probe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrEngineDead is a /health that answers 503: vLLM's engine died
// (EngineDeadError) and every request will fail until it is restarted.
var ErrEngineDead = errors.New("engine dead: GET /health answers 503")

// Health asks GET /health whether the server can still serve. nil: it
// answered 200, or a status that says nothing about the engine (a server
// without /health, 404); ErrEngineDead for 503; the request's error when
// nothing answered (refused, reset, timed out), which a caller tells from
// its own cancel by its context.
func Health(ctx context.Context, hc *http.Client, baseURL string, authorize func(*http.Request)) error {
	status, _, err := call(ctx, hc, http.MethodGet, strings.TrimRight(baseURL, "/")+"/health", authorize)
	switch {
	case err != nil:
		return fmt.Errorf("health: %w", err)
	case status == http.StatusServiceUnavailable:
		return ErrEngineDead
	}
	return nil
}
