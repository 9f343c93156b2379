package grid

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/receipts/matrix"
)

// Gauges is one reading of the server's scheduler gauges; OK is false when
// the reading failed or the server has no such metrics.
type Gauges struct {
	At               time.Time
	Running, Waiting float64
	OK               bool
	snap             scrape.Snapshot // the reading they came from
}

// Readiness decides when a sustained-decode cell may start its window:
// nothing waiting, at least C requests running (from /metrics), and every
// one of the C client streams has received a token — all of it holding
// for Hold without a break. Without metrics only the client condition is
// used.
type Readiness struct {
	C    int
	Hold time.Duration
	// ShortOutput is the peer's rule for max_tokens ≤ ShortOutputTokens:
	// streams that short end and restart between readings, so C
	// completed requests stand in for C running (method.md §2).
	ShortOutput bool

	since time.Time
	held  bool
}

// Observe takes a reading at g.At with streaming client streams that have
// received a token. It reports whether the cell is ready and, when not,
// the condition that is missing.
func (r *Readiness) Observe(g Gauges, streaming int) (bool, string) {
	return r.ObserveDone(g, streaming, 0)
}

// ShortOutputTokens is the longest max_tokens the peer's completed-samples
// rule applies to.
const ShortOutputTokens = 512

// ObserveDone is Observe with the requests of the cell completed so far
// (the ShortOutput rule).
func (r *Readiness) ObserveDone(g Gauges, streaming, completed int) (bool, string) {
	why := ""
	switch {
	case streaming < r.C:
		why = fmt.Sprintf("%d of %d streams have tokens", streaming, r.C)
	case g.OK && g.Waiting > 0:
		why = fmt.Sprintf("%s requests waiting", num(g.Waiting))
	case g.OK && g.Running < float64(r.C) && !(r.ShortOutput && completed >= r.C):
		why = fmt.Sprintf("%s of %d requests running", num(g.Running), r.C)
		if r.ShortOutput {
			why += fmt.Sprintf(" and %d of %d completed", completed, r.C)
		}
	}
	if why != "" {
		r.held = false
		return false, why
	}
	if !r.held {
		r.held, r.since = true, g.At
	}
	if g.At.Sub(r.since) < r.Hold {
		return false, fmt.Sprintf("ready for %s of %s", g.At.Sub(r.since).Round(time.Millisecond), r.Hold)
	}
	return true, ""
}

// Occupancy summarises the gauge readings inside a window.
type Occupancy struct {
	Samples     int
	MeanRunning float64
	MaxRunning  float64
	MaxWaiting  float64
	// Queued counts readings with a request waiting.
	Queued int
}

// Occupy summarises readings; those that failed are left out.
func Occupy(gs []Gauges) Occupancy {
	var o Occupancy
	sum := 0.0
	for _, g := range gs {
		if !g.OK {
			continue
		}
		o.Samples++
		sum += g.Running
		o.MaxRunning = max(o.MaxRunning, g.Running)
		o.MaxWaiting = max(o.MaxWaiting, g.Waiting)
		if g.Waiting > 0 {
			o.Queued++
		}
	}
	if o.Samples > 0 {
		o.MeanRunning = sum / float64(o.Samples)
	}
	return o
}

// Underfilled is the share of C below which a cell's average running
// requests mark it Requests queued.
const Underfilled = 0.95

// Outcome is what a cell saw, for Classify.
type Outcome struct {
	C int
	// Loop is the confirmed loop that cancelled the cell, if any.
	Loop error
	// Failures are the requests that failed inside the cell, one line each.
	Failures []string
	// NotReady says why the cell's warm-up timed out ("" when it was ready).
	NotReady string
	// Occupancy over the window; Samples 0 when the server has no metrics.
	Occupancy Occupancy
}

// Classify gives a cell's status and why, worst first: Looped, Failed,
// Requests queued (the warm-up timed out, a request waited, or at C > 1
// fewer than 0.95·C ran on average or C in no reading), Valid.
func Classify(o Outcome) (matrix.Status, string) {
	switch {
	case o.Loop != nil:
		return matrix.Looped, o.Loop.Error()
	case len(o.Failures) > 0:
		msg := fmt.Sprintf("%d request(s) failed: %s", len(o.Failures), o.Failures[0])
		if len(o.Failures) > 1 {
			msg += " (and others)"
		}
		return matrix.Failed, msg
	}
	occ := o.Occupancy
	var why []string
	if o.NotReady != "" {
		why = append(why, "never ready: "+o.NotReady)
	}
	if occ.Queued > 0 {
		why = append(why, fmt.Sprintf("requests waited in %d of %d readings (up to %s)", occ.Queued, occ.Samples, num(occ.MaxWaiting)))
	}
	// At C = 1 the gap between one stream and the next is all a reading
	// can catch: the peer exempts it, so does this. Above it the peer
	// flags a cell that never had all C running in any reading, as well
	// as one below 0.95·C on average (capacity_limited, method.md §4).
	if o.C > 1 && occ.Samples > 0 && occ.MeanRunning < Underfilled*float64(o.C) {
		why = append(why, fmt.Sprintf("%.2f of %d requests running on average (below %.2f·C)", occ.MeanRunning, o.C, Underfilled))
	} else if o.C > 1 && occ.Samples > 0 && occ.MaxRunning < float64(o.C) {
		why = append(why, fmt.Sprintf("never all %d requests running: at most %s in %d readings", o.C, num(occ.MaxRunning), occ.Samples))
	}
	if len(why) > 0 {
		return matrix.RequestsQueued, strings.Join(why, "; ")
	}
	return matrix.Valid, ""
}

// KVCapacity is the server's KV cache in tokens, num_gpu_blocks ×
// block_size of vllm:cache_config_info labels; false when they are
// missing or differ between engines.
func KVCapacity(cacheConfig map[string]string) (int, bool) {
	blocks, err1 := strconv.Atoi(cacheConfig["num_gpu_blocks"])
	size, err2 := strconv.Atoi(cacheConfig["block_size"])
	if err1 != nil || err2 != nil || blocks <= 0 || size <= 0 {
		return 0, false
	}
	return blocks * size, true
}

// SkipReason says why a cell is not run, "" when it is: C × (context +
// output) over the KV capacity (the peer's conservative rule: every stream
// priced as if it shared nothing), or a prompt plus output over
// max_model_len. A capacity or length of 0 is unknown and skips nothing.
func SkipReason(c, context, output, kvTokens, maxModelLen int) string {
	if maxModelLen > 0 && context+output > maxModelLen {
		return fmt.Sprintf("context %d + output %d exceeds max_model_len %d", context, output, maxModelLen)
	}
	if need := c * (context + output); kvTokens > 0 && need > kvTokens {
		return fmt.Sprintf("C × (context + output) = %d × (%d + %d) = %d tokens exceeds the KV cache of %d tokens (vllm:cache_config_info num_gpu_blocks × block_size)",
			c, context, output, need, kvTokens)
	}
	return ""
}

// CellSkipReason is SkipReason for a matrix cell, whose C streams send
// one prompt that the scout has just cached: with the server's prefix
// cache on (sharedPrefix: cache_config_info enable_prefix_caching) vLLM
// holds the prompt's blocks once, referenced by every stream, and each
// stream adds only its output, so the cell needs context + C × output
// tokens (method.md §1: "KV demand is about ctx + C×output"); without it,
// each stream holds its own copy, C × (context + output), the peer's
// rule. The peer applies its conservative rule to the capacity its server
// reports; the published DeepSeek-V4-Flash run ran every cell, up to 1M ×
// 128 streams (134M tokens by that rule), so the capacity it read was at
// least that, while a count of the bytes a token holds gives 19M: the
// rule a cell really meets is the shared one.
func CellSkipReason(c, context, output, kvTokens, maxModelLen int, sharedPrefix bool) string {
	if !sharedPrefix {
		return SkipReason(c, context, output, kvTokens, maxModelLen)
	}
	if maxModelLen > 0 && context+output > maxModelLen {
		return fmt.Sprintf("context %d + output %d exceeds max_model_len %d", context, output, maxModelLen)
	}
	if need := context + c*output; kvTokens > 0 && need > kvTokens {
		return fmt.Sprintf("context + C × output = %d + %d × %d = %d tokens (the prompt's cached blocks shared by the streams) exceeds the KV cache of %d tokens (vllm:cache_config_info num_gpu_blocks × block_size)",
			context, c, output, need, kvTokens)
	}
	return ""
}

// ReadyTimeout is the peer's warm-up bound by context: 60 s up to 32K,
// 120 s up to 64K, 180 s above.
func ReadyTimeout(context int) time.Duration {
	switch {
	case context <= 32<<10:
		return 60 * time.Second
	case context <= 64<<10:
		return 120 * time.Second
	}
	return 180 * time.Second
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
