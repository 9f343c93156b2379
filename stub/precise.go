package stub

import (
	"container/heap"
	"sync"
	"time"
)

// Go's timers are coarse when the process is idle: the runtime then waits
// for the next timer in epoll_wait, whose timeout is whole milliseconds
// (runtime/netpoll_epoll.go), so a timer fires up to a millisecond late and
// any sleep shorter than a millisecond takes a whole one. At time scale 10
// that is up to 10 ms of model time on every step and every token, and a
// decode step is a few ms of model time. The clock's lateness estimate
// corrects the mean, not the spread. A served twin (Start, Serve) therefore
// wakes through a precise timer where the system has one (a timerfd, which
// the runtime's poller waits on with the kernel's high-resolution timers;
// precise_linux.go); elsewhere, and for a twin driven in-process (New, the
// fake-time tests), the clock uses package time.

// waker wakes waiters at wall-clock deadlines: one system timer armed for
// the earliest deadline, a heap of the rest.
type waker struct {
	mu      sync.Mutex
	waiters wakeHeap
	arm     func(d time.Duration) // sets the system timer to fire in d (> 0)
}

type wakeEntry struct {
	at time.Time
	ch chan struct{}
}

type wakeHeap []wakeEntry

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h wakeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)        { *h = append(*h, x.(wakeEntry)) }
func (h *wakeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// after returns a channel closed at wall time at (at once if it is due).
func (w *waker) after(at time.Time) <-chan struct{} {
	ch := make(chan struct{})
	d := time.Until(at)
	if d <= 0 {
		close(ch)
		return ch
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	heap.Push(&w.waiters, wakeEntry{at, ch})
	if w.waiters[0].ch == ch {
		w.arm(d)
	}
	return ch
}

// fire wakes every waiter that is due and arms the timer for the next.
func (w *waker) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	for len(w.waiters) > 0 && !w.waiters[0].at.After(now) {
		close(heap.Pop(&w.waiters).(wakeEntry).ch)
	}
	if len(w.waiters) > 0 {
		w.arm(max(time.Nanosecond, w.waiters[0].at.Sub(now)))
	}
}
