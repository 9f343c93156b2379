package bench_test

import (
	"errors"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/answers"
	"github.com/vetbench/vetbench/receipts/tally"
)

// BenchmarkJudgments measures every set at every concurrency level
// (VETBENCH_SETS × VETBENCH_LEVELS × VETBENCH_ARMS, see bench/sweep/config), or,
// for an open loop, at every arrival rate (VETBENCH_RATE in place of the
// levels). One op is one pass over
// the set; the reported figures cover the measured windows of all passes
// (warmup, cache resets and /metrics reads are outside them), so ns/op is
// hidden. Every pass's receipt is written to the run directory (receipts/,
// then receipts/pass2 …), and each result line to its bench.txt as well.
//
// A point that stops early or has more failed judgments than
// VETBENCH_MAX_FAILED accepts still prints its line, with its failed-items
// and discarded-items, so what it measured is seen; the suite then exits
// non-zero and says why (a failed benchmark would print no line at all).
// Once the server is found down, no later point runs.
func BenchmarkJudgments(b *testing.B) {
	s := getSuite(b)
	// Sets × levels × arms, or for an open loop (VETBENCH_RATE) rates × arms.
	for _, st := range s.run.Steps() {
		point := st.Name(s.run.Armed())
		b.Run(point, func(b *testing.B) {
			if down := s.serverDown(); down != nil {
				b.Fatalf("not measured: %v", down)
			}
			if refused := s.setRefused(st.Set); refused != nil {
				b.Fatalf("not measured: %v", refused)
			}
			ctx := s.context(b)
			s.progress.Next()
			var recs []*receipts.Receipt
			var failed error
			for b.Loop() {
				if failed != nil {
					continue // b.Loop must run out; nothing more is measured
				}
				o, err := s.run.Measure(ctx, st)
				switch {
				case err != nil || o.Receipt == nil:
					if errors.Is(o.Err, bench.ErrRefused) {
						s.refuse(st.Set, o.Err)
					}
					b.Fatal(errors.Join(o.Err, err))
				case o.Err != nil:
					failed = fmt.Errorf("%w (receipt written to %s)", o.Err, o.Path)
					waitOut(b)
				}
				recs = append(recs, o.Receipt)
			}
			b.ReportMetric(0, "ns/op")
			ms := metrics.FromReceipt(tally.Merge(recs))
			// Goldens are closed-loop points'.
			if st.Point.Rate == 0 {
				if moved, ok := movedAgainstGolden(s, st.Set, st.Point.Concurrency, recs[len(recs)-1]); ok {
					ms = append(ms, metrics.Moved(moved))
				}
			}
			metrics.Report(b, ms)
			// bench.txt gets the line go test prints, unless the
			// benchmark failed (go test prints none then either); a
			// point that did not pass (failed) still has its line.
			s.line(b, metrics.Benchmark, point, len(recs), ms)
			if failed != nil {
				s.fail(b.Name(), failed)
			}
		})
	}
}

// waitOut lets a point that stopped measuring end its b.Loop with the
// passes it measured: it sleeps out what is left of
// -benchtime, else b.Loop would spin up to 10⁹ empty iterations and print
// that count on the line. A -benchtime of Nx ends by itself.
func waitOut(b *testing.B) {
	f := flag.Lookup("test.benchtime")
	if f == nil {
		return
	}
	d, err := time.ParseDuration(f.Value.String())
	if err != nil {
		return
	}
	time.Sleep(d - b.Elapsed())
}

// movedAgainstGolden counts confident verdict moves against the point's golden, when
// there is one of the same identity (a live server has none).
func movedAgainstGolden(s *suite, set string, c int, rec *receipts.Receipt) (int, bool) {
	golden, err := receipts.ReadFile(s.goldenPath(set, c))
	if err != nil {
		return 0, false
	}
	rep, err := answers.Compare(receipts.Normalize(golden), receipts.Normalize(rec), answers.DefaultPolicy())
	if errors.Is(err, receipts.ErrIdentityMismatch) || err != nil {
		return 0, false
	}
	// Near-tie moves are batch noise by policy; only confident ones count.
	return rep.VerdictsMoved.Confident, true
}
