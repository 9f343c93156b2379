package stub_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/container"
)

// TestContractContainer runs the contract suite against the twin in a
// container built FROM scratch. Without a Docker daemon it skips, except
// under CI=true, where it fails.
func TestContractContainer(t *testing.T) {
	if err := container.DockerAvailable(t.Context()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs a Docker daemon for the container twin: %v", err)
		}
		t.Skipf("no Docker daemon, container twin not tested: %v", err)
	}
	ctx := t.Context()
	// One container, the features vLLM's facts need: --api-key (through
	// VLLM_API_KEY), --enable-prompt-tokens-details, dev mode.
	const key = "container-key"
	ctr, err := container.Run(ctx, container.WithConfig(stub.Config{DevMode: true, Profile: stub.ProfileFast(), APIKeys: []string{key}, PromptTokensDetails: true}))
	testcontainers.CleanupContainer(t, ctr)
	require.NoError(t, err)
	url, err := ctr.BaseURL(ctx)
	require.NoError(t, err)
	p := stub.ProfileFast()
	on := true
	stub.ContractSuite(t, stub.ContractTarget{BaseURL: url, DevMode: true, DevModeKnown: true, ImageLimit: p.LimitImages,
		MaxLogprobs: p.MaxLogprobs, Exclusive: true, APIKey: key, AuthRequired: true, PromptTokensDetails: &on})
}
