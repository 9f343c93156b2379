package stub

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// stampListener turns on receive stamps on ln's socket, which its
// connections inherit: the kernel then stamps a request that arrives with
// its connection, before Accept returns it.
func stampListener(ln net.Listener) {
	if tl, ok := ln.(*net.TCPListener); ok {
		if raw, err := tl.SyscallConn(); err == nil {
			_ = stampOn(raw)
		}
	}
}

// newArrivalConn turns on the kernel's receive stamps on c; nil when it
// cannot (c is then served as it is).
func newArrivalConn(c *net.TCPConn) *arrivalConn {
	raw, err := c.SyscallConn()
	if err != nil || stampOn(raw) != nil {
		return nil
	}
	return &arrivalConn{TCPConn: c, raw: raw}
}

func stampOn(raw syscall.RawConn) error {
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return err
	}
	return serr
}

// stampSpace holds one SCM_TIMESTAMPNS message (a timespec).
var stampSpace = unix.CmsgSpace(16)

// Read reads as the TCP connection does, through recvmsg, keeping the
// stamp of the bytes read.
func (c *arrivalConn) Read(p []byte) (int, error) {
	oob := make([]byte, stampSpace)
	var n, oobn int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), p, oob, 0)
		return rerr != unix.EAGAIN && rerr != unix.EINTR
	})
	if err == nil && rerr != nil {
		err = os.NewSyscallError("read", rerr)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err // the raw conn's own "raw-read" wrapping
	}
	switch {
	case err != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	// Bytes without a stamp (none yet when they were received) clear it:
	// an earlier request's would date this one too early.
	c.last.Store(parseStamp(oob[:oobn]))
	return n, nil
}

// parseStamp is the SCM_TIMESTAMPNS stamp in oob, in unix ns (0: none).
func parseStamp(oob []byte) int64 {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			return sec*1e9 + nsec
		}
	}
	return 0
}
