package tokens

import (
	"errors"
	"fmt"
	"math"
)

// Baseline is what a token run is asked to compare and write besides its
// receipts: a baseline (ReadPath), a saved candidate to compare instead
// of a measured one, the margin of the verdict, and a vllm bench serve
// result file to write. Its errors name the vetbench tokens flags.
type Baseline struct {
	Path, Candidate string
	Margin          float64
	SaveResult      string
}

// Check refuses a candidate with nothing to do and a margin below 0.
func (b *Baseline) Check() error {
	if b.Candidate != "" && b.Path == "" && b.SaveResult == "" {
		return errors.New("-candidate needs -baseline (or -save-result)")
	}
	if math.IsNaN(b.Margin) || b.Margin < 0 {
		return errors.New("-margin must be >= 0")
	}
	return nil
}

// Load reads the baseline and the candidate asked for (nil when not).
func (b *Baseline) Load() (base, cand []*Receipt, err error) {
	if b.Path != "" {
		if base, err = ReadPath(b.Path); err != nil {
			return nil, nil, fmt.Errorf("baseline: %w", err)
		}
	}
	if b.Candidate != "" {
		if cand, err = ReadPath(b.Candidate); err != nil {
			return nil, nil, fmt.Errorf("candidate: %w", err)
		}
	}
	return base, cand, nil
}

// Save writes recs as a vllm bench serve --save-result file
// (WriteServeResult) when one is asked for, never over an existing file.
func (b *Baseline) Save(recs []*Receipt) error {
	if b.SaveResult == "" {
		return nil
	}
	if err := WriteServeResult(b.SaveResult, recs); err != nil {
		return fmt.Errorf("-save-result: %w", err)
	}
	return nil
}

// Judge compares cand with base and judges it against the margin
// (Compare, Comparison.Judge).
func (b *Baseline) Judge(base, cand []*Receipt) (*Comparison, Verdict, error) {
	c, err := Compare(base, cand)
	if err != nil {
		return nil, Verdict{}, err
	}
	return c, c.Judge(b.Margin), nil
}
