package stub

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
)

// TestScoreStandIn rebuilds value-only Score answers (typevet publishes the
// expected level and the most probable level) as two-level distributions
// with exactly that mean and mode, and refuses what two levels cannot give.
func TestScoreStandIn(t *testing.T) {
	labels := []string{"0", "1", "2", "3", "4"}
	for _, tc := range []struct {
		label string
		value float64
		ok    bool
	}{
		{"4", 4, true},
		{"4", 3.999999, true},
		{"3", 2.86, true},
		{"2", 2.3, true},
		{"4", 2.5, true}, // needs level 0 as the other point
		{"0", 0.4, true},
		{"4", 1.0, false}, // no two-level distribution has mean 1 and mode 4
		{"", 3, false},
		{"7", 3, false},
	} {
		rec, ok := scoreStandIn(judgments.Answer{Kind: judgments.Score, Labels: labels, Label: tc.label, Value: tc.value})
		require.Equal(t, tc.ok, ok, "%s %v", tc.label, tc.value)
		if !ok {
			continue
		}
		mean, top := 0.0, 0
		for i, p := range rec.probs {
			mean += float64(i) * p
			if p > rec.probs[top] {
				top = i
			}
		}
		require.InDelta(t, tc.value, mean, 1e-12)
		require.Equal(t, tc.label, labels[top])
	}
	// A replay counts what it rebuilt.
	rp, err := NewReplay("scores", map[string][]judgments.Answer{"a": {{Question: "q", Kind: judgments.Score, Labels: labels, Label: "3", Value: 2.86}}})
	require.NoError(t, err)
	require.Equal(t, 1, rp.Reconstructed)
	require.Zero(t, rp.Omitted)
	d, outcome := rp.lookup(judgments.RequestID("run", "a", "q"), len(labels))
	require.Equal(t, replayServed, outcome)
	require.True(t, d.replayed)
}
