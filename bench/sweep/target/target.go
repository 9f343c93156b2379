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
	"time"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/scrape"
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
// else the twin (TwinConfig), in a container when cfg.Twin.Placement is
// container, in-process when it is inprocess, and when it is empty in a
// container if a Docker daemon answers and in-process otherwise, with a
// note in every receipt saying why (under CI=true, a daemon that answers
// and a container that still cannot start is an error). The twin, in
// either place, logs to twinLog (nil: nowhere): that an engine fell
// behind its model clock, and in a container all it prints.
func Open(ctx context.Context, cfg config.Config, twinLog io.Writer) (*Target, error) {
	return open(ctx, cfg, twinLog, dockerAvailable)
}

// open is Open with the Docker check given (tests fake a missing daemon).
func open(ctx context.Context, cfg config.Config, twinLog io.Writer, docker func(context.Context) error) (*Target, error) {
	if cfg.Target.Endpoint != "" {
		return liveScaled(ctx, Live(cfg.Target)), nil
	}
	twin, err := TwinConfig(cfg)
	if err != nil {
		return nil, err
	}
	twin.Log = twinLog
	n := cfg.Twin.Replicas
	switch cfg.Twin.Placement {
	case receipts.TargetContainer:
		return startContainer(ctx, n, twin)
	case receipts.TargetInProcess:
		return InProcessReplicas(n, twin)
	case "":
	default:
		return nil, fmt.Errorf("twin placement %q: want container or inprocess", cfg.Twin.Placement)
	}
	// Unset: the container when Docker answers. Should it still fail to
	// start (an installed binary built with cgo outside a clone, a broken
	// daemon), the twin runs in-process and the receipt says so.
	why := docker(ctx)
	if why == nil {
		t, err := startContainer(ctx, n, twin)
		if err == nil {
			return t, nil
		}
		// A daemon answers and still no container: in CI that is a broken
		// container twin (a cgo build, no module), not a machine without
		// Docker, so it fails rather than pass on the in-process twin.
		if ci() {
			return nil, fmt.Errorf("%w (CI=true: the container twin must start when Docker answers; %s=inprocess runs it in-process on purpose)", err, config.EnvStub)
		}
		why = err
	}
	t, err := InProcessReplicas(n, twin)
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

// startContainer is Container (tests replace it).
var startContainer = Container

// ci says whether this runs under CI=true (tests replace it).
var ci = func() bool { return os.Getenv("CI") == "true" }

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

// liveScaled gives a live target the time scale it advertises: a vetbench
// twin started on its own (vllmstub --time-scale S) says S in its /metrics
// (vetbench_twin_time_scale), and its figures are then read in model time,
// as the embedded twin's are; without it a client's wall clock would read
// a twin at ×20 as a server twenty times faster than the model. A vLLM
// advertises nothing, and a reading that fails leaves the target as it is
// (the run's own scrapes say why).
func liveScaled(ctx context.Context, t *Target) *Target {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	snap, _ := scrape.Fetch(ctx, nil, t.Endpoint.BaseURL+"/metrics", scrape.WithAuthorize(t.Endpoint.Authorize))
	if s := scrape.TwinTimeScale(snap); s > 1 {
		t.Endpoint.Target.TimeScale = s
		t.Endpoint.Notes = append(t.Endpoint.Notes, fmt.Sprintf("the endpoint is a vetbench twin running %g× faster than real time (its %s): its figures are model time", s, scrape.TwinTimeScaleMetric))
	}
	return t
}

// InProcess serves the twin of tw in this process on a loopback port.
func InProcess(tw stub.Config) (*Target, error) {
	rs, err := stub.Start(tw)
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

// InProcessReplicas serves n twins of tw (1 when n < 1) in this process,
// each on a loopback port of its own with its own engine and caches: the
// endpoint's Replicas are the second and later ones.
func InProcessReplicas(n int, tw stub.Config) (*Target, error) {
	t, err := InProcess(tw)
	if err != nil || n <= 1 {
		return t, err
	}
	closers := []func() error{t.close}
	for i := 1; i < n; i++ {
		rs, err := stub.Start(tw)
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

// Container runs n twins of tw (1 when n < 1) in containers built on the
// spot (see stub/container); more than one run on one network, each an
// endpoint.
func Container(ctx context.Context, n int, tw stub.Config) (*Target, error) {
	tw, err := tw.Resolve()
	if err != nil {
		return nil, fmt.Errorf("start twin container: %w", err)
	}
	bases, stop, err := runContainers(ctx, max(n, 1), tw)
	if err != nil {
		return nil, err
	}
	return &Target{
		Endpoint: bench.Endpoint{
			BaseURL:  bases[0],
			Replicas: bases[1:],
			// Model: empty, the first model the twin lists.
			Target: receipts.Target{Kind: receipts.TargetContainer, Profile: tw.Profile.Name, TimeScale: tw.TimeScale},
		},
		close: stop,
	}, nil
}

// TwinConfig is the twin cfg states: profile, time scale, served model
// name, slowdown, faults (parsed here, with stub.ParseFault; an error names
// the variable) and dev mode, which cold arms need to reset the caches.
// It is the one place a run's configuration becomes the twin's.
func TwinConfig(cfg config.Config) (stub.Config, error) {
	tw := cfg.Twin
	twin := stub.Config{Model: cfg.Target.Model, TimeScale: tw.TimeScale, Slowdown: tw.Slowdown, DevMode: true}
	var errs []error
	if tw.Profile != "" {
		p, err := stub.ProfileByName(tw.Profile)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", config.EnvStubProfile, tw.Profile, err))
		}
		twin.Profile = p
	}
	for _, spec := range tw.Faults {
		f, err := stub.ParseFault(spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", config.EnvStubFaults, err))
			continue
		}
		twin.Faults = append(twin.Faults, f)
	}
	if err := errors.Join(errs...); err != nil {
		return stub.Config{}, fmt.Errorf("bad configuration: %w", err)
	}
	if _, err := twin.Resolve(); err != nil {
		return stub.Config{}, fmt.Errorf("bad configuration: twin: %w", err)
	}
	return twin, nil
}
