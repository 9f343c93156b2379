package target

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/stub"
)

func TestTwinConfig(t *testing.T) {
	cfg := config.Default()
	tw, err := TwinConfig(cfg)
	require.NoError(t, err)
	require.Equal(t, stub.Config{TimeScale: 1, Slowdown: 1, DevMode: true}, tw, "defaults, dev mode on")

	cfg.Twin = config.Twin{Profile: "h100-gemma4-31b", TimeScale: 10, Slowdown: 1.2, Faults: []string{"http500:every=3", "nan:match=r01"}}
	cfg.Target.Model = "m"
	tw, err = TwinConfig(cfg)
	require.NoError(t, err)
	require.Equal(t, stub.ProfileH100Name, tw.Profile.Name)
	require.Equal(t, 10.0, tw.TimeScale)
	require.Equal(t, 1.2, tw.Slowdown)
	require.Equal(t, "m", tw.Model)
	require.Len(t, tw.Faults, 2)
	s, err := stub.New(tw)
	require.NoError(t, err)
	require.Equal(t, 10.0, s.TimeScale())
	require.NoError(t, s.Close())

	_, err = TwinConfig(config.Config{Twin: config.Twin{Faults: []string{"boom", "http500:every=3"}}})
	require.ErrorContains(t, err, `VETBENCH_STUB_FAULTS: fault "boom": `)
	require.ErrorContains(t, err, `unknown kind "boom"`)
	require.NotContains(t, err.Error(), "every=3", "only the bad spec is named")
	cfg.Twin = config.Twin{Profile: "a100", Faults: []string{"boom", "http500:every=x"}}
	_, err = TwinConfig(cfg)
	require.ErrorContains(t, err, `VETBENCH_STUB_PROFILE="a100"`)
	_, err = TwinConfig(config.Config{Twin: config.Twin{TimeScale: -1}})
	require.ErrorContains(t, err, "time scale -1")
}

func TestLive(t *testing.T) {
	cfg := config.Default()
	cfg.Target = config.Target{Endpoint: "http://user:pass@gpu-box:8000", Model: "google/gemma-4-31B-it", APIKey: "sk-secret"}
	tg, err := Open(t.Context(), cfg, nil)
	require.NoError(t, err)
	require.NoError(t, tg.Close(), "nothing to stop")
	ep := tg.Endpoint
	require.Equal(t, "http://user:pass@gpu-box:8000", ep.BaseURL)
	require.Equal(t, "google/gemma-4-31B-it", ep.Model)
	require.Equal(t, "sk-secret", ep.APIKey)
	require.Equal(t, receipts.Target{Kind: receipts.TargetLive, Endpoint: "http://gpu-box:8000"}, ep.Receipt())
}

func health(t *testing.T, base string) {
	t.Helper()
	res, err := http.Get(base + "/health")
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)
}

func TestInProcess(t *testing.T) {
	cfg := config.Default()
	cfg.Twin = config.Twin{Placement: receipts.TargetInProcess, Profile: "h100-gemma4-31b", TimeScale: 10, Slowdown: 1}
	cfg.Target.Model = "other"
	tg, err := Open(t.Context(), cfg, nil)
	require.NoError(t, err)
	ep := tg.Endpoint
	require.Equal(t, receipts.TargetInProcess, ep.Target.Kind)
	require.Equal(t, "h100-gemma4-31b", ep.Target.Profile)
	require.Equal(t, 10.0, ep.Target.TimeScale)
	require.Equal(t, "other", ep.Model, "the configured model name is served")
	require.Empty(t, ep.Notes)
	health(t, ep.BaseURL)
	require.NoError(t, tg.Close())
	_, err = http.Get(ep.BaseURL + "/health")
	require.Error(t, err, "closed")
}

// No placement and no Docker: the twin runs in-process, every receipt
// will say why, and so does one line on stderr, up front.
func TestFallbackInProcess(t *testing.T) {
	noDocker := func(context.Context) error { return errors.New("docker: daemon not running") }
	var said strings.Builder
	prev := Stderr
	Stderr = &said
	defer func() { Stderr = prev }()
	tg, err := open(t.Context(), config.Default(), nil, noDocker)
	require.Equal(t, 1, strings.Count(said.String(), "no container: docker: daemon not running"), said.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tg.Close() })
	require.Equal(t, receipts.TargetInProcess, tg.Endpoint.Target.Kind)
	require.Equal(t, []string{"twin runs in-process (VETBENCH_STUB unset): no container: docker: daemon not running"}, tg.Endpoint.Notes)
	health(t, tg.Endpoint.BaseURL)

	_, err = Open(t.Context(), config.Config{Twin: config.Twin{Placement: "vm"}}, nil)
	require.ErrorContains(t, err, `twin placement "vm"`)
}

// Docker answers and the container still cannot start (an installed cgo
// build outside a clone): the twin runs in-process and says why once, up
// front; under CI=true that is an error instead, naming the escape hatch.
func TestContainerFailsFallbackOrCI(t *testing.T) {
	docker := func(context.Context) error { return nil }
	prevStart, prevCI, prevErr := startContainer, ci, Stderr
	t.Cleanup(func() { startContainer, ci, Stderr = prevStart, prevCI, prevErr })
	why := errors.New("run vllmstub container: this program's executable cannot be the image: /usr/local/bin/vetbench is dynamically linked")
	startContainer = func(context.Context, int, stub.Config) (*Target, error) { return nil, why }
	for _, inCI := range []bool{false, true} {
		var said strings.Builder
		Stderr = &said
		ci = func() bool { return inCI }
		tg, err := open(t.Context(), config.Default(), nil, docker)
		if inCI {
			require.ErrorIs(t, err, why)
			require.ErrorContains(t, err, "CI=true")
			require.ErrorContains(t, err, "VETBENCH_STUB=inprocess")
			require.Empty(t, said.String())
			continue
		}
		require.NoError(t, err)
		require.Equal(t, receipts.TargetInProcess, tg.Endpoint.Target.Kind)
		require.Equal(t, []string{"twin runs in-process (VETBENCH_STUB unset): no container: " + why.Error()}, tg.Endpoint.Notes)
		require.Equal(t, 1, strings.Count(said.String(), "dynamically linked"), said.String())
		require.NoError(t, tg.Close())
	}
}

// A vetbench twin started on its own (vllmstub --time-scale S) says S in
// its /metrics, and a live target pointed at it reads its figures in model
// time, with a note; a twin at real time and a server with no such series
// (a vLLM) stay as they are.
func TestLiveTwinScale(t *testing.T) {
	open := func(base string) bench.Endpoint {
		cfg := config.Default()
		cfg.Target = config.Target{Endpoint: base}
		tg, err := Open(t.Context(), cfg, nil)
		require.NoError(t, err)
		return tg.Endpoint
	}
	for _, tc := range []struct {
		scale float64
		want  float64
	}{{20, 20}, {1, 0}} {
		rs, err := stub.Start(stub.Config{TimeScale: tc.scale})
		require.NoError(t, err)
		ep := open(rs.URL())
		require.NoError(t, rs.Close())
		require.Equal(t, tc.want, ep.Target.TimeScale, "a twin at ×%g", tc.scale)
		if tc.want > 0 {
			require.Len(t, ep.Notes, 1)
			require.Contains(t, ep.Notes[0], "vetbench twin running 20× faster than real time")
		} else {
			require.Empty(t, ep.Notes)
		}
	}
	vllm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", stub.ContentType)
		_, _ = w.Write([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 0.0\n"))
	}))
	defer vllm.Close()
	ep := open(vllm.URL)
	require.Zero(t, ep.Target.TimeScale, "a vLLM advertises no time scale")
	require.Empty(t, ep.Notes)
}
