package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/container"
)

// Target is the server judgments are sent to.
type Target struct {
	Kind    string // receipts.TargetLive, TargetContainer or TargetInProcess
	BaseURL string
	Model   string // empty: the first model the server lists
	APIKey  string // never recorded
	// Profile, TimeScale and Replay describe a twin target.
	Profile   string
	TimeScale float64
	Replay    string
	// Notes are facts about how the target was chosen, for the receipt.
	Notes []string
	close func() error
}

// Close releases the target (stops the twin, removes its container).
func (t *Target) Close() error {
	if t == nil || t.close == nil {
		return nil
	}
	return t.close()
}

// Receipt is the target as a receipt records it: the endpoint without any
// credentials in it, never the API key.
func (t *Target) Receipt() receipts.Target {
	r := receipts.Target{Kind: t.Kind, Profile: t.Profile, TimeScale: t.TimeScale, Replay: t.Replay}
	if u, err := url.Parse(t.BaseURL); err == nil {
		u.User = nil
		u.RawQuery = ""
		r.Endpoint = u.String()
	}
	return r
}

func (t *Target) authorize(req *http.Request) {
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
}

// OpenTarget picks the target the environment names: a live server when
// VETBENCH_ENDPOINT is set; else the twin, in a container when
// VETBENCH_STUB=container, in-process when VETBENCH_STUB=inprocess, and when
// unset in a container if a Docker daemon answers, in-process otherwise.
// opts configure the twin (ignored for a live server).
func OpenTarget(ctx context.Context, env Env, opts ...stub.Option) (*Target, error) {
	if env.Endpoint != "" {
		u, err := url.Parse(env.Endpoint)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("VETBENCH_ENDPOINT %q: want a base URL such as http://gpu-box:8000", env.Endpoint)
		}
		return &Target{Kind: receipts.TargetLive, BaseURL: env.Endpoint, Model: env.Model, APIKey: env.APIKey}, nil
	}
	opts = append(stubOptions(env), opts...)
	switch env.Stub {
	case receipts.TargetContainer:
		return startContainer(ctx, env, opts...)
	case receipts.TargetInProcess:
		return StartStub(opts...)
	}
	// Unset: the container when Docker answers. Should it still fail to
	// start (no Go toolchain to build the twin, a broken daemon), the twin
	// runs in-process and the receipt says so.
	docker := container.DockerAvailable(ctx)
	if docker == nil {
		t, err := startContainer(ctx, env, opts...)
		if err == nil {
			return t, nil
		}
		docker = err
	}
	t, err := StartStub(opts...)
	if err != nil {
		return nil, err
	}
	t.Notes = append(t.Notes, fmt.Sprintf("twin runs in-process (VETBENCH_STUB unset): no container: %v", docker))
	return t, nil
}

// stubOptions are the twin settings the environment states.
func stubOptions(env Env) []stub.Option {
	var opts []stub.Option
	if env.Profile != "" {
		opts = append(opts, stub.WithProfileName(env.Profile))
	}
	if env.TimeScale > 0 && env.TimeScale != 1 {
		opts = append(opts, stub.WithTimeScale(env.TimeScale))
	}
	if env.Model != "" {
		opts = append(opts, stub.WithModel(env.Model))
	}
	if env.Slowdown > 0 && env.Slowdown != 1 {
		opts = append(opts, stub.WithSlowdown(env.Slowdown))
	}
	if len(env.Faults) > 0 {
		opts = append(opts, stub.WithFaults(env.Faults...))
	}
	return append(opts, stub.WithDevMode(true))
}

// StartStub serves the twin in-process on a loopback port.
func StartStub(opts ...stub.Option) (*Target, error) {
	rs, err := stub.Start(opts...)
	if err != nil {
		return nil, fmt.Errorf("start in-process twin: %w", err)
	}
	return &Target{
		Kind:      receipts.TargetInProcess,
		BaseURL:   rs.URL(),
		Model:     rs.Model(),
		Profile:   rs.Profile().Name,
		TimeScale: rs.TimeScale(),
		close:     rs.Close,
	}, nil
}

func startContainer(ctx context.Context, env Env, opts ...stub.Option) (*Target, error) {
	ctr, err := container.Run(ctx, container.WithStub(opts...))
	if err != nil {
		if ctr != nil {
			_ = ctr.Terminate(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("start twin container: %w", err)
	}
	base, err := ctr.BaseURL(ctx)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("twin container address: %w", err), ctr.Terminate(context.WithoutCancel(ctx)))
	}
	profile := env.Profile
	if profile == "" {
		profile = stub.ProfileFast().Name
	}
	return &Target{
		Kind:      receipts.TargetContainer,
		BaseURL:   base,
		Model:     env.Model, // empty: the first model the twin lists
		Profile:   profile,
		TimeScale: env.TimeScale,
		close:     func() error { return ctr.Terminate(context.Background()) },
	}, nil
}
