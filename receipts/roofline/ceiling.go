package roofline

import "math"

// Bound names the ceiling a step is against.
type Bound string

// Bounds.
const (
	BandwidthBound Bound = "bandwidth"
	ComputeBound   Bound = "compute"
)

// Ceiling is the fastest a step can run on a GPU: no faster than moving
// its bytes at peak bandwidth, nor than doing its FLOPs at peak compute.
type Ceiling struct {
	StepCost
	// BandwidthSeconds and ComputeSeconds are the two lower bounds on the
	// step's time; StepSeconds the larger.
	BandwidthSeconds, ComputeSeconds, StepSeconds float64
	// BandwidthTokS, ComputeTokS and TokS are the same as tokens/s.
	BandwidthTokS, ComputeTokS, TokS float64
	Bound                            Bound
}

// Ceiling divides a step's cost by the GPU's peaks.
func (h Hardware) Ceiling(c StepCost) Ceiling {
	r := Ceiling{StepCost: c}
	r.BandwidthSeconds = c.Bytes / h.Bandwidth.Value
	r.ComputeSeconds = c.FLOPs / h.FLOPs.Value
	r.StepSeconds = math.Max(r.BandwidthSeconds, r.ComputeSeconds)
	t := float64(c.Tokens)
	r.BandwidthTokS = t / r.BandwidthSeconds
	r.ComputeTokS = t / r.ComputeSeconds
	r.TokS = t / r.StepSeconds
	// The same test as intensity > ridge, without dividing twice.
	r.Bound = BandwidthBound
	if r.ComputeSeconds > r.BandwidthSeconds {
		r.Bound = ComputeBound
	}
	return r
}

// Utilisation is a measured rate read against its ceiling.
type Utilisation struct {
	MeasuredTokS float64
	// Share is measured ÷ ceiling tokens/s.
	Share float64
	// MeasuredStepSeconds is the step time the measured rate implies
	// (Tokens ÷ measured); ResidualSeconds what the ceiling does not
	// explain (measured step − ceiling step): fixed per-step cost, or
	// below zero when the run beat the ceiling.
	MeasuredStepSeconds, ResidualSeconds float64
	// AboveCeiling flags a measurement faster than the hardware allows:
	// a sign the run measured a cache, not the GPU.
	AboveCeiling bool
}

// Assess reads a measured tokens/s (of this step's shape: same batch,
// context) against the ceiling.
func (c Ceiling) Assess(measuredTokS float64) Utilisation {
	u := Utilisation{MeasuredTokS: measuredTokS}
	if !(measuredTokS > 0) {
		return u
	}
	u.Share = measuredTokS / c.TokS
	u.MeasuredStepSeconds = float64(c.Tokens) / measuredTokS
	u.ResidualSeconds = u.MeasuredStepSeconds - c.StepSeconds
	u.AboveCeiling = u.Share > 1
	return u
}
