package interrupt

import (
	"context"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// The first signal cancels; the second exits, but not while a write is in
// flight: the exit waits for it to finish, and a write asked for after the
// exit never starts. In a synctest bubble, "waits" is a fact: every
// goroutine is blocked when it is checked.
func TestSecondSignalWaitsForWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sig := make(chan os.Signal)
		var exits []int
		ctx, h := Watch(context.Background(), sig, func(code int) { exits = append(exits, code) })
		defer h.Stop()

		sig <- syscall.SIGINT
		synctest.Wait()
		require.Error(t, ctx.Err(), "the first signal cancels")
		require.Empty(t, exits, "and does not exit")

		finish := make(chan struct{})
		wrote := false
		go func() {
			_ = h.Write(func() error {
				<-finish
				wrote = true
				return nil
			})
		}()
		synctest.Wait() // the write is in flight
		time.Sleep(time.Second)
		sig <- syscall.SIGINT
		synctest.Wait()
		require.Empty(t, exits, "no exit during a write")

		close(finish)
		synctest.Wait()
		require.True(t, wrote)
		require.Equal(t, []int{ExitCode}, exits, "the exit follows the write")

		started := false
		go func() { _ = h.Write(func() error { started = true; return nil }) }()
		synctest.Wait()
		require.False(t, started, "no write starts after the exit")
		<-h.sem // the process would be gone; let the bubble end
		synctest.Wait()
	})
}

// The second signal with no write in flight exits at once.
func TestSecondSignalExits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sig := make(chan os.Signal)
		var exits []int
		_, h := Watch(context.Background(), sig, func(code int) { exits = append(exits, code) })
		defer h.Stop()
		sig <- syscall.SIGTERM
		time.Sleep(time.Second)
		sig <- syscall.SIGINT
		synctest.Wait()
		require.Equal(t, []int{ExitCode}, exits)
	})
}

// One Ctrl-C relayed by `go tool` arrives twice at once: it cancels and
// does not exit. The exit functions run before a later second signal
// exits, and an unregistered one does not.
func TestEchoIsOneSignalAndExitFuncsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sig := make(chan os.Signal)
		var exits []int
		ran := map[string]bool{}
		AtExit(func() { ran["container"] = true })()
		defer AtExit(func() { ran["kept"] = true })()
		ctx, h := Watch(context.Background(), sig, func(code int) {
			exits = append(exits, code)
			require.True(t, ran["kept"], "exit functions run before the exit")
		})
		defer h.Stop()
		sig <- syscall.SIGINT
		sig <- syscall.SIGINT // the relayed echo
		synctest.Wait()
		require.Error(t, ctx.Err())
		require.Empty(t, exits, "an echo within %v is the same Ctrl-C", Echo)
		time.Sleep(Echo)
		sig <- syscall.SIGINT
		synctest.Wait()
		require.Equal(t, []int{ExitCode}, exits)
		require.Equal(t, map[string]bool{"kept": true}, ran, "an unregistered function does not run")
	})
}

func TestWriteWithoutHandler(t *testing.T) {
	var h *Handler
	ran := false
	require.NoError(t, h.Write(func() error { ran = true; return nil }))
	require.True(t, ran)
	h.Stop()
}

// TestSIGHUPInterrupts: a hang-up (the terminal or ssh session closed)
// ended the process at once and left nothing; it is an interrupt like
// Ctrl-C: the context is cancelled and the run writes what it measured.
// Before the fix the signal below kills the test binary.
func TestSIGHUPInterrupts(t *testing.T) {
	ctx, h := Notify(context.Background())
	defer h.Stop()
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	<-ctx.Done()
	require.ErrorIs(t, ctx.Err(), context.Canceled)
}
