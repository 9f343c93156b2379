// Package audit checks that a run measured what it claims: Little's law over
// the measured window (the pool's own in-flight count against throughput ×
// latency), reconciliation of the server's counters with what the client
// sent, and the cost of judgments at a stated GPU price.
//
// # Little's law
//
// Over a window of length T, the time-weighted mean number of judgments in
// flight L equals the throughput λ = N/T times the mean time W each spent in
// flight: L = λW, exactly, when every judgment starts and ends inside the
// window and L, N, T and W are measured on the same judgments and the same
// window. So with consistent measurement the check cannot fail; it fails
// exactly when the runner's figures are not about the same thing:
//
//   - a latency clock that misses part of the judgment (timer started after
//     encoding the images, a retry sleep or a blocked hand-off of the result
//     outside the timer): the pool holds judgments longer than the reported
//     latency says, L > λW;
//   - judgments the figures leave out (failed or discarded ones dropped from
//     the latency mean, stragglers after the clock stopped): the sampler's
//     count differs from the runner's;
//   - a wall clock that is not the window (it includes warmup, tokenizing or a
//     /metrics read): λ is too low;
//   - time inside the window that no judgment accounts for (nothing in
//     flight: IdleFraction), and a stalled pool (fewer than c judgments in
//     flight while work remained: Saturation) — these leave L = λW intact,
//     so they are checked directly;
//   - warmup leaking into the window (judgments already in flight at Open).
//
// The Sampler is the independent instrument: the runner marks Start when a
// worker takes an item (its pool slot is now busy) and End when the worker is
// free for the next one (after handing the result over), while the latency
// clock runs around the judgment itself. Their difference is per-judgment
// overhead the latency figure does not show; a healthy run keeps it under 5%.
package audit

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/vetbench/vetbench/receipts"
)

// Tolerance is the relative gap past which a Little's-law figure is flagged:
// the mean in flight against throughput × latency, the runner's wall clock
// against the sampler's window, the pool's saturation and idle share.
const Tolerance = 0.05

// Sampler integrates the number of judgments in flight over the measured
// window, event by event (exact, not sampled). It is safe for concurrent use;
// each call is a mutex and a few float operations.
type Sampler struct {
	mu          sync.Mutex
	now         func() time.Time
	concurrency int

	opened, closed bool
	openAt, last   time.Time
	inFlight       int
	atOpen         int
	starts, ends   int
	peak           int
	area           float64 // judgment-seconds inside the window
	idle           float64 // seconds with nothing in flight
	// fullAt is when in-flight first reached concurrency; drainAt when the
	// feeder handed out its last item.
	full, drained   bool
	fullAt, drainAt time.Time
	areaAtFull      float64
	areaAtDrain     float64
	unmatchedEnds   int
	occ             Occupancy
}

// SamplerOption configures a Sampler.
type SamplerOption func(*Sampler)

// WithClock replaces time.Now (tests drive a fake clock).
func WithClock(now func() time.Time) SamplerOption { return func(s *Sampler) { s.now = now } }

// NewSampler returns a sampler for a pool of concurrency slots.
func NewSampler(concurrency int, opts ...SamplerOption) *Sampler {
	s := &Sampler{now: time.Now, concurrency: concurrency}
	for _, o := range opts {
		o(s)
	}
	return s
}

// advance integrates up to now. Callers hold mu.
func (s *Sampler) advance() {
	t := s.now()
	if s.opened && !s.closed {
		dt := t.Sub(s.last).Seconds()
		s.area += float64(s.inFlight) * dt
		if s.inFlight == 0 {
			s.idle += dt
		}
	}
	s.last = t
}

// Open starts the window; call it where the runner starts its wall clock.
func (s *Sampler) Open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opened {
		return
	}
	s.advance()
	s.opened, s.openAt, s.atOpen = true, s.last, s.inFlight
}

// Start marks a judgment taking a pool slot.
func (s *Sampler) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance()
	s.inFlight++
	if s.opened && !s.closed {
		s.starts++
		s.peak = max(s.peak, s.inFlight)
		if !s.full && !s.drained && s.concurrency > 0 && s.inFlight >= s.concurrency {
			s.full, s.fullAt, s.areaAtFull = true, s.last, s.area
		}
	}
}

// End marks a judgment's slot free again.
func (s *Sampler) End() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance()
	if s.inFlight == 0 {
		s.unmatchedEnds++
		return
	}
	s.inFlight--
	if s.opened && !s.closed {
		s.ends++
	}
}

// Drain marks the feeder handing out its last item: from here on a free slot
// is expected, not a stall.
func (s *Sampler) Drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drained || !s.opened || s.closed {
		return
	}
	s.advance()
	s.drained, s.drainAt, s.areaAtDrain = true, s.last, s.area
}

// Close ends the window (where the runner stops its wall clock) and returns
// what was measured. Later calls return the same Occupancy; events after
// Close are not counted.
func (s *Sampler) Close() Occupancy {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.occ
	}
	s.advance()
	s.closed = true
	o := Occupancy{
		Concurrency:     s.concurrency,
		WindowSeconds:   s.last.Sub(s.openAt).Seconds(),
		Starts:          s.starts,
		Ends:            s.ends,
		Events:          s.starts + s.ends,
		Peak:            s.peak,
		IdleSeconds:     s.idle,
		InFlightAtOpen:  s.atOpen,
		InFlightAtClose: s.inFlight,
		UnmatchedEnds:   s.unmatchedEnds,
		Drained:         s.drained,
	}
	if !s.opened {
		o.WindowSeconds = 0
	}
	if o.WindowSeconds > 0 {
		o.MeanInFlight = s.area / o.WindowSeconds
	}
	if s.full && s.drained && s.drainAt.After(s.fullAt) {
		o.SaturatedSeconds = s.drainAt.Sub(s.fullAt).Seconds()
		o.MeanInFlightSaturated = (s.areaAtDrain - s.areaAtFull) / o.SaturatedSeconds
	}
	s.occ = o
	return o
}

// Occupancy is what a Sampler measured over its window.
type Occupancy struct {
	Concurrency   int
	WindowSeconds float64
	// MeanInFlight is the time-weighted mean of judgments in flight.
	MeanInFlight float64
	Starts, Ends int
	Events       int
	Peak         int
	// IdleSeconds is time in the window with nothing in flight.
	IdleSeconds float64
	// SaturatedSeconds runs from the pool first filling to Drain;
	// MeanInFlightSaturated is the mean in flight over it (ideally
	// Concurrency). Zero when the pool never filled before Drain.
	SaturatedSeconds      float64
	MeanInFlightSaturated float64
	Drained               bool
	// InFlightAtOpen are judgments already running when the window opened;
	// InFlightAtClose still running when it closed; UnmatchedEnds are Ends
	// with nothing in flight (a runner bug).
	InFlightAtOpen, InFlightAtClose, UnmatchedEnds int
}

// Window is the runner's own account of the measured window.
type Window struct {
	// WallSeconds is the runner's wall clock for the window.
	WallSeconds float64
	// Judgments the runner timed, every outcome included (kept, failed,
	// discarded): every judgment that held a pool slot.
	Judgments int
	// MeanLatencySeconds over those judgments.
	MeanLatencySeconds float64
	// OpenLoop marks a window whose judgments arrived at a stated rate:
	// time with nothing in flight is the arrival process's (a sparse
	// rate), and a pool below its cap is a server keeping up, so neither
	// the idle share nor saturation is a runner fault there. L = λW holds
	// all the same.
	OpenLoop bool
	// W names the time MeanLatencySeconds is ("service", "response"),
	// recorded with the check.
	W string
}

// LittlesLaw checks the runner's throughput and latency against the sampler.
// OK is false, with one sentence per reason in Problems, when any figure is
// more than Tolerance off (see the package documentation for what each
// catches).
func LittlesLaw(occ Occupancy, w Window) receipts.LittlesLaw {
	out := receipts.LittlesLaw{
		W:             w.W,
		MeanInFlight:  occ.MeanInFlight,
		Samples:       occ.Events,
		Concurrency:   occ.Concurrency,
		WindowSeconds: occ.WindowSeconds,
	}
	fail := func(format string, args ...any) {
		out.Problems = append(out.Problems, fmt.Sprintf(format, args...))
	}
	if occ.WindowSeconds <= 0 || w.WallSeconds <= 0 || w.Judgments <= 0 {
		fail("nothing to check: window %.3gs, wall %.3gs, %d judgments", occ.WindowSeconds, w.WallSeconds, w.Judgments)
		return out
	}
	out.Predicted = float64(w.Judgments) / w.WallSeconds * w.MeanLatencySeconds
	out.RelError = relGap(occ.MeanInFlight, out.Predicted)
	out.IdleFraction = occ.IdleSeconds / occ.WindowSeconds
	if occ.MeanInFlightSaturated > 0 && occ.Concurrency > 0 {
		out.Saturation = ptr(occ.MeanInFlightSaturated / float64(occ.Concurrency))
	}

	if out.RelError > Tolerance {
		fail("mean in flight %.3f but throughput × mean latency is %.3f (%.1f%% apart): judgments held pool slots for time the latency clock does not see, or the figures cover other judgments or another window",
			occ.MeanInFlight, out.Predicted, 100*out.RelError)
	}
	if g := relGap(occ.WindowSeconds, w.WallSeconds); g > Tolerance {
		fail("the runner's wall clock (%.3fs) is not the sampled window (%.3fs, %.1f%% apart): the wall time includes something else (warmup, tokenizing, a /metrics read?)",
			w.WallSeconds, occ.WindowSeconds, 100*g)
	}
	if occ.Ends != w.Judgments {
		fail("the sampler saw %d judgments end, the runner timed %d: some judgments are missing from the figures", occ.Ends, w.Judgments)
	}
	if occ.InFlightAtOpen > 0 {
		fail("%d judgment(s) already in flight when the window opened: warmup leaking into the window", occ.InFlightAtOpen)
	}
	if occ.InFlightAtClose > 0 {
		fail("%d judgment(s) still in flight when the window closed: the clock stopped before the pool drained", occ.InFlightAtClose)
	}
	if occ.UnmatchedEnds > 0 {
		fail("%d End(s) with nothing in flight: the runner's Start/End calls do not pair", occ.UnmatchedEnds)
	}
	if w.OpenLoop {
		out.OK = len(out.Problems) == 0
		return out
	}
	if out.IdleFraction > Tolerance {
		fail("nothing in flight for %.1f%% of the window (%.3fs): time the window counts that no judgment accounts for",
			100*out.IdleFraction, occ.IdleSeconds)
	}
	if out.Saturation != nil && *out.Saturation < 1-Tolerance {
		fail("pool not full while work remained: %.2f of %d slots busy on average over %.3fs (stalled pool?)",
			occ.MeanInFlightSaturated, occ.Concurrency, occ.SaturatedSeconds)
	}
	if out.Saturation == nil && occ.Drained && occ.Starts > occ.Concurrency && occ.Concurrency > 0 {
		fail("the pool never had %d judgments in flight although %d started: stalled pool?", occ.Concurrency, occ.Starts)
	}
	out.OK = len(out.Problems) == 0
	return out
}

// relGap is |a−b| relative to the larger of the two (0 when both are 0).
func relGap(a, b float64) float64 {
	d := math.Max(math.Abs(a), math.Abs(b))
	if d == 0 {
		return 0
	}
	return math.Abs(a-b) / d
}

func ptr(v float64) *float64 { return &v }

// ErrLittlesLaw is a point whose L = λW does not hold (see Check).
var ErrLittlesLaw = errors.New("little's law does not hold")

// MinUnaccounted is the time per judgment or request outside the latency
// clock below which Check never fails a point, whatever the relative gap:
// on requests of a few milliseconds (a fake server, a time-scaled twin)
// one descheduled goroutine on a loaded machine is 5%. Against a real
// server (judgments of 100 ms and more, streams of seconds) a harness
// fault Little's law exists to catch is well above it.
const MinUnaccounted = 10 * time.Millisecond

// Check is the one rule by which a Little's-law check fails its point,
// for vetbench run, vetbench tokens and go test -bench alike: the mean in
// flight and throughput × mean latency more than Tolerance (5%) apart,
// and that gap worth more than MinUnaccounted per item (L − λW over λ:
// the mean time an item held its slot that its latency does not count).
// Below either the check passes; the pool-health figures beside it (the
// wall clock against the window, idle share, saturation) stay warnings in
// the receipt, as they leave L = λW intact. what names the check
// ("repeat 2", "response time"); a nil check passes.
func Check(what string, ll *receipts.LittlesLaw) error {
	if ll == nil || !(ll.RelError > Tolerance) {
		return nil
	}
	per := Unaccounted(ll)
	if per <= MinUnaccounted {
		return nil
	}
	return fmt.Errorf("%w (%s): mean in flight %.3f, throughput × mean latency %.3f: %.1f%% apart (over the %.0f%% tolerance), %s per item unaccounted for (over %s); the figures do not describe the same items or window",
		ErrLittlesLaw, what, ll.MeanInFlight, ll.Predicted, 100*ll.RelError, 100*Tolerance, per.Round(time.Microsecond), MinUnaccounted)
}

// Unaccounted is the mean time per item that L and λW disagree by:
// |L − λW| × window ÷ items (a clean window has as many starts as ends,
// Samples counts both).
func Unaccounted(ll *receipts.LittlesLaw) time.Duration {
	items := max(ll.Samples/2, 1)
	sec := math.Abs(ll.MeanInFlight-ll.Predicted) * ll.WindowSeconds / float64(items)
	return time.Duration(sec * float64(time.Second))
}
