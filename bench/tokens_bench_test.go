package bench_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/grid"
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/receipts/matrix"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// BenchmarkTokens measures token throughput at every workload × level
// (VETBENCH_TOKENS_WORKLOADS × VETBENCH_TOKENS_LEVELS, see bench/sweep/config):
// C streamed requests at once, each for exactly VETBENCH_TOKENS_OUTPUT
// tokens, VETBENCH_TOKENS_REPEATS times after a warm-up. One op is one
// point; ns/op is hidden. Every request is verified; failures beyond
// VETBENCH_TOKENS_MAX_FAILED fail the benchmark, as a repeat that breaks
// Little's law does (audit.Check, the rule vetbench tokens applies). Each
// point's receipt goes to the run directory (receipts/tokens_<workload>_c<N>.json, then
// receipts/pass2 …), each result line to its bench.txt as well.
func BenchmarkTokens(b *testing.B) {
	s := getSuite(b)
	r := tokenRunner(b, s)
	for _, st := range s.run.TokenSteps() {
		b.Run(st.Name(), func(b *testing.B) {
			ctx := s.context(b)
			p := s.run.TokenPoint(st)
			var recs []*tokens.Receipt
			for b.Loop() {
				rec, err := r.Measure(ctx, p)
				if err == nil {
					err = sweep.TokenLittlesLaw(rec)
				}
				if err != nil {
					if rec != nil {
						// Its line too, failed-requests and all, as vetbench
						// tokens writes it (bench.txt is never left empty).
						path, werr := s.run.WriteTokens(rec)
						s.line(b, "Tokens", st.Name(), 1, decode.Metrics(rec))
						b.Fatalf("%v (receipt %s, %v)", err, path, werr)
					}
					b.Fatal(err)
				}
				recs = append(recs, rec)
			}
			b.ReportMetric(0, "ns/op")
			// One receipt per point: the repeats of every pass b.Loop made.
			merged := mergeTokens(recs)
			if _, err := s.run.WriteTokens(merged); err != nil {
				b.Fatal(err)
			}
			ms := decode.Metrics(merged)
			metrics.Report(b, ms)
			s.line(b, "Tokens", st.Name(), len(recs), ms)
		})
	}
}

// mergeTokens is one receipt holding the runs of several passes over one
// point, its figures summarised again.
func mergeTokens(recs []*tokens.Receipt) *tokens.Receipt {
	m := *recs[len(recs)-1]
	m.Started, m.Runs = recs[0].Started, nil
	for _, r := range recs {
		m.Runs = append(m.Runs, r.Runs...)
	}
	m.Point.Repeats = len(m.Runs)
	m.Summary = tokens.Summarize(m.Point, m.Runs)
	m.Identity.Digest = m.IdentityDigest()
	return &m
}

// BenchmarkMatrix measures the speed matrix one cell per sub-benchmark
// (VETBENCH_MATRIX_CONTEXTS × VETBENCH_MATRIX_LEVELS, each for
// VETBENCH_MATRIX_DURATION of sustained decode). A skipped cell skips; a
// looped or failed one is an error; a Requests queued cell reports its
// figures with queued=1. The whole matrix goes to VETBENCH_OUT as JSON and
// CSV.
func BenchmarkMatrix(b *testing.B) {
	s := getSuite(b)
	r, o := matrixRunner(b, s)
	m := &matrix.Matrix{Schema: matrix.Schema, Source: matrix.SourceVetbench, RunID: r.RunID,
		Target: r.Endpoint.Receipt(), Identity: r.Identity, DurationSeconds: o.Duration.Seconds(),
		MaxOutputTokens: o.OutputTokens, Prefill: []matrix.Prefill{}, Cells: []matrix.Cell{}, Warnings: slices.Clone(r.Notes)}
	measured := map[int]string{} // context tokens → the label asked for first
	for _, want := range o.Contexts {
		row, err := r.Row(s.context(b), o, want)
		if err != nil {
			b.Fatal(err)
		}
		if row == nil {
			continue
		}
		m.Warnings = append(m.Warnings, row.Warnings...)
		if first, ok := measured[row.Tokens]; ok {
			// Two asked contexts trimmed to one length (max_model_len): one
			// row, never two sub-benchmarks of the same name (ctx=6K#01).
			w := fmt.Sprintf("context %s is %s again after trimming (as %s was): measured once", matrix.ContextLabel(want), row.Label, first)
			m.Warnings = append(m.Warnings, w)
			fmt.Fprintln(os.Stderr, "[vetbench] "+w)
			continue
		}
		measured[row.Tokens] = matrix.ContextLabel(want)
		for _, c := range o.Levels {
			point := sweep.MatrixPoint(row.Label, c)
			b.Run(point, func(b *testing.B) {
				ctx := s.context(b)
				var cell matrix.Cell
				n := 0
				for b.Loop() {
					cell = row.Cell(ctx, c)
					n++
				}
				b.ReportMetric(0, "ns/op")
				m.Cells = slices.DeleteFunc(m.Cells, func(x matrix.Cell) bool { return x.Context == cell.Context && x.Concurrency == c })
				m.Cells = append(m.Cells, cell)
				switch cell.Status {
				case matrix.Skipped:
					b.Skip(cell.Reason)
				case matrix.Looped, matrix.Failed:
					b.Errorf("%s: %s", cell.Status.Label(), cell.Reason)
				}
				ms := grid.Metrics(cell)
				metrics.Report(b, ms)
				s.line(b, "Matrix", point, n, ms)
			})
		}
	}
	m.Sort()
	// Interrupted, the matrix says so, as vetbench matrix's does: its cells
	// never measured are not left for a comparison to pass over.
	m.Stopped = matrix.StoppedBy(context.Cause(s.interrupt))
	if len(m.Cells) == 0 || s.run.Dir == nil {
		return
	}
	if _, err := s.run.WriteMatrix(m); err != nil {
		b.Error(err)
	}
}

var (
	tokenOnce, matrixOnce sync.Once
	tokenR                *decode.Runner
	matrixR               *grid.Runner
	matrixO               grid.Options
	tokenErr, matrixErr   error
)

func tokenRunner(tb testing.TB, s *suite) *decode.Runner {
	tb.Helper()
	tokenOnce.Do(func() { tokenR, tokenErr = s.run.TokenRunner(context.Background()) })
	if tokenErr != nil {
		tb.Fatalf("token runner: %v", tokenErr)
	}
	return tokenR
}

func matrixRunner(tb testing.TB, s *suite) (*grid.Runner, grid.Options) {
	tb.Helper()
	matrixOnce.Do(func() { matrixR, matrixO, matrixErr = s.run.MatrixRunner(context.Background()) })
	if matrixErr != nil {
		tb.Fatalf("matrix runner: %v", matrixErr)
	}
	return matrixR, matrixO
}
