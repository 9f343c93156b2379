package sweep

import (
	"errors"
	"os"
	"sync"
)

// maxPendingLog bounds what a twin's log holds before its run has a
// directory (a token run records once its probe answered).
const maxPendingLog = 64 << 10

// pendingLog is the twin's log: held in memory until the run records into
// a directory, then dir/twin.log (appended to, what was held first).
type pendingLog struct {
	mu      sync.Mutex
	f       *os.File
	pending []byte
	dropped bool
	closed  bool
}

// Write appends to the file, or holds p until there is one (beyond
// maxPendingLog, what comes later is dropped and the file says so).
func (l *pendingLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		return l.f.Write(p)
	}
	if l.closed || len(l.pending)+len(p) > maxPendingLog {
		l.dropped = true
		return len(p), nil
	}
	l.pending = append(l.pending, p...)
	return len(p), nil
}

// attach opens path (appending) and writes what was held to it first.
func (l *pendingLog) attach(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil || l.closed {
		return errors.Join(errors.New("twin log already attached or closed"), f.Close())
	}
	_, err = f.Write(l.pending)
	if err == nil && l.dropped {
		_, err = f.WriteString("vetbench: the twin's log lines before the run had a directory were cut at 64 KiB\n")
	}
	l.f, l.pending = f, nil
	return err
}

// close closes the file, if any; later lines go nowhere. A nil log has
// nothing to close.
func (l *pendingLog) close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.f
	l.f, l.pending, l.closed = nil, nil, true
	if f == nil {
		return nil
	}
	return f.Close()
}
