package target

import (
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/stub/container"
)

// Several live endpoints: one bench.Endpoint, the first as its base URL,
// the rest as replicas; the receipt lists all, without credentials.
func TestLiveReplicas(t *testing.T) {
	cfg, err := config.Load(config.Env(func(k string) string {
		return map[string]string{config.EnvEndpoint: "http://gpu-a:8000,http://gpu-b:8000"}[k]
	}))
	require.NoError(t, err)
	tg, err := Open(t.Context(), cfg)
	require.NoError(t, err)
	require.Equal(t, "http://gpu-a:8000", tg.Endpoint.BaseURL)
	require.Equal(t, []string{"http://gpu-b:8000"}, tg.Endpoint.Replicas)
	require.Equal(t, []string{"http://gpu-a:8000", "http://gpu-b:8000"}, tg.Endpoint.Receipt().Endpoints)
}

// VETBENCH_STUB_REPLICAS=3 in-process: three twins, three ports, all
// closed by Close.
func TestInProcessReplicas(t *testing.T) {
	cfg := config.Default()
	cfg.Twin.Placement, cfg.Twin.Replicas = receipts.TargetInProcess, 3
	tg, err := Open(t.Context(), cfg)
	require.NoError(t, err)
	ep := tg.Endpoint
	require.Len(t, ep.Replicas, 2)
	all := append([]string{ep.BaseURL}, ep.Replicas...)
	require.Len(t, map[string]bool{all[0]: true, all[1]: true, all[2]: true}, 3)
	for _, u := range all {
		health(t, u)
	}
	require.Equal(t, all, ep.Receipt().Endpoints)
	require.NoError(t, tg.Close())
	for _, u := range all {
		_, err := http.Get(u + "/health")
		require.Error(t, err, "closed")
	}
}

// The same in containers, on one network (CI=true requires Docker).
func TestContainerReplicas(t *testing.T) {
	if err := container.DockerAvailable(t.Context()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs a Docker daemon for the container twin: %v", err)
		}
		t.Skipf("no Docker daemon: %v", err)
	}
	cfg := config.Default()
	cfg.Twin.Placement, cfg.Twin.Replicas = receipts.TargetContainer, 2
	tg, err := Open(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tg.Close()) })
	ep := tg.Endpoint
	require.Equal(t, receipts.TargetContainer, ep.Target.Kind)
	require.Len(t, ep.Replicas, 1)
	health(t, ep.BaseURL)
	health(t, ep.Replicas[0])
	require.NotEqual(t, ep.BaseURL, ep.Replicas[0])
}
