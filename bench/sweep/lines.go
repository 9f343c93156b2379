package sweep

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// PointLine is the line a console prints per point: set, level and arm, speed, the
// failed and discarded judgments (failures by class), answers and the
// self-checks. A time-scaled twin's figures are converted to model time
// (rates ÷ scale, seconds × scale) and labelled so.
func PointLine(label string, r *receipts.Receipt, path string, scale Scale) string {
	t := r.Throughput
	var b strings.Builder
	arm := receipts.ArmCold
	if r.Server != nil && r.Server.CacheReset != nil && r.Server.CacheReset.Arm != "" {
		arm = r.Server.CacheReset.Arm
	}
	if label != "" {
		b.WriteString(label + " ")
	}
	// An open loop's point is its rate (and cap), as its receipt's name
	// says; c= would read as a closed loop at that level.
	point := fmt.Sprintf("c=%-3d", t.Concurrency)
	open := r.Pins.Load != nil && r.Pins.Load.Mode == receipts.LoadOpen
	if open {
		point = "rate=" + strconv.FormatFloat(scale.Rate(r.Pins.Load.Rate), 'g', 4, 64) + "/s"
		if r.Pins.Load.MaxConcurrency > 0 {
			point += fmt.Sprintf(" max=%d", r.Pins.Load.MaxConcurrency)
		}
	}
	fmt.Fprintf(&b, "%-10s %s %-4s %7.2f judgments/s  p50 %.3fs  p95 %.3fs  n=%d  failed %d  discarded %d", r.Set, point, arm,
		scale.Rate(t.JudgmentsPerSecond), scale.Seconds(t.Latency.P50), scale.Seconds(t.Latency.P95), t.Judgments, t.Failed, t.Discarded)
	if t.Failed > 0 {
		fmt.Fprintf(&b, " (%s)", bench.FailureClasses(t))
	}
	if open && t.ClientQueue != nil {
		fmt.Fprintf(&b, "  open loop, %s arrivals: client queue p95 %.3fs", r.Pins.Load.Process, scale.Seconds(t.ClientQueue.P95))
	}
	if g := t.SLO; g != nil {
		fmt.Fprintf(&b, "  goodput %.3f within %ss", g.Goodput, strconv.FormatFloat(g.LatencySeconds, 'g', 4, 64))
	}
	if scale.Scaled() {
		fmt.Fprintf(&b, "  [%s; wall clock %.2f judgments/s]", scale, t.JudgmentsPerSecond)
	}
	if s := r.Server; s != nil && s.PrefixCacheHitRate != nil {
		fmt.Fprintf(&b, "  prefix-hit %.3f", *s.PrefixCacheHitRate)
	}
	if q := r.Quality; q != nil {
		fmt.Fprintf(&b, "  accuracy %s", strconv.FormatFloat(q.Accuracy, 'f', 3, 64))
	}
	if o := r.OffFormat; o != nil {
		fmt.Fprintf(&b, "  off-format %d", o.Total)
	}
	if r.Stopped != nil {
		fmt.Fprintf(&b, "  STOPPED at %s (%s)", r.Stopped.Item, r.Stopped.Reason)
	}
	if o := r.OffFormat; o != nil && o.Total > 0 {
		fmt.Fprintf(&b, "\n    off-format answers (sampled token no candidate): %s", o)
	}
	if s := r.Server; s != nil && len(s.Engines) > 1 {
		b.WriteString("\n    engines:")
		for _, e := range slices.Sorted(maps.Keys(s.Engines)) {
			info := s.Engines[e]
			fmt.Fprintf(&b, "  %s prefix-hit %s (%.0f requests)", e, ratio(info.PrefixCacheHitRate), info.RequestSuccess)
		}
	}
	for _, e := range r.Endpoints {
		b.WriteString("\n    " + endpointLine(e, scale))
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "\n    warning: %s", w)
	}
	fmt.Fprintf(&b, "\n    receipt: %s", path)
	return b.String()
}

// endpointLine is one endpoint's share of a point spread over several.
func endpointLine(e receipts.EndpointFigures, scale Scale) string {
	t := e.Throughput
	line := fmt.Sprintf("endpoint %s: %d judgments  %.2f judgments/s  p50 %.3fs", e.Endpoint, t.Judgments, scale.Rate(t.JudgmentsPerSecond), scale.Seconds(t.Latency.P50))
	if s := e.Server; s != nil {
		line += "  prefix-hit " + ratio(s.PrefixCacheHitRate)
		if len(s.Engines) > 1 {
			line += fmt.Sprintf(" (%d engines)", len(s.Engines))
		}
	}
	if rc := e.Reconciliation; rc != nil && !rc.OK {
		line += "  reconciliation: " + rc.Verdict
	}
	return line
}

func ratio(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 3, 64)
}

// TokenLine is the line a console prints per token point: aggregate and
// per-request tok/s, TPOT, TTFT, verified tokens, and what went wrong; a
// time-scaled twin's in model time, labelled; then the receipt's warnings,
// one per line, as PointLine prints a judgments point's.
func TokenLine(r *tokens.Receipt, scale Scale) string {
	s := r.Summary
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s c=%-3d %9.1f tok/s  %7.1f tok/s/request", r.Point.Workload, r.Point.Concurrency,
		scale.Rate(s.AggregateOutputTokS), scale.Rate(s.PerRequestOutputTokS))
	if s.MeanBatchMsPerToken > 0 {
		fmt.Fprintf(&b, "  batch %6.2f ms/token", scale.Seconds(s.MeanBatchMsPerToken))
	}
	if v := s.Serve; v != nil {
		// vllm bench serve's figures, by its definitions.
		fmt.Fprintf(&b, "  | vllm: median TTFT %.1f ms, TPOT %.2f ms, ITL %.2f ms (p99 %.2f)",
			scale.Seconds(v.MedianTTFTMs), scale.Seconds(v.MedianTPOTMs), scale.Seconds(v.MedianITLMs), scale.Seconds(v.P99ITLMs))
	}
	asked := r.Point.OutputTokens * r.Point.Requests() * len(r.Runs)
	fmt.Fprintf(&b, "  verified %d/%d tokens", s.TotalVerifiedOutputTokens, asked)
	if n := s.Failed + s.Short; n > 0 {
		fmt.Fprintf(&b, "  FAILED %d (%d short)", n, s.Short)
	}
	if st := r.Stopped; st != nil {
		fmt.Fprintf(&b, "  STOPPED after %d of %d repeats (%s)", st.Runs, r.Point.Repeats, st.Reason)
	}
	if scale.Scaled() {
		fmt.Fprintf(&b, "  [%s; wall clock %.1f tok/s]", scale, s.AggregateOutputTokS)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "\n    warning: %s", w)
	}
	return b.String()
}
