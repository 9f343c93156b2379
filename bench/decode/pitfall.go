package decode

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/vetbench/vetbench/receipts/tokens"
)

// Inflation is one level of the cache-pitfall ladder: the same point
// measured with prompts that repeat from point to point (a ladder on a
// server with prefix caching on, as seeded datasets do it) and with
// prompts of their own.
type Inflation struct {
	Concurrency    int
	Shared, Unique *tokens.Receipt
	// Rel is shared ÷ unique aggregate tok/s − 1: how much the warm
	// ladder overstates throughput (0 when the workload gives the cache
	// nothing to save, a fact about the workload, not the cache).
	Rel float64
	// TTFTRel is the same for TTFT p50 (negative: the cache hid prefill).
	TTFTRel float64
}

// CachePitfall measures base at each level twice: with shared (a runner
// made WithSharedPrompts) and with unique prompts, shared first so that
// the unique ladder cannot warm it. The receipts say which is which
// (identity.cache_isolation).
func CachePitfall(ctx context.Context, shared, unique *Runner, base Point, levels []int) ([]Inflation, error) {
	if shared.prompts.Isolation() != tokens.CacheSharedPrompts || unique.prompts.Isolation() != tokens.CacheUniquePrompts {
		return nil, fmt.Errorf("cache pitfall: want a shared-prompt runner and a unique-prompt runner")
	}
	var out []Inflation
	for _, c := range levels {
		p := base
		p.Concurrency = c
		sr, err := shared.Measure(ctx, p)
		if err != nil {
			return out, fmt.Errorf("shared prompts, c=%d: %w", c, err)
		}
		ur, err := unique.Measure(ctx, p)
		if err != nil {
			return out, fmt.Errorf("unique prompts, c=%d: %w", c, err)
		}
		in := Inflation{Concurrency: c, Shared: sr, Unique: ur}
		if u := ur.Summary.AggregateOutputTokS; u > 0 {
			in.Rel = sr.Summary.AggregateOutputTokS/u - 1
		}
		if ss, us := sr.Summary.Serve, ur.Summary.Serve; ss != nil && us != nil && us.MedianTTFTMs > 0 {
			in.TTFTRel = ss.MedianTTFTMs/us.MedianTTFTMs - 1
		}
		out = append(out, in)
	}
	return out, nil
}

// WriteInflation prints the ladder, one line per level.
func WriteInflation(w io.Writer, ins []Inflation) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "c\tshared tok/s\tunique tok/s\tinflation\tmedian TTFT shared\tmedian TTFT unique")
	for _, in := range ins {
		ttft := func(r *tokens.Receipt) string {
			if r.Summary.Serve == nil {
				return "—"
			}
			return fmt.Sprintf("%.1f ms", r.Summary.Serve.MedianTTFTMs)
		}
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%+.1f%%\t%s\t%s\n", in.Concurrency, in.Shared.Summary.AggregateOutputTokS,
			in.Unique.Summary.AggregateOutputTokS, 100*in.Rel, ttft(in.Shared), ttft(in.Unique))
	}
	return tw.Flush()
}

// PitfallSchema names the JSON form of a PitfallReport (vetbench tokens
// -pitfall -json); fields are added, never renamed or removed.
const PitfallSchema = "vetbench.tokens-pitfall/v1"

// PitfallReport is the cache pitfall of every workload measured.
type PitfallReport struct {
	Schema    string          `json:"schema"`
	Workloads []PitfallLadder `json:"workloads"`
}

// PitfallLadder is one workload's ladder, a level each.
type PitfallLadder struct {
	Workload string         `json:"workload"`
	Levels   []PitfallLevel `json:"levels"`
}

// PitfallLevel is one level of a ladder.
type PitfallLevel struct {
	Concurrency int     `json:"concurrency"`
	SharedTokS  float64 `json:"shared_tok_s"`
	UniqueTokS  float64 `json:"unique_tok_s"`
	// Inflation is shared ÷ unique − 1; TTFTRelative the same for TTFT p50.
	Inflation    float64 `json:"inflation"`
	TTFTRelative float64 `json:"ttft_relative"`
}

// NewPitfallReport is an empty report.
func NewPitfallReport() *PitfallReport {
	return &PitfallReport{Schema: PitfallSchema, Workloads: []PitfallLadder{}}
}

// Add adds a workload's ladder.
func (r *PitfallReport) Add(workload string, ins []Inflation) {
	l := PitfallLadder{Workload: workload, Levels: []PitfallLevel{}}
	for _, in := range ins {
		l.Levels = append(l.Levels, PitfallLevel{in.Concurrency, in.Shared.Summary.AggregateOutputTokS,
			in.Unique.Summary.AggregateOutputTokS, in.Rel, in.TTFTRel})
	}
	r.Workloads = append(r.Workloads, l)
}
