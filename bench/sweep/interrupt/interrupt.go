// Package interrupt is how vetbench's edges (the CLI, the benchmark suite)
// take Ctrl-C: the first SIGINT or SIGTERM cancels a context, so the point
// in flight stops and writes what it measured; the second exits at once.
// "At once" never means in the middle of writing a result: writes go
// through Handler.Write, and the exit waits for the write in flight to
// finish its atomic rename, and no write starts after it; and it runs the
// process's exit functions (AtExit: the twin's container is removed) first.
package interrupt

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// ExitCode is the status of a process that was interrupted, by the first
// signal (it stopped early and said so) or by the second: 128 + SIGINT, as
// a shell reports a command killed by Ctrl-C.
const ExitCode = 130

// Echo is how soon after the first signal another is taken as the same
// Ctrl-C: `go tool vetbench` relays the terminal's SIGINT to its child,
// which also gets it from the terminal (one process group), so one
// keypress arrives twice within microseconds. A person's second Ctrl-C
// comes later than this.
const Echo = 250 * time.Millisecond

// ExitBound is how long the exit functions may take before the second
// signal exits anyway.
const ExitBound = 15 * time.Second

var (
	exitMu    sync.Mutex
	exitFuncs = map[int]func(){}
	exitNext  int
)

// AtExit registers f to run before the second signal exits the process
// (the first cancels; its path cleans up as usual): what must not outlive
// the process, such as a container no reaper removes. The returned func
// unregisters f; call it once f's work is done another way.
func AtExit(f func()) (unregister func()) {
	exitMu.Lock()
	defer exitMu.Unlock()
	id := exitNext
	exitNext++
	exitFuncs[id] = f
	return func() {
		exitMu.Lock()
		defer exitMu.Unlock()
		delete(exitFuncs, id)
	}
}

// runExitFuncs runs every registered function at once and waits for them,
// at most ExitBound.
func runExitFuncs() {
	exitMu.Lock()
	fs := make([]func(), 0, len(exitFuncs))
	for _, f := range exitFuncs {
		fs = append(fs, f)
	}
	exitMu.Unlock()
	if len(fs) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, f := range fs {
		wg.Go(f)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(ExitBound):
	}
}

// Handler holds the signal state of one process.
type Handler struct {
	// sem is held by a write in flight, and by the exit for good (a
	// channel, not a mutex: tests wait on it in a synctest bubble).
	sem    chan struct{}
	cancel context.CancelFunc
	stop   func()
	done   chan struct{}
	once   sync.Once
	// OnSecond, when set, is called (with the write lock held) just before
	// the second signal exits, e.g. to say so on stderr.
	OnSecond func()
}

// Signals are the signals that interrupt a run: Ctrl-C, kill, and SIGHUP
// (a closed terminal or ssh session), which would otherwise end the
// process at once and leave nothing of what it measured.
var Signals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// Notify returns a context cancelled by the first of Signals and the
// Handler whose second signal exits the process with ExitCode. Call Stop
// when done.
func Notify(parent context.Context) (context.Context, *Handler) {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, Signals...)
	ctx, h := Watch(parent, sig, os.Exit)
	prev := h.stop
	h.stop = func() { signal.Stop(sig); prev() }
	return ctx, h
}

// Watch is Notify on a signal channel of the caller's and with its exit
// function (tests send on sig and record the exit).
func Watch(parent context.Context, sig <-chan os.Signal, exit func(code int)) (context.Context, *Handler) {
	ctx, cancel := context.WithCancel(parent)
	h := &Handler{sem: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	h.stop = func() { h.once.Do(func() { close(h.done) }) }
	go func() {
		var first time.Time
		for n := 0; ; {
			select {
			case <-h.done:
				return
			case <-sig:
			}
			if n++; n == 1 {
				first = time.Now()
				cancel()
				continue
			}
			if time.Since(first) < Echo {
				n-- // the first one, relayed
				continue
			}
			h.sem <- struct{}{} // wait for the write in flight; none starts after
			if h.OnSecond != nil {
				h.OnSecond()
			}
			runExitFuncs()
			exit(ExitCode)
			return
		}
	}()
	return ctx, h
}

// Write runs write (one file's atomic write) so that a second signal
// either waits for it to finish or comes before it starts.
func (h *Handler) Write(write func() error) error {
	if h == nil {
		return write()
	}
	h.sem <- struct{}{}
	defer func() { <-h.sem }()
	return write()
}

// Stop stops watching signals; the context stays as it is.
func (h *Handler) Stop() {
	if h != nil {
		h.stop()
	}
}
