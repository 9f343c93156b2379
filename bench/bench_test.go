package bench_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/answers"
	"github.com/vetbench/vetbench/receipts/tally"
)

// BenchmarkJudgments measures every set at every concurrency level
// (VETBENCH_SETS × VETBENCH_LEVELS × VETBENCH_ARMS, see bench/config). One op is one pass over
// the set; the reported figures cover the measured windows of all passes
// (warmup, cache resets and /metrics reads are outside them), so ns/op is
// hidden. Each point's last receipt is written to VETBENCH_OUT.
func BenchmarkJudgments(b *testing.B) {
	s := getSuite(b)
	for _, name := range s.cfg.Sets {
		for _, c := range s.cfg.Levels {
			for _, arm := range s.cfg.Arms {
				bname := fmt.Sprintf("set=%s/c=%d", name, c)
				if len(s.cfg.Arms) > 1 {
					bname += "/arm=" + string(arm)
				}
				b.Run(bname, func(b *testing.B) {
					ctx := s.context(b)
					sess := s.session(b, name)
					p := bench.Point{Concurrency: c, Arm: arm, Warmup: s.cfg.Warmup}
					var recs []*receipts.Receipt
					for b.Loop() {
						rec, err := sess.Measure(ctx, p)
						path := bench.ReceiptPath(s.outDir(), name, p)
						var werr error
						if rec != nil {
							werr = writeReceipt(path, rec)
						}
						switch {
						case err != nil && werr == nil && rec != nil:
							b.Fatalf("%v (receipt written to %s)", err, path)
						case err != nil || werr != nil:
							b.Fatal(errors.Join(err, werr))
						}
						// L = λW itself must hold; the pool-health figures beside it
						// (saturation, idle share) stay warnings in the receipt.
						if ll := rec.Checks.LittlesLaw; ll != nil && ll.RelError > audit.Tolerance {
							b.Errorf("Little's law does not hold: %v", ll.Problems)
						}
						recs = append(recs, rec)
					}
					b.ReportMetric(0, "ns/op")
					merged := tally.Merge(recs)
					metrics.Report(b, metrics.FromReceipt(merged))
					if moved, ok := movedAgainstGolden(s, name, c, recs[len(recs)-1]); ok {
						metrics.Report(b, []metrics.Metric{metrics.Moved(moved)})
					}
				})
			}
		}
	}
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
