package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFile holds the pid of the run that has the directory: one run per
// run directory, so that two runs into one -out cannot interleave their
// bench.txt lines and receipts. It is not a result (Results skips it), and
// -force leaves it alone.
const LockFile = ".vetbench.lock"

// ErrLocked is returned for a run directory another live run holds.
var ErrLocked = errors.New("is in use by another run")

// lock takes path's lock file for this process (O_EXCL). A lock whose pid
// is not alive is taken over, and the returned note says so.
func lock(path string) (release func() error, note string, err error) {
	file := filepath.Join(path, LockFile)
	me := strconv.Itoa(os.Getpid())
	for try := 0; try < 3; try++ {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, werr := f.WriteString(me + "\n")
			if err := errors.Join(werr, f.Close()); err != nil {
				os.Remove(file)
				return nil, "", fmt.Errorf("run directory %s: lock: %w", path, err)
			}
			return func() error { return unlock(file, me) }, note, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, "", fmt.Errorf("run directory %s: lock: %w", path, err)
		}
		b, rerr := os.ReadFile(file)
		if errors.Is(rerr, fs.ErrNotExist) {
			continue // released meanwhile
		}
		holder := strings.TrimSpace(string(b))
		pid, perr := strconv.Atoi(holder)
		if rerr == nil && perr == nil && pid > 0 && alive(pid) {
			return nil, "", fmt.Errorf("run directory %s %w (pid %d holds %s): wait for it, or name another directory",
				path, ErrLocked, pid, LockFile)
		}
		if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("run directory %s: stale lock: %w", path, err)
		}
		note = fmt.Sprintf("%s: took over a stale lock (pid %q is not running)", file, holder)
	}
	return nil, "", fmt.Errorf("run directory %s: lock: %s keeps changing", path, LockFile)
}

// unlock removes the lock file if it is still this process's.
func unlock(file, me string) error {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(b)) != me {
		return nil
	}
	return os.Remove(file)
}

// alive reports whether a process pid exists (signal 0; EPERM: it exists,
// another user's).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Close releases the directory's lock; safe to call more than once.
func (d *Dir) Close() error {
	d.mu.Lock()
	release := d.release
	d.release = nil
	d.mu.Unlock()
	if release == nil {
		return nil
	}
	return release()
}
