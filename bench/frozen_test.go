package bench_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/target"
	"github.com/vetbench/vetbench/judgments/errclass"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/stub"
)

// freezer stands in front of a twin and, once frozen, accepts requests and
// never answers them, as a SIGSTOPped server does. It freezes after the
// chat request numbered at (0: never on its own).
type freezer struct {
	*httptest.Server
	frozen atomic.Bool
	chats  atomic.Int64
}

func newFreezer(t *testing.T, at int64) *freezer {
	t.Helper()
	tg, err := target.InProcess(stub.Config{DevMode: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tg.Close() })
	u, err := url.Parse(tg.Endpoint.BaseURL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	f := &freezer{}
	release := make(chan struct{})
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") && f.chats.Add(1) == at {
			f.frozen.Store(true)
		}
		if f.frozen.Load() {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(release); f.Close() })
	return f
}

func (f *freezer) endpoint() bench.Endpoint {
	return bench.Endpoint{BaseURL: f.URL, Target: receipts.Target{Kind: receipts.TargetLive}}
}

// A server that freezes mid-window: the requests in flight time out at
// VETBENCH_TIMEOUT, the closing scrape and the health check at the control
// deadline, and Measure returns what it measured, with the stop and the
// server down said. No wall-clock figure is asserted: that it returns,
// and why.
func TestMeasureFrozenServer(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 14)
	cfg := testConfig()
	cfg.RequestTimeout = 300 * time.Millisecond // and the control deadline with it
	f := newFreezer(t, 1+4*3+1)                 // after the capability check, the 4th judgment's first question
	sess, err := bench.NewSession(t.Context(), f.endpoint(), set, sweep.SessionOptions(cfg))
	require.NoError(t, err)
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 1})
	require.ErrorIs(t, err, bench.ErrStopped)
	require.ErrorIs(t, err, bench.ErrServerDown)
	require.NotNil(t, rec, "what was measured is returned")
	require.Equal(t, receipts.StopTimeout, rec.Stopped.Reason)
	require.Equal(t, errclass.Timeout, rec.Stopped.ErrorClass)
	require.Equal(t, 3, rec.Throughput.Judgments)
	require.Equal(t, 3, rec.Stopped.Index)
	require.NotEqual(t, "ok", rec.Server.Status, "the closing scrape timed out and says so")
	require.Contains(t, strings.Join(rec.Warnings, "\n"), "server down: timeout")
	require.NoError(t, rec.Validate())

	// Frozen from the start: the probe gives up, named a timeout.
	f.frozen.Store(true)
	_, err = bench.NewSession(t.Context(), f.endpoint(), set, sweep.SessionOptions(cfg))
	require.Error(t, err)
	require.Equal(t, errclass.Timeout, errclass.Of(err), "%v", err)
	// and so does the cold arm's cache reset, with no receipt.
	rec, err = sess.Measure(t.Context(), bench.Point{Concurrency: 2})
	require.Nil(t, rec)
	require.ErrorContains(t, err, "reset caches")
	require.ErrorIs(t, err, bench.ErrServerDown)
}

// The library path, below the configuration's refusals: a base URL with
// user info (Go sends it as basic auth) and one with a query, with an API
// key, against a failing twin. No error, receipt or warning holds them.
func TestSessionLeaksNoSecrets(t *testing.T) {
	const key, user, pass, token = "KEYSECRET1", "USERSECRET2", "PASSSECRET3", "QUERYSECRET4"
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 7)
	f, err := stub.ParseFault("http500:every=5")
	require.NoError(t, err)
	tg, err := target.InProcess(stub.Config{DevMode: true, Faults: []stub.Fault{f}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tg.Close() })
	hostport := strings.TrimPrefix(tg.Endpoint.BaseURL, "http://")
	cfg := testConfig()
	cfg.ContinueOnError = true

	var all strings.Builder
	ep := bench.Endpoint{BaseURL: "http://" + user + ":" + pass + "@" + hostport, APIKey: key, Target: receipts.Target{Kind: receipts.TargetLive}}
	sess, err := bench.NewSession(t.Context(), ep, set, sweep.SessionOptions(cfg))
	require.NoError(t, err)
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 2})
	require.ErrorIs(t, err, bench.ErrFailures, "the run ran, and failed")
	all.WriteString(err.Error())
	data, err := json.Marshal(rec)
	require.NoError(t, err)
	all.Write(data)

	ep.BaseURL = "http://" + user + ":" + pass + "@" + hostport + "/?token=" + token
	_, err = bench.NewSession(t.Context(), ep, set, sweep.SessionOptions(cfg))
	require.Error(t, err)
	all.WriteString(err.Error())

	require.Contains(t, all.String(), "http_500")
	for _, secret := range []string{key, user, pass, token} {
		require.NotContains(t, all.String(), secret)
	}
}
