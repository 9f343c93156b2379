package probe

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostileBody is an error body from a hostile server: terminal escapes
// (retitle, clear, colour), a carriage return that overwrites the line,
// a bidi override, and the key it was sent (here 6 characters, under
// judgments.MinMaskedKey, so not masked on the wire).
const hostileBody = "\x1b]0;PWNED\a\x1b[2J\x1b[31mEVIL\r\x1b[Kfake ok\u202e auth=Bearer secret"

// TestHostileBodiesInErrors: what a server says in an error body reaches
// the terminal (vetbench prints the error on stderr) and the run's
// messages; it is printable there, and the key the server echoes is
// redacted whatever its length.
func TestHostileBodiesInErrors(t *testing.T) {
	models := route{200, modelsBody}
	for _, tc := range []struct {
		name   string
		routes map[string]route
		call   func(t *testing.T, base string, hc *http.Client) error
	}{
		{"models 500", map[string]route{"GET /v1/models": {500, hostileBody}}, serverErr},
		{"version 500", map[string]route{"GET /v1/models": models, "GET /version": {500, hostileBody}}, serverErr},
		{"version without one", map[string]route{"GET /v1/models": models, "GET /version": {200, `{"x":"Bearer secret"}`}}, serverErr},
		{"reset 500", map[string]route{"POST /reset_prefix_cache": {500, hostileBody}}, resetErr},
		{"reset 200 unexpected", map[string]route{"POST /reset_prefix_cache": {200, hostileBody}}, resetErr},
		{"capability 500", map[string]route{"POST /v1/chat/completions": {500, hostileBody}}, capabilityErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := server(t, tc.routes)
			err := tc.call(t, srv.URL, srv.Client())
			require.Error(t, err)
			for _, bad := range []string{"\x1b", "\r", "\a", "\u202e", "secret"} {
				require.NotContains(t, err.Error(), bad)
			}
			for _, rt := range tc.routes {
				if strings.Contains(rt.body, "\x1b[2J") {
					require.Contains(t, err.Error(), `\x1b[2J`, "the text is escaped, not dropped")
				}
			}
		})
	}
}

func serverErr(t *testing.T, base string, hc *http.Client) error {
	_, err := Server(t.Context(), hc, base, auth)
	return err
}

func resetErr(t *testing.T, base string, hc *http.Client) error {
	_, err := ResetCaches(t.Context(), hc, base, auth)
	return err
}

func capabilityErr(t *testing.T, base string, hc *http.Client) error {
	_, err := LogprobTokenIDs(t.Context(), hc, base, auth, "m", []int{1})
	return err
}
