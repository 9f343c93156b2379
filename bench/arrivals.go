package bench

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/vetbench/vetbench/receipts"
)

// Arrivals is an open-loop arrival process: judgments arrive at Rate per
// second whatever the server does, as `vllm bench serve --request-rate
// --burstiness` sends requests. Inter-arrival times are gamma-distributed
// with shape Burstiness and scale 1/(Rate·Burstiness), so their mean is
// 1/Rate at any burstiness: 1 is a Poisson process, below 1 burstier, above
// 1 more even, +Inf a constant 1/Rate. As vLLM does (serve.py get_request),
// the cumulative arrival times are then rescaled so that the last one lands
// exactly on n/Rate: the offered load of a window is the stated rate, not
// the rate give or take a seed's luck. The same Seed gives the same
// schedule.
type Arrivals struct {
	// Rate is judgments per second; > 0 and finite.
	Rate float64
	// Burstiness is the gamma shape; 0 means 1 (Poisson), +Inf constant.
	Burstiness float64
	// Seed seeds the schedule's random numbers (PCG).
	Seed int64
}

// ErrArrivals is a process that cannot make a schedule.
var ErrArrivals = errors.New("arrival process")

// Shape is the gamma shape the schedule uses (Burstiness, 1 when unset).
func (a Arrivals) Shape() float64 {
	if a.Burstiness == 0 {
		return 1
	}
	return a.Burstiness
}

// Validate says why a process cannot make a schedule.
func (a Arrivals) Validate() error {
	switch {
	case !(a.Rate > 0) || math.IsInf(a.Rate, 0):
		return fmt.Errorf("%w: rate %v, want a positive, finite number of judgments per second", ErrArrivals, a.Rate)
	case math.IsNaN(a.Burstiness) || a.Burstiness < 0:
		return fmt.Errorf("%w: burstiness %v, want > 0 (1 = Poisson) or +Inf (constant)", ErrArrivals, a.Burstiness)
	}
	return nil
}

// Schedule is the arrival times of n judgments, as offsets from the window's
// opening, non-decreasing; the last is n/Rate.
func (a Arrivals) Schedule(n int) ([]time.Duration, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	shape := a.Shape()
	rng := rand.New(rand.NewPCG(uint64(a.Seed), 0x76657462656e6368)) // "vetbench"
	cum := make([]float64, n)
	sum := 0.0
	for i := range cum {
		if math.IsInf(shape, 1) {
			sum += 1 / a.Rate
		} else {
			sum += gamma(rng, shape) / (a.Rate * shape)
		}
		cum[i] = sum
	}
	scale := 1.0
	if sum > 0 {
		scale = float64(n) / a.Rate / sum
	}
	out := make([]time.Duration, n)
	for i, s := range cum {
		out[i] = time.Duration(s * scale * float64(time.Second))
	}
	return out, nil
}

// gamma draws from Gamma(shape, 1) by Marsaglia and Tsang's method (2000);
// a shape below 1 is boosted: Gamma(k) = Gamma(k+1)·U^(1/k).
func gamma(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return gamma(rng, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// arrivals is the point's arrival process: its rate, the session's
// burstiness and seed.
func (s *Session) arrivals(p Point) Arrivals {
	return Arrivals{Rate: p.Rate, Burstiness: s.Options.Burstiness, Seed: s.Options.Seed}
}

// loadPins say how the point offered its judgments: nil for the closed
// loop (receipts before open loops have none either).
func (s *Session) loadPins(p Point) *receipts.Load {
	if p.Rate <= 0 {
		return nil
	}
	a := s.arrivals(p)
	l := &receipts.Load{Mode: receipts.LoadOpen, Rate: a.Rate, MaxConcurrency: max(p.Concurrency, 0), Seed: a.Seed}
	switch shape := a.Shape(); {
	case math.IsInf(shape, 1):
		l.Process = "constant"
	case shape == 1:
		l.Process, l.Burstiness = "poisson", 1
	default:
		l.Process, l.Burstiness = "gamma", shape
	}
	return l
}

// MaxLagShare is how late, as a share of the mean inter-arrival time 1/rate,
// the client may offer its judgments (p99) before the receipt warns that
// the load offered was not the load stated.
const MaxLagShare = 0.05

// lagWarning says when the client fell behind its arrival schedule.
func lagWarning(lag *receipts.Latency, rate float64) string {
	if lag == nil || lag.N == 0 || rate <= 0 || lag.P99 <= MaxLagShare/rate {
		return ""
	}
	return fmt.Sprintf("open loop: the client offered judgments late against the schedule (p99 %.3gs, mean %.3gs, more than %g%% of the %.3gs between arrivals): the offered rate was below %g/s at times (a busy client machine?)",
		lag.P99, lag.Mean, 100*MaxLagShare, 1/rate, rate)
}
