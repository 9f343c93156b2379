package speed_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/speed"
)

// TestDecideRecordedTwin decides on real benchmark output: the first of
// five trials of `make gate-check` (cmd/vetbench TestGateOnSlowedTwin: the
// README's gate flow, gate.toml — checks at c = 1, 4, 16, 32, the
// h100-gemma4-31b twin at ×10, in-process, -count 10), kept in
// testdata/twin: a baseline, the twin slowed 20% (VETBENCH_STUB_SLOWDOWN=1.2)
// and an unchanged rerun. The measurement itself is opt-in; what it fed the
// gate is checked here on every make test: the slowed twin fails on
// judgments/s at every level (−12% at c=1, where the modelled network round
// trip is not slowed, to −17%), the unchanged rerun passes, and nothing of
// either read is dropped.
func TestDecideRecordedTwin(t *testing.T) {
	t.Parallel()
	read := func(name string) *speed.Samples {
		s, err := speed.LoadFile(filepath.Join("testdata", "twin", name+".txt"))
		require.NoError(t, err)
		for _, c := range []string{"1", "4", "16", "32"} {
			require.Len(t, s.Values("Judgments/set=checks/c="+c+"-2", "judgments/s"), 10)
		}
		return s
	}
	base, unchanged, slow := read("baseline"), read("unchanged"), read("slowed")

	rep := speed.Decide(base, slow, speed.DefaultPolicy())
	require.True(t, rep.Failed(), "the slowed twin fails: %v %v", rep.Failures, rep.Problems)
	require.Equal(t, 48, rep.Gated)
	worseRate := 0
	for _, m := range rep.Metrics {
		if m.Verdict == speed.Worse {
			require.Greater(t, *m.Delta*map[string]float64{"higher": -1, "lower": 1}[m.Better], 0.05, m.Unit)
			if m.Unit == "judgments/s" {
				worseRate++
			}
		}
	}
	require.Equal(t, 4, worseRate, "judgments/s worse at every level")

	rep = speed.Decide(base, unchanged, speed.DefaultPolicy())
	require.True(t, rep.Passed, "the unchanged rerun passes: %v %v", rep.Failures, rep.Problems)
	require.Equal(t, 48, rep.Gated)
}
