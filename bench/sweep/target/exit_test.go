package target

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/container"
)

// The stop removedOnExit returns terminates once, however often it is
// called (the close path and the second Ctrl-C may both reach it).
func TestRemovedOnExitTerminatesOnce(t *testing.T) {
	n := 0
	stop := removedOnExit(func(context.Context) error { n++; return nil })
	require.NoError(t, stop())
	require.NoError(t, stop())
	require.Equal(t, 1, n)
}

// exits records what is registered for the exit: each function, and
// whether it is still registered.
type exits struct {
	mu   sync.Mutex
	fs   []func()
	live []bool
}

func (x *exits) atExit(f func()) func() {
	x.mu.Lock()
	defer x.mu.Unlock()
	i := len(x.fs)
	x.fs, x.live = append(x.fs, f), append(x.live, true)
	return func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		x.live[i] = false
	}
}

func (x *exits) count() (all, live int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, l := range x.live {
		if l {
			live++
		}
	}
	return len(x.fs), live
}

// recordExits replaces atExit for the test.
func recordExits(t *testing.T) *exits {
	x := &exits{}
	prev := atExit
	atExit = x.atExit
	t.Cleanup(func() { atExit = prev })
	return x
}

// terminated is a container that records its removal.
type terminated struct {
	testcontainers.Container
	n *int
}

func (c terminated) Terminate(context.Context, ...testcontainers.TerminateOption) error {
	*c.n++
	return nil
}

// A container is registered for removal at exit the moment it is created
// (births' PostCreates hook), and unregistered by release.
func TestBirthsRegisterAtCreation(t *testing.T) {
	x := recordExits(t)
	var born births
	var req testcontainers.GenericContainerRequest
	require.NoError(t, born.hook().Customize(&req))
	require.Len(t, req.LifecycleHooks, 1)
	removed := 0
	for _, h := range req.LifecycleHooks[0].PostCreates {
		require.NoError(t, h(t.Context(), terminated{n: &removed}))
	}
	all, live := x.count()
	require.Equal(t, [2]int{1, 1}, [2]int{all, live}, "registered on creation")
	x.fs[0]() // a second Ctrl-C's exit
	require.Equal(t, 1, removed)
	born.release()
	_, live = x.count()
	require.Zero(t, live)
}

// The container twin is registered from its creation: while it starts,
// a registration is live before runContainer returns (births), and once
// it has, only the stop's is (CI=true requires Docker).
func TestContainerRegisteredFromCreation(t *testing.T) {
	if err := container.DockerAvailable(t.Context()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs a Docker daemon for the container twin: %v", err)
		}
		t.Skipf("no Docker daemon: %v", err)
	}
	x := recordExits(t)
	_, stop, err := runContainer(t.Context(), stub.Config{})
	require.NoError(t, err)
	all, live := x.count()
	require.Equal(t, [2]int{2, 1}, [2]int{all, live}, "the creation's registration, then the stop's alone")
	require.NoError(t, stop())
	_, live = x.count()
	require.Zero(t, live)
}
