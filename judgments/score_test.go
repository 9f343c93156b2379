package judgments

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func f(v float64) *float64 { return &v }

func TestDecide(t *testing.T) {
	qs := checksQuestions()
	noul, choice, score := qs[0], qs[2], qs[3]

	a, err := Decide(noul, []float64{math.Log(0.2), math.Log(0.6)}) // mass outside candidates is ignored
	require.NoError(t, err)
	require.Equal(t, "true", a.Label)
	require.InDelta(t, 0.75, a.Value, 1e-12)
	require.InDelta(t, 0.25, a.Probabilities["false"], 1e-12)
	require.Equal(t, []string{"false", "true"}, a.Labels)

	// An exact tie goes to the earlier label.
	a, err = Decide(noul, []float64{-1, -1})
	require.NoError(t, err)
	require.Equal(t, "false", a.Label)
	require.Equal(t, 0.5, a.Value)
	a, err = Decide(choice, []float64{-9, -2, -2, -9, -9, -9})
	require.NoError(t, err)
	require.Equal(t, "payee_mismatch", a.Label)

	// Score: expected level, label = most probable level.
	_, err = Decide(score, []float64{0})
	require.Error(t, err) // wrong count
	a, err = Decide(score, []float64{math.Log(0.1), math.Log(0.1), math.Log(0.1), math.Log(0.3), math.Log(0.4)})
	require.NoError(t, err)
	require.Equal(t, "4", a.Label)
	require.InDelta(t, 0*0.1+1*0.1+2*0.1+3*0.3+4*0.4, a.Value, 1e-12)
	require.InDelta(t, 0.4, a.Confidence, 1e-12)

	// Large magnitudes stay finite (log-sum-exp).
	a, err = Decide(noul, []float64{-9999, -0.0001})
	require.NoError(t, err)
	require.Equal(t, 1.0, a.Value)

	_, err = Decide(noul, []float64{math.NaN(), 0})
	require.ErrorIs(t, err, ErrNonFinite)
	_, err = Decide(noul, []float64{math.Inf(1), 0})
	require.ErrorIs(t, err, ErrNonFinite)
}

func TestMargin(t *testing.T) {
	a := Answer{Probabilities: map[string]float64{"a": 0.5, "b": 0.3, "c": 0.2}}
	require.InDelta(t, 0.2, a.Margin(), 1e-12)
}

func TestCandidates(t *testing.T) {
	noul := checksQuestions()[0]
	ctrl := Controls{"0": 100, "1": 101}
	e := func(tok string, lp *float64) TokenLogprob { return TokenLogprob{tok, lp} }
	for _, tc := range []struct {
		name    string
		mode    Mode
		sampled string
		entries []TokenLogprob
		want    []float64
		off     bool
		err     error
		control string
	}{
		// vLLM's shape: the sampled token first, then the requested ids,
		// de-duplicated (N entries when the greedy token is a candidate).
		{"ids sampled candidate", ModeTokenIDs, "token_id:101", []TokenLogprob{e("token_id:101", f(-0.1)), e("token_id:100", f(-2))}, []float64{-2, -0.1}, false, nil, ""},
		{"ids any order", ModeTokenIDs, "token_id:101", []TokenLogprob{e("token_id:100", f(-2)), e("token_id:101", f(-0.1))}, []float64{-2, -0.1}, false, nil, ""},
		// N+1 when the greedy token is none of them: accepted, off-format.
		{"ids sampled off-format", ModeTokenIDs, "token_id:7", []TokenLogprob{e("token_id:7", f(-0.05)), e("token_id:100", f(-4)), e("token_id:101", f(-3))}, []float64{-4, -3}, true, nil, ""},
		{"ids sampled off-format last", ModeTokenIDs, "token_id:7", []TokenLogprob{e("token_id:100", f(-4)), e("token_id:101", f(-3)), e("token_id:7", f(-0.05))}, []float64{-4, -3}, true, nil, ""},
		// Any other unrequested id still fails closed.
		{"ids unrequested", ModeTokenIDs, "token_id:101", []TokenLogprob{e("token_id:7", f(-2)), e("token_id:100", f(-2)), e("token_id:101", f(-1))}, nil, false, ErrUnexpectedToken, ""},
		{"ids unrequested besides sampled", ModeTokenIDs, "token_id:7", []TokenLogprob{e("token_id:7", f(-0.1)), e("token_id:8", f(-2)), e("token_id:100", f(-2)), e("token_id:101", f(-1))}, nil, false, ErrUnexpectedToken, ""},
		{"ids sampled twice", ModeTokenIDs, "token_id:7", []TokenLogprob{e("token_id:7", f(-0.1)), e("token_id:7", f(-0.1)), e("token_id:100", f(-2)), e("token_id:101", f(-1))}, nil, false, ErrUnexpectedToken, ""},
		{"ids unrequested no sampled", ModeTokenIDs, "", []TokenLogprob{e("token_id:7", f(-2)), e("token_id:100", f(-2)), e("token_id:101", f(-1))}, nil, false, ErrUnexpectedToken, ""},
		{"ids missing", ModeTokenIDs, "token_id:100", []TokenLogprob{e("token_id:100", f(-2))}, nil, false, ErrMissingCandidate, "1"},
		{"ids duplicate", ModeTokenIDs, "token_id:100", []TokenLogprob{e("token_id:100", f(-2)), e("token_id:100", f(-2)), e("token_id:101", f(-1))}, nil, false, ErrDuplicateCandidate, "0"},
		{"ids null", ModeTokenIDs, "token_id:101", []TokenLogprob{e("token_id:100", nil), e("token_id:101", f(-1))}, nil, false, ErrNonFinite, "0"},
		{"ids text", ModeTokenIDs, "0", []TokenLogprob{e("0", f(-2)), e("token_id:101", f(-1))}, nil, false, ErrUnexpectedToken, ""},
		{"empty", ModeTokenIDs, "token_id:7", nil, nil, false, ErrMissingCandidate, "0"},
		// top_logprobs: matched on text, in any order; the sampled token
		// may come first and the k-th best may be missing.
		{"top", ModeTopLogprobs, "The", []TokenLogprob{e("The", f(-0.5)), e("1", f(-1)), e("0", f(-3)), e(" 0", f(-4))}, []float64{-3, -1}, true, nil, ""},
		{"top sampled first not best", ModeTopLogprobs, "0", []TokenLogprob{e("0", f(-3)), e("The", f(-0.5)), e("1", f(-1))}, []float64{-3, -1}, false, nil, ""},
		{"top missing", ModeTopLogprobs, "The", []TokenLogprob{e("The", f(-0.5)), e("1", f(-1))}, nil, false, ErrMissingCandidate, "0"},
		// Two ids decoding to "1" (the piece and a byte fallback): the most
		// probable is the control's; the answer is the same either way.
		{"top duplicate", ModeTopLogprobs, "1", []TokenLogprob{e("1", f(-1)), e("1", f(-1)), e("0", f(-3))}, []float64{-3, -1}, false, nil, ""},
		{"top duplicate byte fallback", ModeTopLogprobs, "1", []TokenLogprob{e("1", f(-0.2)), e("0", f(-2)), e("1", f(-9))}, []float64{-2, -0.2}, false, nil, ""},
		{"top duplicate close", ModeTopLogprobs, "1", []TokenLogprob{e("1", f(-1)), e("0", f(-1.2)), e("1", f(-5))}, []float64{-1.2, -1}, false, nil, ""},
		// Ambiguous: "0" wins on its best entry, but the two spellings of
		// "1" together hold more mass than "0".
		{"top duplicate ambiguous mass", ModeTopLogprobs, "0", []TokenLogprob{e("0", f(-1)), e("1", f(-1.3)), e("1", f(-1.3))}, nil, false, ErrDuplicateCandidate, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Candidates(noul, Position{Sampled: tc.sampled, Entries: tc.entries}, ctrl, tc.mode)
			if tc.err == nil {
				require.NoError(t, err)
				require.Equal(t, tc.want, got.Logprobs)
				require.Equal(t, tc.sampled, got.Sampled)
				require.Equal(t, tc.off, got.OffFormat)
				dups := 0
				if strings.HasPrefix(tc.name, "top duplicate") {
					dups = 1
				}
				require.Equal(t, dups, got.DuplicateDecodings, "combined entries are counted")
				return
			}
			require.ErrorIs(t, err, tc.err)
			var ce *CandidateError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, "payee_matches", ce.Question)
			require.Equal(t, tc.control, ce.Control)
			require.Nil(t, got.Logprobs)
		})
	}
	_, err := Candidates(noul, Position{}, Controls{"0": 1}, ModeTokenIDs)
	require.ErrorIs(t, err, ErrMissingCandidate, "an unpinned control")
}

func TestParseMode(t *testing.T) {
	m, err := ParseMode("top_logprobs")
	require.NoError(t, err)
	require.Equal(t, ModeTopLogprobs, m)
	_, err = ParseMode("guess")
	require.ErrorContains(t, err, `unknown scoring mode "guess"`)
}
