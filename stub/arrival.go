package stub

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"
)

// A served twin dates each request from when its bytes reached the
// server's socket, not from when its handler got the CPU. The kernel
// stamps every segment it receives (SO_TIMESTAMPNS; arrival_linux.go), and
// the connection keeps the stamp of the latest bytes it read: when the
// handler starts, those are the request's head. On a busy or idle-woken
// machine the handler starts late — 0.3–0.8 ms after the client's send on
// 2 shared cores when idle, several ms at c = 128 — and at time scale 10
// every millisecond of that would count as ten of model time on the
// request's TTFT; from the stamp, the model runs from the arrival and the
// twin's late start is absorbed like a late timer. Where there is no
// stamp (another server serves the twin's Handler, or no kernel support),
// the handler's start is used, as before.

// arrivalListener hands out connections that keep their receive stamps.
type arrivalListener struct{ net.Listener }

func (l arrivalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if ac := newArrivalConn(tc); ac != nil {
			return ac, nil
		}
	}
	return c, nil
}

// arrivalConn is a TCP connection whose reads keep the kernel's receive
// stamp of the latest bytes read (unix ns; 0: none yet).
type arrivalConn struct {
	*net.TCPConn
	raw syscall.RawConn
	stamped
}

type stamped struct{ last atomic.Int64 }

// arrived is the wall time the latest bytes read reached the socket.
func (s *stamped) arrived() (time.Time, bool) {
	ns := s.last.Load()
	if ns == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

type arrivalKey struct{}

// withArrivals serves srv's connections with their receive stamps: ln is
// wrapped, and each request's context carries its connection.
func withArrivals(srv *http.Server, ln net.Listener) net.Listener {
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if ac, ok := c.(*arrivalConn); ok {
			return context.WithValue(ctx, arrivalKey{}, &ac.stamped)
		}
		return ctx
	}
	stampListener(ln)
	return arrivalListener{ln}
}

// arrived is the model time request hr reached the server: its
// connection's receive stamp, where it has one and it is not in the future
// of now; else now.
func (s *Server) arrived(hr *http.Request) float64 {
	now := s.eng.clock.now()
	st, ok := hr.Context().Value(arrivalKey{}).(*stamped)
	if !ok {
		return now
	}
	at, ok := st.arrived()
	if !ok {
		return now
	}
	// The age is taken on the wall clock of both stamps (the kernel's is
	// CLOCK_REALTIME): a clock step between them is the only error.
	age := time.Now().Round(0).Sub(at)
	if age < 0 {
		return now
	}
	return now - s.eng.clock.model(age)
}
