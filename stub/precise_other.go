//go:build !linux

package stub

import "errors"

// newWaker has no precise timer to use here: the clock keeps package
// time's timers.
func newWaker() (*waker, func(), error) {
	return nil, nil, errors.New("no precise timer on this system")
}
