package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Outputs says where Make writes a report.
type Outputs struct {
	// HTML is the page's file; empty puts report.html in the last run
	// directory.
	HTML string
	// CSVDir is the CSV tables' directory; empty is HTML without its
	// extension plus "_csv"; "-" writes no CSV.
	CSVDir string
	// Force overwrites existing files. Without it, any output that
	// exists refuses the whole write before anything is written.
	Force bool
}

// Written is what Make wrote.
type Written struct {
	Report *Report
	// HTML is the page's path; CSVDir and CSVFiles where the tables went
	// and how many (0 and "" for none).
	HTML     string
	CSVDir   string
	CSVFiles int
}

// Make is the report command: it loads the run in dirs[0] ("run", or the
// "baseline" when dirs[1] names a "candidate"), builds the report under
// opt and writes the page and the CSV tables as out says, each file
// atomically (a reader never sees half of one), refusing to overwrite
// unless out.Force.
func Make(dirs []string, opt Options, out Outputs) (*Written, error) {
	if len(dirs) < 1 || len(dirs) > 2 {
		return nil, fmt.Errorf("want one run directory, or a baseline and a candidate (got %d)", len(dirs))
	}
	base, err := Load(dirs[0], "baseline")
	if err != nil {
		return nil, err
	}
	var cand *Run
	if len(dirs) == 2 {
		if cand, err = Load(dirs[1], "candidate"); err != nil {
			return nil, err
		}
	} else {
		base.Label = "run"
	}
	rep, err := Build(base, cand, opt)
	if err != nil {
		return nil, err
	}
	w := &Written{Report: rep, HTML: out.HTML}
	if w.HTML == "" {
		w.HTML = filepath.Join(dirs[len(dirs)-1], "report.html")
	}
	files, err := w.files(out.CSVDir)
	if err != nil {
		return nil, err
	}
	if err := writeAll(files, out.Force); err != nil {
		return nil, err
	}
	return w, nil
}

// file is one output: where and what.
type file struct {
	path string
	data []byte
}

// files renders the page and, unless csvDir is "-", the CSV tables.
func (w *Written) files(csvDir string) ([]file, error) {
	var page bytes.Buffer
	if err := w.Report.WriteHTML(&page); err != nil {
		return nil, err
	}
	out := []file{{path: w.HTML, data: page.Bytes()}}
	if csvDir == "-" {
		return out, nil
	}
	w.CSVDir = csvDir
	if w.CSVDir == "" {
		w.CSVDir = strings.TrimSuffix(w.HTML, filepath.Ext(w.HTML)) + "_csv"
	}
	csvs, err := w.Report.CSVFiles()
	if err != nil {
		return nil, err
	}
	for _, f := range csvs {
		out = append(out, file{path: filepath.Join(w.CSVDir, f.Name), data: f.Data})
	}
	w.CSVFiles = len(csvs)
	return out, nil
}

// writeAll refuses before writing anything when an output exists (unless
// force), so a refused run leaves no half set; then writes each one.
func writeAll(files []file, force bool) error {
	if !force {
		for _, f := range files {
			if _, err := os.Lstat(f.path); err == nil {
				return fmt.Errorf("%s exists (use -force to overwrite, or -o elsewhere)", f.path)
			}
		}
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return err
		}
		if err := writeFileAtomic(f.path, f.data, force); err != nil {
			return err
		}
	}
	return nil
}

// writeFileAtomic writes data to a temporary file beside path and moves
// it into place: a reader never sees half a file. Without overwrite it
// links the file into place, which fails when path appeared meanwhile.
func writeFileAtomic(path string, data []byte, overwrite bool) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if overwrite {
		return os.Rename(tmp.Name(), path)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists (use -force to overwrite)", path)
		}
		// A file system without hard links: check, then rename.
		if _, serr := os.Lstat(path); serr == nil {
			return fmt.Errorf("%s exists (use -force to overwrite)", path)
		}
		return os.Rename(tmp.Name(), path)
	}
	return nil
}
