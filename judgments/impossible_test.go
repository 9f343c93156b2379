package judgments

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImpossibleLogprobsAreRefused: a log-probability above 0 (all
// candidates +5.0) or below vLLM's -9999 floor (all -1e308), and every
// candidate at the floor, would each be scored as a 0.5/0.5 tie and give
// a verdict from nothing. They fail the question with
// ErrImpossibleLogprob. The controls: the same question with possible
// logprobs, the floor for one candidate and 0 for the other, is answered.
func TestImpossibleLogprobsAreRefused(t *testing.T) {
	t.Parallel()
	q := NewNoul("same", "Same?", "yes", "no")
	ids := Controls{Control(0): 100, Control(1): 101}
	pos := func(a, b float64) Position {
		return Position{Sampled: "token_id:100", Entries: []TokenLogprob{{Token: "token_id:100", Logprob: &a}, {Token: "token_id:101", Logprob: &b}}}
	}
	for name, c := range map[string][2]float64{"above0": {5, 5}, "one above 0": {-0.1, 1e-9}, "below floor": {-1e308, -1e308}, "all at floor": {MinLogprob, MinLogprob}} {
		t.Run(name, func(t *testing.T) {
			sc, err := Candidates(q, pos(c[0], c[1]), ids, ModeTokenIDs)
			if err == nil {
				_, err = Decide(q, sc.Logprobs)
			}
			require.ErrorIs(t, err, ErrImpossibleLogprob)
		})
	}
	for _, c := range [][2]float64{{0, MinLogprob}, {-0.7, -0.7}, {-3, -2000}} {
		sc, err := Candidates(q, pos(c[0], c[1]), ids, ModeTokenIDs)
		require.NoError(t, err, c)
		_, err = Decide(q, sc.Logprobs)
		require.NoError(t, err, c)
	}
}
