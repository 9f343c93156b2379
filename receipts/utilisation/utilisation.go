// Package utilisation reads a measured run — vetbench token receipts, the
// published token-throughput JSON, a vetbench matrix or a published
// speed-matrix CSV — as the points roofline.Utilise reads against their
// ceilings: which phase each timed, at what batch and context, and how
// that was derived when the run did not record it.
package utilisation

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/matrix"
	"github.com/vetbench/vetbench/receipts/roofline"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// Run is a measured run read as points.
type Run struct {
	// Kind says what was read ("token throughput (vetbench.tokens/v2)").
	Kind   string
	Points []roofline.Observed
}

// Read reads the run at path: a CSV file is a published speed matrix, a
// JSON file of the matrix schema a vetbench matrix, anything else token
// receipts (tokens.ReadPath: a file or a directory). A token receipt that
// records no prompt length takes prompt for it when given, else 0 (a note
// on the point says which).
func Read(path string, prompt int, given bool) (*Run, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() && strings.EqualFold(filepath.Ext(path), ".csv") {
		m, err := matrix.ReadCSVFile(path)
		if err != nil {
			return nil, err
		}
		return matrixRun(m, "speed matrix (published CSV)")
	}
	if !st.IsDir() {
		data, err := receipts.ReadLimited(path) // regular files, under the cap
		if err != nil {
			return nil, err
		}
		var probe struct {
			Schema string `json:"schema"`
		}
		_ = json.Unmarshal(data, &probe)
		if probe.Schema == matrix.Schema {
			m, err := matrix.Decode(data, path)
			if err != nil {
				return nil, err
			}
			return matrixRun(m, "speed matrix ("+matrix.Schema+")")
		}
	}
	recs, err := tokens.ReadPath(path)
	if err != nil {
		return nil, err
	}
	pts := TokenPoints(recs, prompt, given)
	if len(pts) == 0 {
		return nil, fmt.Errorf("%s: no measured point", path)
	}
	kind := "token throughput (" + tokens.Schema + ")"
	if recs[0].Source == tokens.SourcePublished {
		kind = "token throughput (published format)"
	}
	return &Run{Kind: kind, Points: pts}, nil
}

func matrixRun(m *matrix.Matrix, kind string) (*Run, error) {
	pts, err := MatrixPoints(m)
	if err != nil {
		return nil, err
	}
	return &Run{Kind: kind, Points: pts}, nil
}

// TokenPoints are the decode points of token receipts with a measured
// rate. A point's context is its mean prompt plus half its output (what a
// sequence holds on average while it decodes); a receipt that records no
// prompt (the published format) takes prompt when given, else 0.
func TokenPoints(recs []*tokens.Receipt, prompt int, given bool) []roofline.Observed {
	var pts []roofline.Observed
	for _, r := range recs {
		if !(r.Summary.AggregateOutputTokS > 0) {
			continue
		}
		p := roofline.Observed{Label: fmt.Sprintf("%s c=%d", r.Point.Workload, r.Point.Concurrency), Phase: roofline.PhaseDecode,
			Batch: r.Point.Concurrency}
		sum, n := 0, 0
		for _, run := range r.Runs {
			for _, q := range run.Requests {
				sum, n = sum+q.PromptTokens, n+1
			}
		}
		mean := 0
		switch {
		case n > 0:
			mean = (sum + n/2) / n
		case given:
			mean = prompt
			p.Notes = append(p.Notes, fmt.Sprintf("prompt length unrecorded: -context %d taken for it", prompt))
		default:
			p.Notes = append(p.Notes, "prompt length unrecorded: taken as 0 (give -context)")
		}
		p.Context = mean + r.Point.OutputTokens/2
		p.TokS = r.Summary.AggregateOutputTokS
		pts = append(pts, p)
	}
	return pts
}

// MatrixPoints are a matrix's measured prefill rows and its Valid or
// Requests queued cells. A cell's context is its row's plus half of
// max_tokens when the matrix records it; a row with no recorded token
// count is sized from its label.
func MatrixPoints(m *matrix.Matrix) ([]roofline.Observed, error) {
	size := func(label string, tokens int) int {
		if tokens > 0 {
			return tokens
		}
		n, _ := matrix.ContextSize(label)
		return n
	}
	var pts []roofline.Observed
	for _, r := range m.Prefill {
		if r.TokS == nil || !(*r.TokS > 0) {
			continue
		}
		ctx := size(r.Context, r.ContextTokens)
		if r.PromptTokens != nil {
			ctx = *r.PromptTokens
		}
		pts = append(pts, roofline.Observed{Label: "prefill " + r.Context, Phase: roofline.PhasePrefill, Batch: 1, Context: ctx, TokS: *r.TokS})
	}
	for _, c := range m.Cells {
		if c.TotalTokS == nil || !(*c.TotalTokS > 0) || (c.Status != matrix.Valid && c.Status != matrix.RequestsQueued) {
			continue
		}
		p := roofline.Observed{Label: fmt.Sprintf("%s c=%d", c.Context, c.Concurrency), Phase: roofline.PhaseDecode,
			Batch: c.Concurrency, Context: size(c.Context, c.ContextTokens) + m.MaxOutputTokens/2, TokS: *c.TotalTokS}
		if c.ContextTokens == 0 {
			p.Notes = append(p.Notes, "context from the row label")
		}
		if m.MaxOutputTokens == 0 {
			p.Notes = append(p.Notes, "output length unrecorded: context is the prompt alone")
		}
		if c.Status == matrix.RequestsQueued {
			p.Notes = append(p.Notes, "requests queued: fewer than C ran at once")
		}
		pts = append(pts, p)
	}
	if len(pts) == 0 {
		return nil, errors.New("the matrix has no measured point")
	}
	return pts, nil
}
