package bench_test

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/answers"
)

// TestStability runs every set at every level and compares the answers with
// the golden receipts in receipts/golden (rewrite them with -update): a
// verdict that moves on an item the golden did not hold near-tied fails, a
// Noul that moves by more than 0.001 fails; near-tie moves are reported.
func TestStability(t *testing.T) {
	s := getSuite(t)
	for _, name := range s.cfg.Sets {
		for _, c := range s.cfg.Levels {
			t.Run(fmt.Sprintf("set=%s/c=%d", name, c), func(t *testing.T) {
				ctx := s.context(t)
				sess := s.session(t, name)
				rec, err := sess.Measure(ctx, bench.Point{Concurrency: c, Arm: receipts.ArmCold, Warmup: s.cfg.Warmup})
				require.NoError(t, err)
				checkGolden(t, s.goldenPath(name, c), rec, *update)
			})
		}
	}
}

// checkGolden compares rec with the golden at path and fails the test with
// one line per failing item and question.
func checkGolden(t *testing.T, path string, rec *receipts.Receipt, update bool) {
	t.Helper()
	rep, err := answers.Golden(path, rec, update, os.Getenv("CI") == "true", answers.DefaultPolicy())
	require.NoError(t, err)
	for _, m := range rep.Moved {
		if m.Class == answers.NearTie {
			t.Logf("near-tie move (reported, not failed): %s %s: %s → %s", m.Item, m.Question, m.Baseline.Label, m.Candidate.Label)
		}
	}
	if rep.Failed() {
		t.Errorf("answers moved against %s:\n  %s", path, strings.Join(rep.Failures(), "\n  "))
	}
}

// logitShift is the change of the true-vs-false logit gap that moves P(true)
// from p to p+d.
func logitShift(p, d float64) float64 {
	logit := func(x float64) float64 { return math.Log(x / (1 - x)) }
	return logit(p+d) - logit(p)
}
