package speed

import (
	"fmt"
	"math"
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
