package target

import (
	"context"
	"errors"
	"fmt"

	"github.com/testcontainers/testcontainers-go"
	"github.com/vetbench/vetbench/stub"
)

// The only lines that know how the twin's container is run: they switch to
// stub/container (container.Run with container.WithStub(opts...),
// container.DockerAvailable) when that package lands.

// dockerAvailable is nil when a Docker daemon answers.
func dockerAvailable(ctx context.Context) error { return stub.DockerAvailable(ctx) }

// runContainer starts the twin with opts in a container and returns its
// base URL and how to remove it.
func runContainer(ctx context.Context, opts []stub.Option) (baseURL string, stop func() error, err error) {
	custom := make([]testcontainers.ContainerCustomizer, len(opts))
	for i, o := range opts {
		custom[i] = o
	}
	ctr, err := stub.RunContainer(ctx, custom...)
	if err != nil {
		if ctr != nil {
			_ = ctr.Terminate(context.WithoutCancel(ctx))
		}
		return "", nil, fmt.Errorf("start twin container: %w", err)
	}
	base, err := ctr.BaseURL(ctx)
	if err != nil {
		return "", nil, errors.Join(fmt.Errorf("twin container address: %w", err), ctr.Terminate(context.WithoutCancel(ctx)))
	}
	return base, func() error { return ctr.Terminate(context.Background()) }, nil
}
