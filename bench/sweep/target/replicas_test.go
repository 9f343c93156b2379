package target

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
	tg, err := Open(t.Context(), cfg, nil)
	require.NoError(t, err)
	require.Equal(t, "http://gpu-a:8000", tg.Endpoint.BaseURL)
	require.Equal(t, []string{"http://gpu-b:8000"}, tg.Endpoint.Replicas)
	require.Equal(t, []string{"http://gpu-a:8000", "http://gpu-b:8000"}, tg.Endpoint.Receipt().Endpoints)
}

// twinLog is a log the twins of a target share.
type twinLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *twinLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *twinLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// served is the ports the log's serving lines name, sorted as logged.
func (l *twinLog) served() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ports []string
	for _, m := range regexp.MustCompile(`(?m)^vllmstub \S+: serving .* on http://\S+:(\d+)$`).FindAllStringSubmatch(l.b.String(), -1) {
		ports = append(ports, m[1])
	}
	return ports
}

// port is a base URL's port.
func port(t *testing.T, base string) string {
	t.Helper()
	i := strings.LastIndex(base, ":")
	require.Positive(t, i, base)
	return base[i+1:]
}

// VETBENCH_STUB_REPLICAS=3 in-process: three twins, three ports, all
// closed by Close; each says what it serves in the twin log.
func TestInProcessReplicas(t *testing.T) {
	cfg := config.Default()
	cfg.Twin.Placement, cfg.Twin.Replicas = receipts.TargetInProcess, 3
	var log twinLog
	tg, err := Open(t.Context(), cfg, &log)
	require.NoError(t, err)
	ep := tg.Endpoint
	require.Len(t, ep.Replicas, 2)
	all := append([]string{ep.BaseURL}, ep.Replicas...)
	require.ElementsMatch(t, []string{port(t, all[0]), port(t, all[1]), port(t, all[2])}, log.served(), "%s", log.String())
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

// The same in containers, on one network (CI=true requires Docker); what
// the containers print reaches the twin log (their serving lines name the
// port inside the container).
func TestContainerReplicas(t *testing.T) {
	if err := container.DockerAvailable(t.Context()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs a Docker daemon for the container twin: %v", err)
		}
		t.Skipf("no Docker daemon: %v", err)
	}
	cfg := config.Default()
	cfg.Twin.Placement, cfg.Twin.Replicas = receipts.TargetContainer, 2
	var log twinLog
	tg, err := Open(t.Context(), cfg, &log)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tg.Close()) })
	// The log is followed as the containers print it: wait for it, not
	// for a time.
	assert.Eventually(t, func() bool { return len(log.served()) == 2 }, time.Minute, 10*time.Millisecond)
	require.Equal(t, []string{"8000", "8000"}, log.served(), "the containers' serving lines:\n%s", log.String())
	ep := tg.Endpoint
	require.Equal(t, receipts.TargetContainer, ep.Target.Kind)
	require.Len(t, ep.Replicas, 1)
	health(t, ep.BaseURL)
	health(t, ep.Replicas[0])
	require.NotEqual(t, ep.BaseURL, ep.Replicas[0])
}
