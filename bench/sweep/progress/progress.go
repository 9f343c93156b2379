// Package progress renders how far a run has got (bench.Progress) on a
// console: on a terminal one line per point, redrawn in place (point k of
// N of the run, judgments done of the set, judgments/s so far, the point's
// and the run's ETA, failures so far); elsewhere a
// plain line every so often, so that a log shows a long point is alive.
// It is meant for stderr, never for where benchmark lines go, and its
// plain lines start with "[progress]", which no benchmark reader takes for
// a result or a configuration line.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/vetbench/vetbench/bench"
)

// Defaults.
const (
	// DefaultInterval is how often a plain line is written while a point runs.
	DefaultInterval = 10 * time.Second
	// DefaultRedraw is the least time between two redraws on a terminal.
	DefaultRedraw = 100 * time.Millisecond
)

// Terminal escapes. The line is drawn from a saved cursor position
// (DECSC/DECRC) with line wrap off (DECAWM), so it works after text
// already on the line (go test prints a benchmark's name before running
// it) and a line too long for the terminal is cut, not wrapped.
const (
	save     = "\x1b7"
	restore  = "\x1b8"
	noWrap   = "\x1b[?7l"
	wrap     = "\x1b[?7h"
	eraseEOL = "\x1b[K"
)

// Renderer writes progress to a console. Observe is a
// bench.Session.OnProgress; it is cheap between draws and safe for
// concurrent use.
type Renderer struct {
	w        io.Writer
	tty      bool
	now      func() time.Time
	interval time.Duration
	redraw   time.Duration

	mu        sync.Mutex
	label     string
	timeScale float64
	// The run: points planned in all (passes and sides included), the
	// point in flight (1-based) and when the first began (wall clock).
	points, point int
	runStart      time.Time
	drawn         bool      // a line is on the terminal, the cursor saved before it
	last          time.Time // when the last line was written
}

// Option configures a Renderer.
type Option func(*Renderer)

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option { return func(r *Renderer) { r.now = now } }

// WithInterval sets how often a plain line is written (DefaultInterval).
func WithInterval(d time.Duration) Option { return func(r *Renderer) { r.interval = d } }

// New renders to w: redrawn in place when tty, plain lines otherwise.
func New(w io.Writer, tty bool, opts ...Option) *Renderer {
	r := &Renderer{w: w, tty: tty, now: time.Now, interval: DefaultInterval, redraw: DefaultRedraw, timeScale: 1}
	for _, o := range opts {
		o(r)
	}
	return r
}

// ForFile renders to f, redrawn in place when f is a terminal.
func ForFile(f *os.File, opts ...Option) *Renderer {
	return New(f, term.IsTerminal(int(f.Fd())), opts...)
}

// SetLabel puts label (e.g. "baseline 3/10") before the point on every line.
func (r *Renderer) SetLabel(label string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.label = label
}

// SetTimeScale says the target is a twin running scale times faster than
// real time: judgments/s are shown in model time (divided by scale) and
// labelled so; the ETA stays wall-clock time.
func (r *Renderer) SetTimeScale(scale float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timeScale = scale
}

// Plan says the run measures n points in all (every pass, every side of
// an A/B): lines then show "point k of n" and an ETA for the whole run.
func (r *Renderer) Plan(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.points, r.point = n, 0
}

// Next says the next point of the plan begins.
func (r *Renderer) Next() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.point == 0 {
		r.runStart = r.now()
	}
	r.point++
}

// line is the progress line with the run's part around the point's.
func (r *Renderer) line(p bench.Progress) string {
	text := Text(r.label, p, r.timeScale)
	if r.points <= 0 || r.point <= 0 {
		return text
	}
	k := min(r.point, r.points)
	head := fmt.Sprintf("point %d of %d  ", k, r.points)
	if r.label != "" {
		head = r.label + "  " + head
		text = strings.TrimPrefix(text, r.label+"  ")
	}
	return head + text + "  " + RunETA(k, r.points, p, r.now().Sub(r.runStart))
}

// RunETA is the whole run's remaining wall-clock time, from how long its
// points so far took: point k of n, p how far the k-th has got.
func RunETA(k, n int, p bench.Progress, elapsed time.Duration) string {
	done := float64(k - 1)
	if p.Total > 0 {
		done += float64(p.Done) / float64(p.Total)
	}
	if done <= 0 || elapsed <= 0 {
		return "run ETA ?"
	}
	left := time.Duration(float64(elapsed) / done * (float64(n) - done))
	return "run ETA " + Duration(left) + " wall"
}

// Observe shows p. On a terminal the first report of a point draws its
// line, later ones redraw it at most every DefaultRedraw, and the final one
// erases it, leaving the cursor where it was. Elsewhere a line is written
// each interval a point runs, none for a point shorter than that.
func (r *Renderer) Observe(p bench.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	switch {
	case p.Final:
		r.clear()
	case r.tty:
		if r.drawn && now.Sub(r.last) < r.redraw && p.Done < p.Total {
			return
		}
		head := restore
		if !r.drawn {
			head = save
		}
		r.drawn = true
		r.last = now
		io.WriteString(r.w, head+noWrap+r.line(p)+eraseEOL+wrap)
	case p.Done == 0:
		r.last = now // the window opened: the first line is an interval away
	case now.Sub(r.last) >= r.interval:
		r.last = now
		io.WriteString(r.w, "[progress] "+r.line(p)+"\n")
	}
}

// Clear erases a line on the terminal, before other output (an interrupt).
func (r *Renderer) Clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clear()
}

func (r *Renderer) clear() {
	if r.drawn {
		io.WriteString(r.w, restore+eraseEOL)
		r.drawn = false
	}
}

// Text is the point's progress: the label, the point (set, level, arm), the
// judgments done of the set, judgments/s so far, the ETA and the failures.
// On a time-scaled twin the rate is model time and the ETA wall-clock
// time, each labelled so.
//
//	baseline 3/10  checks c=16 cold  63/140 45%  52.1 judgments/s  ETA 1.5s  0 failed
func Text(label string, p bench.Progress, timeScale float64) string {
	var b strings.Builder
	if label != "" {
		b.WriteString(label + "  ")
	}
	arm := string(p.Arm)
	if arm == "" {
		arm = "cold"
	}
	if p.Rate > 0 {
		fmt.Fprintf(&b, "%s rate=%g/s", p.Set, p.Rate)
		if p.Concurrency > 0 {
			fmt.Fprintf(&b, " max=%d", p.Concurrency)
		}
		fmt.Fprintf(&b, " %s  %d/%d", arm, p.Done, p.Total)
	} else {
		fmt.Fprintf(&b, "%s c=%d %s  %d/%d", p.Set, p.Concurrency, arm, p.Done, p.Total)
	}
	if p.Total > 0 {
		fmt.Fprintf(&b, " %d%%", 100*p.Done/p.Total)
	}
	secs := p.Elapsed.Seconds()
	if p.Done > 0 && secs > 0 {
		rate := float64(p.Done) / secs
		if timeScale > 0 && timeScale != 1 {
			fmt.Fprintf(&b, "  %.3g judgments/s (model time, twin ×%g)", rate/timeScale, timeScale)
		} else {
			fmt.Fprintf(&b, "  %.3g judgments/s", rate)
		}
		eta := time.Duration(float64(p.Total-p.Done) / rate * float64(time.Second))
		fmt.Fprintf(&b, "  ETA %s", Duration(eta))
		if timeScale > 0 && timeScale != 1 {
			b.WriteString(" wall")
		}
	} else {
		b.WriteString("  ETA ?")
	}
	fmt.Fprintf(&b, "  %d failed", p.Failed)
	return b.String()
}

// Duration is d, short: 0.4s, 12.5s, 3m07s, 1h05m.
func Duration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
