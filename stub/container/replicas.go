package container

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"
)

// Replicas are several twins on one Docker network, as replicas of one
// model behind a router would run: each is its own server (engine, caches,
// /metrics), reachable from the host at BaseURLs and from other containers
// on Network at InNetworkURLs (alias replica-<i>, port 8000), where a
// router container would find them.
type Replicas struct {
	Network    *testcontainers.DockerNetwork
	Containers []*Container
	aliases    []string
}

// RunReplicas starts n twins, each as Run would with opts, on a new network.
// The executable is placed (or built) once for all of them.
// Partly started replicas are returned with the error, for Terminate.
func RunReplicas(ctx context.Context, n int, opts ...testcontainers.ContainerCustomizer) (*Replicas, error) {
	if n < 1 {
		return nil, fmt.Errorf("run vllmstub replicas: %d replicas", n)
	}
	noReaper()
	var o options
	for _, opt := range opts {
		if apply, ok := opt.(Option); ok {
			if err := apply(&o); err != nil {
				return nil, fmt.Errorf("run vllmstub replicas: %w", err)
			}
		}
	}
	if o.binary == "" {
		dir, err := os.MkdirTemp("", "vllmstub-replicas-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		name, args, err := o.placeExecutable(ctx, dir)
		if err != nil {
			return nil, fmt.Errorf("run vllmstub replicas: %w", err)
		}
		opts = append(opts, WithExecutable(filepath.Join(dir, name), args...))
	}
	nw, err := network.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("run vllmstub replicas: network: %w", err)
	}
	r := &Replicas{Network: nw}
	for i := range n {
		alias := fmt.Sprintf("replica-%d", i)
		ctr, err := Run(ctx, append(append([]testcontainers.ContainerCustomizer(nil), opts...), network.WithNetwork([]string{alias}, nw))...)
		if ctr != nil {
			r.Containers = append(r.Containers, ctr)
			r.aliases = append(r.aliases, alias)
		}
		if err != nil {
			return r, fmt.Errorf("run vllmstub replica %d of %d: %w", i+1, n, err)
		}
	}
	return r, nil
}

// BaseURLs are the replicas' base URLs as seen from the host, in order.
func (r *Replicas) BaseURLs(ctx context.Context) ([]string, error) {
	out := make([]string, len(r.Containers))
	for i, c := range r.Containers {
		u, err := c.BaseURL(ctx)
		if err != nil {
			return nil, fmt.Errorf("replica %d: %w", i+1, err)
		}
		out[i] = u
	}
	return out, nil
}

// InNetworkURLs are the replicas' base URLs as another container on
// Network sees them (http://replica-<i>:8000).
func (r *Replicas) InNetworkURLs() []string {
	port := strings.TrimSuffix(Port, "/tcp")
	out := make([]string, len(r.aliases))
	for i, a := range r.aliases {
		out[i] = "http://" + net.JoinHostPort(a, port)
	}
	return out
}

// Terminate removes the containers, then the network.
func (r *Replicas) Terminate(ctx context.Context) error {
	if r == nil {
		return nil
	}
	var errs []error
	for _, c := range r.Containers {
		errs = append(errs, c.Terminate(ctx))
	}
	if r.Network != nil {
		errs = append(errs, r.Network.Remove(ctx))
	}
	return errors.Join(errs...)
}
