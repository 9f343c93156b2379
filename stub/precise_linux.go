package stub

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// newWaker starts a waker on a timerfd: the runtime's poller reads it, so
// a waiting twin wakes within the kernel's timer slack (about 50 µs), not
// at the next millisecond. stop closes it.
func newWaker() (w *waker, stop func(), err error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("timerfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "timerfd")
	w = &waker{arm: func(d time.Duration) {
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
		_ = unix.TimerfdSettime(fd, 0, &spec, nil)
	}}
	go func() {
		var buf [8]byte
		for {
			if _, err := f.Read(buf[:]); err != nil {
				return // closed
			}
			w.fire()
		}
	}()
	return w, func() { _ = f.Close() }, nil
}
