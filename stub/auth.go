package stub

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// The --api-key middleware, as vLLM's AuthenticationMiddleware
// (vllm/entrypoints/serve/middleware/authenticate.py) has it: every
// registered route is guarded unless a public endpoint covers it, plus a
// fail-closed floor of prefixes; OPTIONS (CORS preflight) passes; a missing
// or wrong bearer token gets 401 {"error": "Unauthorized"} (a string, not
// the usual error object).

// publicEndpoints stay reachable without a key.
var publicEndpoints = []string{"/health", "/ping", "/load", "/version", "/metrics",
	"/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json", "/static"}

// minGuardedPrefixes are guarded whatever the route table says.
var minGuardedPrefixes = []string{"/v1", "/v2", "/inference", "/cohere"}

// isPublicPath matches exactly or on a path-segment boundary, so
// /healthcheck is not covered by /health.
func isPublicPath(path, public string) bool {
	return path == public || strings.HasPrefix(path, strings.TrimRight(public, "/")+"/")
}

// guardedPrefixes derives what the key guards from the twin's routes.
func guardedPrefixes(routes []string) []string {
	out := append([]string(nil), minGuardedPrefixes...)
	for _, r := range routes {
		public := false
		for _, p := range publicEndpoints {
			public = public || isPublicPath(r, p)
		}
		if !public {
			out = append(out, r)
		}
	}
	return out
}

// denied answers 401 and returns true when the request needs a key it did
// not bring.
func (s *Server) denied(w http.ResponseWriter, r *http.Request) bool {
	if len(s.apiKeys) == 0 || r.Method == http.MethodOptions {
		return false
	}
	guarded := false
	for _, p := range s.guarded {
		guarded = guarded || strings.HasPrefix(r.URL.Path, p)
	}
	if !guarded || s.tokenOK(r.Header.Get("Authorization")) {
		return false
	}
	writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
	return true
}

// tokenOK compares the bearer token's hash with each key's in constant
// time, as vLLM does.
func (s *Server) tokenOK(header string) bool {
	scheme, param, _ := strings.Cut(header, " ")
	if header == "" || !strings.EqualFold(scheme, "bearer") {
		return false
	}
	got := sha256.Sum256([]byte(param))
	ok := 0
	for _, k := range s.apiKeys {
		ok |= subtle.ConstantTimeCompare(got[:], k[:])
	}
	return ok == 1
}
