package probe

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHealth(t *testing.T) {
	status := func(code int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/health" {
				code = http.StatusTeapot
			}
			w.WriteHeader(code)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	require.NoError(t, Health(t.Context(), nil, status(http.StatusOK), nil))
	require.NoError(t, Health(t.Context(), nil, status(http.StatusNotFound)+"/", nil), "no /health: cannot say")
	require.ErrorIs(t, Health(t.Context(), nil, status(http.StatusServiceUnavailable), nil), ErrEngineDead)

	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	err := Health(t.Context(), nil, gone.URL, nil)
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrEngineDead)

	// A frozen server is given up on at the client's deadline.
	hang := make(chan struct{})
	frozen := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang); frozen.Close() })
	err = Health(t.Context(), &http.Client{Timeout: 50 * time.Millisecond}, frozen.URL, nil)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout())
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, Health(ctx, nil, frozen.URL, nil), context.DeadlineExceeded)
}

// Every wait of the probe and the resets ends at the deadline of the
// client or the context: a server that accepts and never answers does
// not hold a run.
func TestProbeAndResetBounded(t *testing.T) {
	hang := make(chan struct{})
	frozen := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang); frozen.Close() })
	hc := &http.Client{Timeout: 50 * time.Millisecond}
	_, err := Server(t.Context(), hc, frozen.URL, nil)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "%v", err)
	_, err = ResetCaches(t.Context(), hc, frozen.URL, nil)
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "%v", err)
}

// Errors name the server without its user info or query.
func TestProbeErrorsRedacted(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	base := strings.Replace(gone.URL, "http://", "http://USERSECRET:PASSSECRET@", 1) + "/?token=QUERYSECRET"
	_, err := Server(t.Context(), nil, base, nil)
	require.Error(t, err)
	_, rerr := ResetCaches(t.Context(), nil, base, nil)
	require.Error(t, rerr)
	herr := Health(t.Context(), nil, base, nil)
	require.Error(t, herr)
	for _, e := range []error{err, rerr, herr} {
		for _, s := range []string{"USERSECRET", "PASSSECRET", "QUERYSECRET"} {
			require.NotContains(t, e.Error(), s)
		}
		require.Contains(t, e.Error(), "xxxxx@")
	}
}
