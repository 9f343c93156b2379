// Package rundir is where a run's results land: a directory of its own per
// run (out/runs/<time>-<id>, with out/latest pointing at the newest) unless
// the user names one, the layout inside it (receipts/, bench.txt,
// settings.toml, twin.log), a receipt path per pass so that no pass
// replaces another's, and the refusal to write into a named directory that
// already holds results unless forced.
package rundir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// The layout of a run directory.
const (
	ReceiptsDir  = "receipts"      // pass 1's receipts; pass k's in receipts/pass<k>
	BenchFile    = "bench.txt"     // benchmark lines (go test -bench format)
	SettingsFile = "settings.toml" // the run's effective settings (bench/sweep/config)
	TwinLog      = "twin.log"      // the container twin's log (testcontainers)
)

// Under a root (out by default): runs/<id> for each run, latest → the newest.
const (
	DefaultRoot = "out"
	RunsDir     = "runs"
	LatestLink  = "latest"
)

// ErrHoldsResults is returned for a named directory that already holds a
// run's results.
var ErrHoldsResults = errors.New("holds results of an earlier run")

// Dir is one run's directory.
type Dir struct {
	Path string
	// ID names the run: the directory's name for a new run
	// (20261201T120000Z-ab12cd), the directory's base name for a named one.
	ID string
	// Warning is set when out/latest could not be pointed at a new run; the
	// run itself is unaffected.
	Warning string

	mu      sync.Mutex
	passes  map[string]int
	release func() error // the lock's (LockFile); nil when not held
	// force is what the directory was opened with; its Subs inherit it,
	// so that gate -run -force replaces baseline/ and candidate/ too.
	force bool
}

// New makes a new run directory root/runs/<UTC time>-<random> and points
// root/latest at it.
func New(root string, now time.Time) (*Dir, error) {
	runs := filepath.Join(root, RunsDir)
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	var id string
	for try := 0; ; try++ {
		id = NewID(now)
		err := os.Mkdir(filepath.Join(runs, id), 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || try == 10 {
			return nil, fmt.Errorf("run directory: %w", err)
		}
	}
	d := &Dir{Path: filepath.Join(runs, id), ID: id}
	var err error
	if d.release, d.Warning, err = lock(d.Path); err != nil {
		return nil, err
	}
	if err := pointLatest(root, id); err != nil {
		d.Warning = fmt.Sprintf("%s not updated: %v", filepath.Join(root, LatestLink), err)
	}
	return d, nil
}

// NewID is a run id: the time in UTC to the second and 6 random hex digits.
func NewID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// pointLatest replaces root/latest with a link to runs/id, atomically.
func pointLatest(root, id string) error {
	link := filepath.Join(root, LatestLink)
	if st, err := os.Lstat(link); err == nil && st.Mode()&fs.ModeSymlink == 0 {
		return fmt.Errorf("%s exists and is not a link; left alone", link)
	}
	tmp := filepath.Join(root, "."+LatestLink+"-"+id)
	if err := os.Symlink(filepath.Join(RunsDir, id), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// Named prepares the directory the user named: created when missing. One
// that already holds results (receipts in receipts/, a bench.txt with
// lines, or receipts at its top, as VETBENCH_OUT once named the receipts
// directory itself) is refused with ErrHoldsResults unless force; with
// force the earlier run's files are removed first, so the directory holds
// one run. What a run that measured nothing left (settings.toml, an empty
// bench.txt) is replaced without asking; twin.log is appended to. Anything
// else in it is left alone. The directory is locked for this run
// (LockFile) before it is looked at, so a second run into it is refused
// with ErrLocked, even with force; Close releases it.
func Named(path string, force bool) (*Dir, error) {
	return named(path, force, true)
}

func named(path string, force, locked bool) (*Dir, error) {
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("run directory %s: not a directory", path)
	} else if target, lerr := os.Readlink(path); err != nil && lerr == nil {
		// MkdirAll would say only "file exists" of a link to nowhere.
		return nil, fmt.Errorf("run directory %s: a symbolic link to %s, which does not exist: create it, or name another directory", path, target)
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	d := &Dir{Path: path, ID: filepath.Base(path), force: force}
	if locked {
		var err error
		if d.release, d.Warning, err = lock(path); err != nil {
			return nil, err
		}
	}
	if err := d.prepare(force); err != nil {
		return nil, errors.Join(err, d.Close())
	}
	return d, nil
}

// prepare refuses (or, forced, removes) an earlier run's results in d.
func (d *Dir) prepare(force bool) error {
	path := d.Path
	held, err := Results(path)
	if err != nil {
		return fmt.Errorf("run directory %s: %w", path, err)
	}
	if len(held) > 0 && !force {
		return fmt.Errorf("run directory %s %w (%s): name a new directory, or pass -force (VETBENCH_FORCE=1; make bench FORCE=1) to replace them",
			path, ErrHoldsResults, joinNames(held))
	}
	remove := []string{ReceiptsDir, BenchFile, SettingsFile}
	if force {
		remove = append(remove, TwinLog)
	}
	for _, name := range remove {
		if err := os.RemoveAll(filepath.Join(path, name)); err != nil {
			return fmt.Errorf("run directory %s: replace: %w", path, err)
		}
	}
	return nil
}

// Open is Named(path, force) when the user named a path, else New(root, now).
func Open(path, root string, force bool, now time.Time) (*Dir, error) {
	if path != "" {
		return Named(path, force)
	}
	return New(root, now)
}

// Results lists the entries of dir that hold a run's results (receipts,
// benchmark lines); none for a directory that does not exist.
func Results(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var held []string
	for _, e := range entries {
		switch name := e.Name(); {
		case name == ReceiptsDir && e.IsDir():
			if sub, err := os.ReadDir(filepath.Join(dir, name)); err != nil || len(sub) > 0 {
				held = append(held, name+"/")
			}
		case name == BenchFile:
			if info, err := e.Info(); err != nil || info.Size() > 0 {
				held = append(held, name)
			}
		case filepath.Ext(name) == ".json" && !e.IsDir():
			held = append(held, name)
		}
	}
	return held, nil
}

func joinNames(names []string) string {
	const show = 4
	s := ""
	for i, n := range names {
		if i == show {
			return s + fmt.Sprintf(", … %d more", len(names)-show)
		}
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// Sub prepares the named directory name inside d as a run directory of its
// own (gate -run: baseline/ and candidate/); d's lock covers it. One that
// holds results is refused as Named refuses it, unless d was opened with
// force, which replaces them.
func (d *Dir) Sub(name string) (*Dir, error) {
	return named(filepath.Join(d.Path, name), d.force, false)
}

// File is the path of a file of the layout (BenchFile, SettingsFile, TwinLog).
func (d *Dir) File(name string) string { return filepath.Join(d.Path, name) }

// PassDir is the directory of pass k's receipts: receipts/ for the first,
// receipts/pass<k> after it, so each pass's receipts are one sweep that
// compare and report read as they read the first.
func (d *Dir) PassDir(k int) string {
	if k <= 1 {
		return filepath.Join(d.Path, ReceiptsDir)
	}
	return filepath.Join(d.Path, ReceiptsDir, "pass"+strconv.Itoa(k))
}

// NextReceipt is where the next receipt named name (checks_c16.json) goes:
// the first in receipts/, the k-th in receipts/pass<k>. The directory is
// created; a path already taken is never returned, so no receipt replaces
// another. Safe for concurrent use.
func (d *Dir) NextReceipt(name string) (path string, pass int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.passes == nil {
		d.passes = map[string]int{}
	}
	for k := d.passes[name] + 1; ; k++ {
		dir := d.PassDir(k)
		path = filepath.Join(dir, name)
		if _, err := os.Lstat(path); err == nil {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", 0, fmt.Errorf("receipt directory: %w", err)
		}
		d.passes[name] = k
		return path, k, nil
	}
}
