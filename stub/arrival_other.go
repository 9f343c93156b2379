//go:build !linux

package stub

import "net"

// newArrivalConn has no receive stamps to turn on here: requests are dated
// from their handler's start.
func newArrivalConn(*net.TCPConn) *arrivalConn { return nil }

func stampListener(net.Listener) {}
