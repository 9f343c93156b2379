package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"

	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/vetbench/vetbench/bench/sweep/interrupt"
	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/container"
)

// removedOnExit makes terminate also run when a second Ctrl-C exits the
// process (interrupt.AtExit): no reaper removes the twin's container
// (TESTCONTAINERS_RYUK_DISABLED), so a process that exits without it would
// leave it running on its port. The returned stop terminates once.
func removedOnExit(terminate func(context.Context) error) func() error {
	var once sync.Once
	var err error
	once1 := func() error {
		once.Do(func() { err = terminate(context.Background()) })
		return err
	}
	unregister := atExit(func() {
		fmt.Fprintln(os.Stderr, "[vetbench] removing the twin's container before exiting")
		_ = once1()
	})
	return func() error { defer unregister(); return once1() }
}

// atExit is interrupt.AtExit (tests record what is registered).
var atExit = interrupt.AtExit

// births registers each container a start creates for removal at exit
// the moment Docker has created it (a PostCreates hook), before the start
// returns it: while its image builds, it starts and its /health is
// awaited, a second Ctrl-C would otherwise exit past a container nobody
// has registered (with replicas, every one already started). release
// unregisters them once removedOnExit holds the removal.
type births struct {
	mu         sync.Mutex
	unregister []func()
}

// hook is the container option that registers each creation.
func (b *births) hook() testcontainers.ContainerCustomizer {
	return testcontainers.WithAdditionalLifecycleHooks(testcontainers.ContainerLifecycleHooks{
		PostCreates: []testcontainers.ContainerHook{func(_ context.Context, c testcontainers.Container) error {
			u := atExit(func() {
				fmt.Fprintln(os.Stderr, "[vetbench] removing the twin's container before exiting")
				_ = c.Terminate(context.Background())
			})
			b.mu.Lock()
			defer b.mu.Unlock()
			b.unregister = append(b.unregister, u)
			return nil
		}},
	})
}

// release unregisters every creation registered so far.
func (b *births) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range b.unregister {
		u()
	}
	b.unregister = nil
}

// dockerAvailable is nil when a Docker daemon answers.
func dockerAvailable(ctx context.Context) error { return container.DockerAvailable(ctx) }

// OwnTwin, when set, is what makes this program's own executable serve the
// twin (cmd/vetbench sets {"twin"} in the vetbench binary, not in its
// tests): the container's image is then built from that executable when
// it is static, with no module or Go toolchain (container.WithOwnExecutable).
// Unset, the image holds vllmstub built from the module.
var OwnTwin []string

// imageOptions are the container options that choose the image's
// executable.
func imageOptions(tw stub.Config) []testcontainers.ContainerCustomizer {
	opts := []testcontainers.ContainerCustomizer{container.WithConfig(tw)}
	if OwnTwin != nil {
		opts = append(opts, container.WithOwnExecutable(OwnTwin...))
	}
	return opts
}

// runContainer starts the twin of tw in a container and returns its base
// URL and how to remove it.
func runContainer(ctx context.Context, tw stub.Config) (baseURL string, stop func() error, err error) {
	var born births
	defer born.release()
	ctr, err := container.Run(ctx, append(imageOptions(tw), born.hook())...)
	if ctr == nil {
		return "", nil, fmt.Errorf("start twin container: %w", err)
	}
	// Registered as soon as Run returns it, on the way out too (and from
	// its creation until then by born): a Ctrl-C in its start cancels
	// ctx, and a second one during the removal that follows must wait for
	// it, not exit past it.
	stop = removedOnExit(func(ctx context.Context) error { return ctr.Terminate(ctx) })
	if err != nil {
		_ = stop()
		return "", nil, fmt.Errorf("start twin container: %w", err)
	}
	base, err := ctr.BaseURL(ctx)
	if err != nil {
		return "", nil, errors.Join(fmt.Errorf("twin container address: %w", err), stop())
	}
	return base, stop, nil
}

// runContainers starts n twins; more than one run on one network
// (container.RunReplicas).
func runContainers(ctx context.Context, n int, tw stub.Config) (baseURLs []string, stop func() error, err error) {
	if n == 1 {
		base, stop, err := runContainer(ctx, tw)
		if err != nil {
			return nil, nil, err
		}
		return []string{base}, stop, nil
	}
	var born births
	defer born.release()
	reps, err := container.RunReplicas(ctx, n, append(imageOptions(tw), born.hook())...)
	if reps == nil {
		return nil, nil, fmt.Errorf("start %d twin containers: %w", n, err)
	}
	stop = removedOnExit(reps.Terminate) // as in runContainer
	if err != nil {
		_ = stop()
		return nil, nil, fmt.Errorf("start %d twin containers: %w", n, err)
	}
	bases, err := reps.BaseURLs(ctx)
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("twin container addresses: %w", err), stop())
	}
	return bases, stop, nil
}

// LogContainersTo sends testcontainers' log lines (connecting to Docker,
// building, starting and stopping the twin's container) to w instead of
// stderr, which go test merges into the stream of benchmark lines. The
// logger is testcontainers' own and process-wide: set it at the edge
// (TestMain, main), before Open.
func LogContainersTo(w io.Writer) { tclog.SetDefault(log.New(w, "", log.LstdFlags)) }
