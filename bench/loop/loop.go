// Package loop detects a model that repeats itself: an exact periodic tail
// in generated text, as llm-inference-bench's StreamingLoopDetector finds
// it (method.md §5). It is a bounded exact-text heuristic, not a semantic
// verdict: it sees a text that ends in the same cycle of characters over
// and over, nothing subtler.
//
// Characters are Unicode code points. A Detector is fed the stream's text
// fragments as they arrive; it re-blocks them into CheckChars pieces, so
// how the text was split never changes what it finds.
package loop

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"unicode"
	"unicode/utf8"
)

// The peer's constants (LOOP_*), in characters.
const (
	// CheckChars: a check runs each time the text grows by this much.
	CheckChars = 256
	// MinChars: no check before the text is this long.
	MinChars = 1024
	// AnchorChars: the tail searched for earlier in the text.
	AnchorChars = 64
	// MaxOccurrences: earlier anchor occurrences tried per check.
	MaxOccurrences = 64
	// MaxPeriodChars: the longest cycle looked for.
	MaxPeriodChars = 32768
	// WindowChars: how much of the text a check sees.
	WindowChars = 131072
	// ConfirmedChars and ConfirmedCycles: a periodic tail at least this
	// long and with at least this many whole cycles is a confirmed loop.
	ConfirmedChars  = 4096
	ConfirmedCycles = 4
)

// Excerpt lengths kept in a Finding.
const (
	cycleExcerpt = 512
	tailExcerpt  = 1024
)

// Status is what a check found.
type Status int

// Statuses, in order of severity.
const (
	Clean Status = iota
	// Suspected: the text ends in an exact periodic tail, too short to be
	// sure.
	Suspected
	// Confirmed: ≥ ConfirmedCycles cycles and ≥ ConfirmedChars characters.
	Confirmed
)

func (s Status) String() string {
	switch s {
	case Clean:
		return "clean"
	case Suspected:
		return "suspected"
	case Confirmed:
		return "confirmed"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Finding describes a periodic tail. Character offsets count from the
// start of the text the detector was fed.
type Finding struct {
	Status         Status
	PeriodChars    int
	CompleteCycles int
	// RepeatedChars is the length of the periodic tail, its first cycle
	// included.
	RepeatedChars int
	// StartChar is where the periodic tail starts; DetectedAtChar is how
	// much text had been seen when it was found.
	StartChar      int
	DetectedAtChar int
	// PeriodSHA256 is the hex sha256 of one cycle (UTF-8), so findings of
	// the same loop match across requests.
	PeriodSHA256 string
	// Cycle is one cycle, at most 512 characters; Tail the last 1024
	// characters seen.
	Cycle string
	Tail  string
}

// ErrLoop is matched (errors.Is) by every *Error.
var ErrLoop = errors.New("loop detected")

// Error is a confirmed loop, for an Observer to stop a stream with.
type Error struct {
	// Channel names the text that looped ("content", "reasoning"), when known.
	Channel string
	Finding Finding
	// Requests > 1: the loop was confirmed across that many requests of
	// one prompt (see Repeats); Finding is the last one, Cycles and Chars
	// the totals.
	Requests, Cycles, Chars int
}

func (e *Error) Error() string {
	ch := ""
	if e.Channel != "" {
		ch = " in " + e.Channel
	}
	f := e.Finding
	if e.Requests > 1 {
		return fmt.Sprintf("loop detected%s: the same %d-character cycle ends %d requests of one prompt, %d cycles and %d characters in all (each too short to confirm alone; the last: %d cycles from character %d)",
			ch, f.PeriodChars, e.Requests, e.Cycles, e.Chars, f.CompleteCycles, f.StartChar)
	}
	return fmt.Sprintf("loop detected%s: a %d-character cycle repeated %d times (%d characters from character %d)",
		ch, f.PeriodChars, f.CompleteCycles, f.RepeatedChars, f.StartChar)
}

// Is makes errors.Is(err, ErrLoop) true.
func (e *Error) Is(target error) bool { return target == ErrLoop }

// Check looks for an exact periodic tail in the whole of text (its last
// WindowChars characters), once.
func Check(text string) Finding {
	w := []rune(text)
	return check(w[len(w)-min(len(w), WindowChars):], len(w))
}

// check runs one check on w, the window ending at absolute character total.
func check(w []rune, total int) Finding {
	n := len(w)
	if n < MinChars {
		return Finding{}
	}
	anchor := w[n-AnchorChars:]
	// Earlier occurrences of the anchor, nearest first: position p gives
	// the period (n - AnchorChars) - p.
	lowest := max(0, n-AnchorChars-MaxPeriodChars)
	tried := 0
	for p := n - AnchorChars - 1; p >= lowest && tried < MaxOccurrences; p-- {
		if w[p] != anchor[0] || !slices.Equal(w[p:p+AnchorChars], anchor) {
			continue
		}
		tried++
		period := n - AnchorChars - p
		need := max(MinChars, 3*period)
		if need > n {
			continue // not enough text to show three cycles
		}
		cycle := w[n-period:]
		if blank(cycle) {
			continue
		}
		if !periodic(w, period, need) {
			continue
		}
		// Periodicity of a suffix holds for every shorter suffix, so the
		// longest one is a binary search away.
		lo, hi := need, n
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if periodic(w, period, mid) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		f := Finding{
			Status:         Suspected,
			PeriodChars:    period,
			CompleteCycles: lo / period,
			RepeatedChars:  lo,
			StartChar:      total - lo,
			DetectedAtChar: total,
			Cycle:          string(cycle[:min(period, cycleExcerpt)]),
			Tail:           string(w[n-min(n, tailExcerpt):]),
		}
		sum := sha256.Sum256([]byte(string(cycle)))
		f.PeriodSHA256 = hex.EncodeToString(sum[:])
		if f.CompleteCycles >= ConfirmedCycles && f.RepeatedChars >= ConfirmedChars {
			f.Status = Confirmed
		}
		return f
	}
	return Finding{}
}

// periodic reports whether the last l characters of w repeat with period p.
func periodic(w []rune, p, l int) bool {
	n := len(w)
	return slices.Equal(w[n-l:n-p], w[n-l+p:])
}

func blank(rs []rune) bool {
	for _, r := range rs {
		if !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// Detector checks one channel of one request as its text streams in. The
// zero value is ready to use.
type Detector struct {
	buf     []rune
	total   int    // characters taken in
	checked int    // total at the last check
	partial []byte // an incomplete UTF-8 sequence waiting for its rest
	found   Finding
}

// Write takes the next fragment of text. It runs a check at every
// CheckChars boundary the fragment crosses, on the text up to that
// boundary, and stops checking once a loop is confirmed.
func (d *Detector) Write(s string) {
	if d.found.Status == Confirmed {
		return
	}
	b := []byte(s)
	if len(d.partial) > 0 {
		b = append(d.partial, b...)
		d.partial = nil
	}
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 && !utf8.FullRune(b) {
			d.partial = slices.Clone(b) // wait for the rest of the character
			return
		}
		b = b[size:]
		d.buf = append(d.buf, r)
		d.total++
		if d.total%CheckChars == 0 {
			d.run()
			if d.found.Status == Confirmed {
				return
			}
		}
	}
	// Keep the window bounded; trim rarely so appends stay cheap.
	if len(d.buf) > 2*WindowChars {
		d.buf = slices.Clone(d.buf[len(d.buf)-WindowChars:])
	}
}

// Close checks the text that arrived after the last CheckChars boundary
// (an incomplete trailing character counts as one U+FFFD) and returns the
// most severe finding.
func (d *Detector) Close() Finding {
	if len(d.partial) > 0 && d.found.Status != Confirmed {
		d.partial = nil
		d.buf = append(d.buf, utf8.RuneError)
		d.total++
	}
	if d.total != d.checked && d.found.Status != Confirmed {
		d.run()
	}
	return d.found
}

func (d *Detector) run() {
	d.checked = d.total
	w := d.buf[len(d.buf)-min(len(d.buf), WindowChars):]
	if f := check(w, d.total); f.Status >= d.found.Status && f.Status != Clean {
		d.found = f
	}
}

// Status is the most severe status found so far.
func (d *Detector) Status() Status { return d.found.Status }

// Finding is the most severe finding so far (the latest of equal severity).
func (d *Detector) Finding() Finding { return d.found }

// Chars is how many characters the detector has taken in.
func (d *Detector) Chars() int { return d.total }

// Pair holds one detector per channel of a request: generated content and
// reasoning are checked apart, as the peer does.
type Pair struct {
	Content   Detector
	Reasoning Detector
}

// Write takes one chunk's text per channel and returns an *Error once
// either channel's loop is confirmed (an Observer can return it to stop
// the stream).
func (p *Pair) Write(content, reasoning string) error {
	if content != "" {
		p.Content.Write(content)
	}
	if reasoning != "" {
		p.Reasoning.Write(reasoning)
	}
	return p.Err()
}

// Err is an *Error for the first confirmed channel, nil when none is.
func (p *Pair) Err() error {
	switch {
	case p.Content.Status() == Confirmed:
		return &Error{Channel: "content", Finding: p.Content.Finding()}
	case p.Reasoning.Status() == Confirmed:
		return &Error{Channel: "reasoning", Finding: p.Reasoning.Finding()}
	}
	return nil
}

// Close closes both detectors and returns their findings.
func (p *Pair) Close() (content, reasoning Finding) {
	return p.Content.Close(), p.Reasoning.Close()
}

// Repeats confirms a loop across requests that send one prompt, as the
// streams of a speed-matrix cell do: a request too short to hold
// ConfirmedChars of a loop (max_tokens 256 carries about 1,000
// characters) can still end in an exact periodic tail of three cycles or
// more — Suspected, since the peer's detector resets per request and
// never confirms it. When Suspected findings with the same cycle
// (PeriodSHA256) on the same channel add up to ConfirmedCycles cycles and
// ConfirmedChars characters, the loop is confirmed. Identical outputs that
// do not loop within themselves never add up: each request must end in
// the periodic tail on its own. The zero value is ready to use; it is not
// safe for concurrent use.
type Repeats struct {
	seen map[[2]string]*Error
}

// Add takes a request's closing finding on channel and returns an *Error
// once the cycle is confirmed (a Confirmed finding is one at once).
func (r *Repeats) Add(channel string, f Finding) error {
	switch f.Status {
	case Clean:
		return nil
	case Confirmed:
		return &Error{Channel: channel, Finding: f, Requests: 1, Cycles: f.CompleteCycles, Chars: f.RepeatedChars}
	}
	if r.seen == nil {
		r.seen = map[[2]string]*Error{}
	}
	k := [2]string{channel, f.PeriodSHA256}
	e := r.seen[k]
	if e == nil {
		e = &Error{Channel: channel}
		r.seen[k] = e
	}
	e.Finding = f
	e.Requests++
	e.Cycles += f.CompleteCycles
	e.Chars += f.RepeatedChars
	if e.Cycles >= ConfirmedCycles && e.Chars >= ConfirmedChars && e.Requests > 1 {
		return e
	}
	return nil
}

// Close closes both detectors and adds their findings to r: the loop a
// finished request confirms, alone or with the requests before it.
func (r *Repeats) Close(p *Pair) error {
	content, reasoning := p.Close()
	if err := r.Add("content", content); err != nil {
		return err
	}
	return r.Add("reasoning", reasoning)
}
