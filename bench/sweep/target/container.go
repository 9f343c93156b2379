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
	unregister := interrupt.AtExit(func() {
		fmt.Fprintln(os.Stderr, "[vetbench] removing the twin's container before exiting")
		_ = once1()
	})
	return func() error { defer unregister(); return once1() }
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
	ctr, err := container.Run(ctx, imageOptions(tw)...)
	if ctr == nil {
		return "", nil, fmt.Errorf("start twin container: %w", err)
	}
	// Registered the moment a container exists, on the way out too: a
	// Ctrl-C in its start cancels ctx, and a second one during the removal
	// that follows must wait for it, not exit past it.
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
	reps, err := container.RunReplicas(ctx, n, imageOptions(tw)...)
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
