package container_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/container"
)

// TestRunReplicas starts three twins on one network: each answers on its
// own host port, serves the configured model, is attached to the network
// under its alias, and is a server of its own (a request to one shows in
// its /metrics only).
func TestRunReplicas(t *testing.T) {
	requireDocker(t)
	ctx := t.Context()
	reps, err := container.RunReplicas(ctx, 3, container.WithBinary(binary), container.WithConfig(stub.Config{Model: "replicated"}))
	t.Cleanup(func() { require.NoError(t, reps.Terminate(context.WithoutCancel(ctx))) })
	require.NoError(t, err)
	require.Len(t, reps.Containers, 3)
	urls, err := reps.BaseURLs(ctx)
	require.NoError(t, err)
	require.Len(t, urls, 3)
	require.Equal(t, []string{"http://replica-0:8000", "http://replica-1:8000", "http://replica-2:8000"}, reps.InNetworkURLs())
	for i, c := range reps.Containers {
		nets, err := c.Networks(ctx)
		require.NoError(t, err)
		require.Contains(t, nets, reps.Network.Name, "replica %d on the shared network", i)
		aliases, err := c.NetworkAliases(ctx)
		require.NoError(t, err)
		require.Contains(t, aliases[reps.Network.Name], fmt.Sprintf("replica-%d", i))
		require.Contains(t, get(t, urls[i]+"/v1/models"), `"id":"replicated"`)
	}
	require.Len(t, map[string]bool{urls[0]: true, urls[1]: true, urls[2]: true}, 3, "three servers, three addresses")

}

func get(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(b)
}
