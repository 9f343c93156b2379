package speed

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Refused says the outputs were not compared: their identity differs and
// drift was not allowed.
func (c IdentityCheck) Refused() bool { return len(c.Differs) > 0 && !c.Allowed }

// SetFloor sets the floor of a share metric (goodput: the share of
// judgments within the SLO), below which the candidate fails whatever the
// baseline did; 0 is none.
func (p *Policy) SetFloor(metric string, share float64) error {
	switch {
	case math.IsNaN(share) || share < 0 || share > 1:
		return fmt.Errorf("%v: want a share from 0 to 1", share)
	case share > 0:
		p.Floors = map[string]float64{metric: share}
	}
	return nil
}

// Outcome is a gate's verdict as the exit contract reads it.
type Outcome int

// Outcomes, in exit-status order.
const (
	Pass      Outcome = iota // exit 0
	Slower                   // exit 1: the candidate is worse, or its run failed
	NoVerdict                // exit 2: could not decide
)

// AddRuns records why the measured runs of each side failed (gate -run;
// nil when a side's did not): a failed baseline run leaves nothing to
// compare with, a failed candidate run fails the gate whatever the
// statistics say (its failures are the verdict, however few its runs).
func (r *Report) AddRuns(base, cand error) {
	if base != nil {
		r.AddProblem(fmt.Sprintf("baseline run failed: %v", base))
		r.baseRunFailed = true
	}
	if cand != nil {
		r.AddFailure(fmt.Sprintf("candidate run failed: %v", cand))
		r.candRunFailed = true
	}
}

// Outcome is the report's verdict: a failed baseline run no verdict, then
// a failed candidate run slower, then NoVerdict, Failed.
func (r *Report) Outcome() Outcome {
	switch {
	case r.baseRunFailed:
		return NoVerdict
	case r.candRunFailed:
		return Slower
	case r.NoVerdict():
		return NoVerdict
	case r.Failed():
		return Slower
	}
	return Pass
}

// ErrCandidateRun is a candidate whose run failed (gate -run) and left no
// output to read: it failed all the same.
var ErrCandidateRun = errors.New("candidate run failed")

// LoadPair reads the baseline's and the candidate's outputs (LoadFile);
// runs are why each side's run failed, nil when it did not or was read
// from a file, joined to that side's read error. A candidate with nothing
// to read after its run failed (its server was down from the start) is
// ErrCandidateRun when the baseline's run did not fail.
func LoadPair(files [2]string, runs [2]error) (base, cand *Samples, err error) {
	if base, err = LoadFile(files[0]); err != nil {
		return nil, nil, fmt.Errorf("baseline: %w", errors.Join(err, runs[0]))
	}
	if cand, err = LoadFile(files[1]); err != nil {
		if runs[1] != nil && runs[0] == nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrCandidateRun, errors.Join(runs[1], err))
		}
		return nil, nil, fmt.Errorf("candidate: %w", errors.Join(err, runs[1]))
	}
	return base, cand, nil
}

// BenchstatArgs are the go command's arguments that show benchstat's
// tables of the two files (for reading; the decision never parses them).
// Configuration keys whose values differ between them (target,
// endpoint…) are ignored, else benchstat would split the tables and
// compare nothing.
func BenchstatArgs(base, cand *Samples, files [2]string) []string {
	args := []string{"tool", "benchstat"}
	if ignore := VaryingConfig(base, cand); len(ignore) > 0 {
		args = append(args, "-ignore", strings.Join(ignore, ","))
	}
	return append(args, "baseline="+files[0], "candidate="+files[1])
}
