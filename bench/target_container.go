package bench

import (
	"context"
	"errors"

	"github.com/vetbench/vetbench/stub"
)

// TEMPORARY until stub.RunContainer lands.
func startContainer(ctx context.Context, env Env, opts ...stub.Option) (*Target, error) {
	return nil, errors.New("container twin: not available yet")
}

func dockerAvailable(ctx context.Context) error { return errors.New("no") }
