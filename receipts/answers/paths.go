package answers

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/vetbench/vetbench/receipts/typevet"
)

// Judged is a comparison's report, printed and then read for its verdict:
// a *Report (two receipts) or a *SweepReport (two sweeps, or the levels of
// one).
type Judged interface {
	WriteText(w io.Writer) error
	Failed() bool
}

// PolicyNamed is the base policy of that name: default, or strict
// (near-tie moves fail too).
func PolicyNamed(name string) (Policy, error) {
	switch name {
	case "default":
		return DefaultPolicy(), nil
	case "strict":
		return StrictPolicy(), nil
	}
	return Policy{}, fmt.Errorf("unknown policy %q (want default or strict)", name)
}

// CompareLevelsDir compares every level of the sweep in dir with its c=1
// receipt (CompareLevels).
func CompareLevelsDir(dir string, p Policy) (*SweepReport, error) {
	rs, err := typevet.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	return CompareLevels(rs, p)
}

// ComparePaths compares the receipts at base and cand (vetbench or typevet
// format, typevet.ReadAny), or two sweep directories (CompareSweep). A
// pair's report names its files. Receipts of different setups are a
// *receipts.IdentityError unless p allows the drift.
func ComparePaths(base, cand string, p Policy) (Judged, error) {
	bdir, bok := isDir(base)
	cdir, cok := isDir(cand)
	if bok && cok && bdir != cdir {
		return nil, errors.New("BASELINE and CANDIDATE must both be receipts or both be directories")
	}
	if bok && !cok {
		// Read the missing side first, so that its error is the one
		// given (not the baseline directory read as a receipt).
		if _, err := typevet.ReadAny(cand); err != nil {
			return nil, fmt.Errorf("candidate: %w", err)
		}
	}
	if bdir && cdir {
		b, err := typevet.ReadDir(base)
		if err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		c, err := typevet.ReadDir(cand)
		if err != nil {
			return nil, fmt.Errorf("candidate: %w", err)
		}
		return CompareSweep(b, c, p)
	}
	b, err := typevet.ReadAny(base)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	c, err := typevet.ReadAny(cand)
	if err != nil {
		return nil, fmt.Errorf("candidate: %w", err)
	}
	rep, err := Compare(b, c, p)
	if err != nil {
		return nil, err
	}
	rep.Baseline.File, rep.Candidate.File = base, cand
	return rep, nil
}

// isDir says whether path is a directory (ok false when it cannot be
// stat'ed; the reader then reports why).
func isDir(path string) (dir, ok bool) {
	st, err := os.Stat(path)
	if err != nil {
		return false, false
	}
	return st.IsDir(), true
}
