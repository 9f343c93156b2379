package probe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

// modelsBody is vLLM's /v1/models answer (2.5 of the contract), trimmed of
// the permission list's less interesting fields.
const modelsBody = `{"object":"list","data":[{"id":"google/gemma-4-31B-it","object":"model","created":1790001300,"owned_by":"vllm","root":"google/gemma-4-31B-it","parent":null,"max_model_len":8192,"permission":[{"id":"modelperm-1","object":"model_permission","allow_logprobs":true}]},{"id":"faces-lora","object":"model","owned_by":"vllm","root":"/adapters/faces","parent":"google/gemma-4-31B-it"}]}`

type route struct {
	status int
	body   string
}

// server answers path → route and counts calls per path.
func server(t *testing.T, routes map[string]route) (*httptest.Server, func(string) int) {
	t.Helper()
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.Method+" "+r.URL.RequestURI()]++
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		rt, ok := routes[r.Method+" "+r.URL.RequestURI()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rt.status)
		_, _ = w.Write([]byte(rt.body))
	}))
	t.Cleanup(srv.Close)
	return srv, func(k string) int {
		mu.Lock()
		defer mu.Unlock()
		return calls[k]
	}
}

func auth(r *http.Request) { r.Header.Set("Authorization", "Bearer secret") }

func TestServer(t *testing.T) {
	srv, _ := server(t, map[string]route{
		"GET /v1/models": {200, modelsBody},
		"GET /version":   {200, `{"version":"0.30.0"}`},
	})
	info, err := Server(t.Context(), srv.Client(), srv.URL+"/", auth)
	require.NoError(t, err)
	require.Equal(t, []receipts.ServedModel{
		{ID: "google/gemma-4-31B-it", Root: "google/gemma-4-31B-it", MaxModelLen: 8192},
		{ID: "faces-lora", Root: "/adapters/faces"},
	}, info.Served)
	require.Equal(t, "0.30.0", info.Version)
	require.Empty(t, info.Notes)

	require.NoError(t, info.Check("google/gemma-4-31B-it"))
	err = info.Check("google/gemma-4-12B-it")
	require.ErrorContains(t, err, `model "google/gemma-4-12B-it" is not served (the server lists ["google/gemma-4-31B-it" "faces-lora"])`)

	var pins receipts.Pins
	info.Pin(&pins)
	require.Equal(t, info.Served, pins.Served)
	require.Equal(t, "0.30.0", pins.ServerBuild)
}

func TestServerFailures(t *testing.T) {
	tests := []struct {
		name   string
		routes map[string]route
		auth   func(*http.Request)
		want   string
		notes  []string
	}{
		{name: "no /version is a note", routes: map[string]route{"GET /v1/models": {200, modelsBody}},
			notes: []string{"the server has no /version: build unknown (not vLLM?)"}},
		{name: "unauthorized", routes: map[string]route{}, auth: func(*http.Request) {}, want: "/v1/models: HTTP 401"},
		{name: "models 500", routes: map[string]route{"GET /v1/models": {500, `{"error":{"message":"engine dead"}}`}}, want: `/v1/models: HTTP 500: {"error":{"message":"engine dead"}}`},
		{name: "no models", routes: map[string]route{"GET /v1/models": {200, `{"object":"list","data":[]}`}}, want: "lists no model"},
		{name: "model without id", routes: map[string]route{"GET /v1/models": {200, `{"data":[{"root":"x"}]}`}}, want: "data[0] has no id"},
		{name: "models not JSON", routes: map[string]route{"GET /v1/models": {200, `<html>`}}, want: "/v1/models: decode 6-byte body"},
		{name: "version 500", routes: map[string]route{"GET /v1/models": {200, modelsBody}, "GET /version": {500, "x"}}, want: "/version: HTTP 500"},
		{name: "version empty", routes: map[string]route{"GET /v1/models": {200, modelsBody}, "GET /version": {200, `{}`}}, want: "/version: no version in {}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := server(t, tt.routes)
			a := tt.auth
			if a == nil {
				a = auth
			}
			info, err := Server(t.Context(), srv.Client(), srv.URL, a)
			if tt.want != "" {
				require.ErrorContains(t, err, tt.want)
				return
			}
			require.NoError(t, err)
			require.Empty(t, info.Version)
			require.Equal(t, tt.notes, info.Notes)
		})
	}
}

func TestServerUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	_, err := Server(t.Context(), http.DefaultClient, srv.URL, nil)
	require.ErrorContains(t, err, "connection refused")
}

func TestResetCaches(t *testing.T) {
	fast := []ResetOption{WithBackoff(time.Millisecond)}
	tests := []struct {
		name   string
		routes map[string]route
		opts   []ResetOption
		want   receipts.CacheReset
		// prefixCalls is how often /reset_prefix_cache was asked.
		prefixCalls int
		prefixPath  string
	}{
		{
			name: "vLLM ≥0.26: success true",
			routes: map[string]route{
				"POST /reset_prefix_cache":  {200, `{"success":true}`},
				"POST /reset_mm_cache":      {200, ""},
				"POST /reset_encoder_cache": {200, ""},
			},
			want:        receipts.CacheReset{Requested: true, Prefix: true, MM: true, Encoder: true, Arm: receipts.ArmCold},
			prefixCalls: 1,
		},
		{
			name: "old vLLM: empty 200 everywhere",
			routes: map[string]route{
				"POST /reset_prefix_cache":  {200, "\n"},
				"POST /reset_mm_cache":      {200, ""},
				"POST /reset_encoder_cache": {404, `{"detail":"Not Found"}`},
			},
			want: receipts.CacheReset{Requested: true, Prefix: true, MM: true, Arm: receipts.ArmCold,
				Note: "prefix cache: 200 with empty body (this vLLM does not confirm the reset); encoder cache: no reset endpoint on this server (404)"},
			prefixCalls: 1,
		},
		{
			name: "success false every time: retried, then not reset",
			routes: map[string]route{
				"POST /reset_prefix_cache":  {200, `{"success": false}`},
				"POST /reset_mm_cache":      {200, `{"success":true}`},
				"POST /reset_encoder_cache": {200, `{"success":true}`},
			},
			opts: append([]ResetOption{WithAttempts(3)}, fast...),
			want: receipts.CacheReset{Requested: true, MM: true, Encoder: true, Arm: receipts.ArmCold,
				Note: `prefix cache: not reset: refused 3 time(s), last {"success": false} (requests still hold KV blocks?)`},
			prefixCalls: 3,
		},
		{
			name: "409 is a refusal too",
			routes: map[string]route{
				"POST /reset_prefix_cache":  {409, `{"error":{"message":"Prefix cache reset failed."}}`},
				"POST /reset_mm_cache":      {200, `{"success":true}`},
				"POST /reset_encoder_cache": {200, `{"success":true}`},
			},
			opts: append([]ResetOption{WithAttempts(2)}, fast...),
			want: receipts.CacheReset{Requested: true, MM: true, Encoder: true, Arm: receipts.ArmCold,
				Note: `prefix cache: not reset: refused 2 time(s), last 409 {"error":{"message":"Prefix cache reset failed."}} (requests still hold KV blocks?)`},
			prefixCalls: 2,
		},
		{
			name:        "dev mode off: 404 recorded, not an error",
			routes:      map[string]route{},
			want:        receipts.CacheReset{Requested: true, Arm: receipts.ArmCold, Note: "reset endpoints answer 404: VLLM_SERVER_DEV_MODE is off, caches not reset"},
			prefixCalls: 1,
		},
		{
			name: "reset_external",
			routes: map[string]route{
				"POST /reset_prefix_cache?reset_external=true": {200, `{"success":true}`},
				"POST /reset_mm_cache":                         {200, `{"success":true}`},
				"POST /reset_encoder_cache":                    {200, `{"success":true}`},
			},
			opts:        []ResetOption{WithResetExternal()},
			want:        receipts.CacheReset{Requested: true, Prefix: true, MM: true, Encoder: true, Arm: receipts.ArmCold},
			prefixCalls: 1,
			prefixPath:  "/reset_prefix_cache?reset_external=true",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, calls := server(t, tt.routes)
			got, err := ResetCaches(t.Context(), srv.Client(), srv.URL, auth, tt.opts...)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			p := tt.prefixPath
			if p == "" {
				p = "/reset_prefix_cache"
			}
			require.Equal(t, tt.prefixCalls, calls("POST "+p))
		})
	}
}

func TestResetCachesRetryThenSuccess(t *testing.T) {
	// Refused twice while requests drain, then done.
	var n int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/reset_prefix_cache" {
			n++
			if n < 3 {
				_, _ = w.Write([]byte(`{"success":false}`))
				return
			}
			_, _ = w.Write([]byte(`{"success":true}`))
			return
		}
		_, _ = w.Write([]byte(`{"success":true}`))
	}))
	defer srv.Close()
	got, err := ResetCaches(t.Context(), srv.Client(), srv.URL, nil, WithBackoff(time.Millisecond))
	require.NoError(t, err)
	require.True(t, got.Prefix)
	require.Empty(t, got.Note)
	require.Equal(t, 3, n)
}

func TestResetCachesErrors(t *testing.T) {
	tests := []struct {
		name   string
		routes map[string]route
		want   string
	}{
		{"500", map[string]route{"POST /reset_prefix_cache": {500, "boom"}}, "/reset_prefix_cache: HTTP 500: boom"},
		{"405", map[string]route{"POST /reset_prefix_cache": {405, `{"detail":"Method Not Allowed"}`}}, "HTTP 405"},
		{"unexpected body", map[string]route{"POST /reset_prefix_cache": {200, `{"ok":1}`}}, `200 with unexpected body {"ok":1}`},
		{"mm 500", map[string]route{"POST /reset_prefix_cache": {200, `{"success":true}`}, "POST /reset_mm_cache": {500, "x"}}, "/reset_mm_cache: HTTP 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := server(t, tt.routes)
			_, err := ResetCaches(t.Context(), srv.Client(), srv.URL, auth)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestResetCachesCanceledDuringBackoff(t *testing.T) {
	srv, _ := server(t, map[string]route{"POST /reset_prefix_cache": {200, `{"success":false}`}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := ResetCaches(ctx, srv.Client(), srv.URL, auth, WithBackoff(time.Hour))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 10*time.Second)
}

func TestWarmArm(t *testing.T) {
	w := WarmArm()
	require.Equal(t, receipts.ArmWarm, w.Arm)
	require.False(t, w.Requested || w.Prefix || w.MM || w.Encoder)
	require.True(t, strings.Contains(w.Note, "not reset"))
}

func TestErrorsHidePassword(t *testing.T) {
	srv, _ := server(t, map[string]route{"POST /reset_prefix_cache": {500, "boom"}})
	u := strings.Replace(srv.URL, "http://", "http://vet:hunter2@", 1)
	_, err := Server(t.Context(), srv.Client(), u, auth)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
	_, err = ResetCaches(t.Context(), srv.Client(), u, auth)
	require.ErrorContains(t, err, "HTTP 500")
	require.NotContains(t, err.Error(), "hunter2")

	srv.Close()
	_, err = Server(t.Context(), http.DefaultClient, u, auth)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
}
