package target

import (
	"context"
	"errors"
	"fmt"

	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/container"
)

// The only lines that know how the twin's container is run.

// dockerAvailable is nil when a Docker daemon answers.
func dockerAvailable(ctx context.Context) error { return container.DockerAvailable(ctx) }

// runContainer starts the twin with opts in a container and returns its
// base URL and how to remove it.
func runContainer(ctx context.Context, opts []stub.Option) (baseURL string, stop func() error, err error) {
	ctr, err := container.Run(ctx, container.WithStub(opts...))
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
