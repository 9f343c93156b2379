// Package target picks and starts what a run measures: a live vLLM, the twin
// in a container, or the twin in-process, as a config.Config says. It hands
// the measuring library (bench) a bench.Endpoint and keeps what is needed to
// stop the twin, so bench never knows what it is measuring.
package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/stub"
)

// Target is a started target. Close it when done.
type Target struct {
	Endpoint bench.Endpoint
	close    func() error
}

// Close stops the twin (and removes its container); a live target has
// nothing to stop.
func (t *Target) Close() error {
	if t == nil || t.close == nil {
		return nil
	}
	return t.close()
}

// Open starts what cfg names: a live server when cfg.Target.Endpoint is set;
// else the twin, in a container when cfg.Twin.Placement is container,
// in-process when it is inprocess, and when it is empty in a container if a
// Docker daemon answers and in-process otherwise, with a note in every
// receipt saying why. opts are twin options applied after the ones cfg
// states (ignored for a live server).
func Open(ctx context.Context, cfg config.Config, opts ...stub.Option) (*Target, error) {
	return open(ctx, cfg, dockerAvailable, opts...)
}

// open is Open with the Docker check given (tests fake a missing daemon).
func open(ctx context.Context, cfg config.Config, docker func(context.Context) error, opts ...stub.Option) (*Target, error) {
	if cfg.Target.Endpoint != "" {
		return Live(cfg.Target), nil
	}
	twin, err := TwinOptions(cfg)
	if err != nil {
		return nil, err
	}
	twin = append(twin, opts...)
	switch cfg.Twin.Placement {
	case receipts.TargetContainer:
		return Container(ctx, cfg.Twin, twin...)
	case receipts.TargetInProcess:
		return InProcessReplicas(cfg.Twin.Replicas, twin...)
	case "":
	default:
		return nil, fmt.Errorf("twin placement %q: want container or inprocess", cfg.Twin.Placement)
	}
	// Unset: the container when Docker answers. Should it still fail to
	// start (no Go toolchain to build the twin, a broken daemon), the twin
	// runs in-process and the receipt says so.
	why := docker(ctx)
	if why == nil {
		t, err := Container(ctx, cfg.Twin, twin...)
		if err == nil {
			return t, nil
		}
		why = err
	}
	t, err := InProcessReplicas(cfg.Twin.Replicas, twin...)
	if err != nil {
		return nil, err
	}
	note := fmt.Sprintf("twin runs in-process (%s unset): no container: %v", config.EnvStub, why)
	t.Endpoint.Notes = append(t.Endpoint.Notes, note)
	// Said once, up front, on the terminal too: the receipts repeat it per
	// point, but an installed binary's user should read it before the run.
	fmt.Fprintf(Stderr, "[vetbench] %s (VETBENCH_STUB=inprocess says so on purpose; docs/install.md#the-twin-outside-a-clone)\n", note)
	return t, nil
}

// Stderr is where Open says, once, why the twin runs in-process when no
// placement was asked for (tests replace it).
var Stderr io.Writer = os.Stderr

// Live is a running server at t.Endpoint.
func Live(t config.Target) *Target {
	return &Target{Endpoint: bench.Endpoint{
		BaseURL:  t.Endpoint,
		Replicas: t.Replicas,
		Model:    t.Model,
		APIKey:   t.APIKey,
		Target:   receipts.Target{Kind: receipts.TargetLive},
	}}
}

// InProcess serves the twin in this process on a loopback port.
func InProcess(opts ...stub.Option) (*Target, error) {
	rs, err := stub.Start(opts...)
	if err != nil {
		return nil, fmt.Errorf("start in-process twin: %w", err)
	}
	return &Target{
		Endpoint: bench.Endpoint{
			BaseURL: rs.URL(),
			Model:   rs.Model(),
			Target:  receipts.Target{Kind: receipts.TargetInProcess, Profile: rs.Profile().Name, TimeScale: rs.TimeScale()},
		},
		close: rs.Close,
	}, nil
}

// InProcessReplicas serves n twins (1 when n < 1) in this process, each on
// a loopback port of its own with its own engine and caches: the endpoint's
// Replicas are the second and later ones.
func InProcessReplicas(n int, opts ...stub.Option) (*Target, error) {
	t, err := InProcess(opts...)
	if err != nil || n <= 1 {
		return t, err
	}
	closers := []func() error{t.close}
	for i := 1; i < n; i++ {
		rs, err := stub.Start(opts...)
		if err != nil {
			for _, c := range closers {
				_ = c()
			}
			return nil, fmt.Errorf("start in-process twin %d of %d: %w", i+1, n, err)
		}
		t.Endpoint.Replicas = append(t.Endpoint.Replicas, rs.URL())
		closers = append(closers, rs.Close)
	}
	t.close = closeAll(closers)
	return t, nil
}

// closeAll runs every closer, joining their errors.
func closeAll(closers []func() error) func() error {
	return func() error {
		var errs []error
		for _, c := range closers {
			errs = append(errs, c())
		}
		return errors.Join(errs...)
	}
}

// Container runs the twin in a container built on the spot (see
// stub/container); tw.Replicas > 1 runs that many on one network, each
// an endpoint. tw names the profile and time scale for the receipt; opts
// configure the twin.
func Container(ctx context.Context, tw config.Twin, opts ...stub.Option) (*Target, error) {
	bases, stop, err := runContainers(ctx, max(tw.Replicas, 1), opts)
	if err != nil {
		return nil, err
	}
	base := bases[0]
	profile := tw.Profile
	if profile == "" {
		profile = stub.ProfileFast().Name
	}
	return &Target{
		Endpoint: bench.Endpoint{
			BaseURL:  base,
			Replicas: bases[1:],
			// Model: empty, the first model the twin lists.
			Target: receipts.Target{Kind: receipts.TargetContainer, Profile: profile, TimeScale: tw.TimeScale},
		},
		close: stop,
	}, nil
}

// TwinOptions are the twin settings cfg states, as twin options: profile,
// time scale, served model name, slowdown, faults (parsed here, with
// stub.ParseFault; an error names the variable) and dev mode, which cold
// arms need to reset the caches.
func TwinOptions(cfg config.Config) ([]stub.Option, error) {
	tw := cfg.Twin
	var opts []stub.Option
	if tw.Profile != "" {
		if _, err := stub.ProfileByName(tw.Profile); err != nil {
			return nil, fmt.Errorf("bad configuration: %s=%q: %w", config.EnvStubProfile, tw.Profile, err)
		}
		opts = append(opts, stub.WithProfileName(tw.Profile))
	}
	if tw.TimeScale > 0 && tw.TimeScale != 1 {
		opts = append(opts, stub.WithTimeScale(tw.TimeScale))
	}
	if m := cfg.Target.Model; m != "" {
		opts = append(opts, stub.WithModel(m))
	}
	if tw.Slowdown > 0 && tw.Slowdown != 1 {
		opts = append(opts, stub.WithSlowdown(tw.Slowdown))
	}
	var faults []stub.Fault
	var errs []error
	for _, spec := range tw.Faults {
		f, err := stub.ParseFault(spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", config.EnvStubFaults, err))
			continue
		}
		faults = append(faults, f)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("bad configuration: %w", errors.Join(errs...))
	}
	if len(faults) > 0 {
		opts = append(opts, stub.WithFaults(faults...))
	}
	return append(opts, stub.WithDevMode(true)), nil
}
