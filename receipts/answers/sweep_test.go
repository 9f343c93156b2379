package answers_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/answers"
)

func TestCompareLevelsAndSweeps(t *testing.T) {
	t.Parallel()
	level := func(c int, mutate func(r *receipts.Receipt)) *receipts.Receipt {
		r := sample(t)
		r.Pins.Concurrency, r.Throughput.Concurrency = c, c
		if mutate != nil {
			mutate(r)
		}
		return r
	}
	sweep := []*receipts.Receipt{level(1, nil), level(16, nil), level(32, func(r *receipts.Receipt) {
		r.Items[0].Answers[1] = choice(t, 0.1, 0.85, 0.05)
	})}
	rep, err := answers.CompareLevels(sweep, answers.DefaultPolicy())
	require.NoError(t, err)
	require.Len(t, rep.Entries, 2)
	require.Equal(t, 16, rep.Entries[0].CandidateConcurrency)
	require.True(t, rep.Entries[0].Report.Passed)
	require.True(t, rep.Entries[1].Report.Failed())
	require.True(t, rep.Failed())
	require.False(t, rep.Incomparable())

	rep, err = answers.CompareLevels(sweep[1:], answers.DefaultPolicy())
	require.NoError(t, err)
	require.Contains(t, rep.Entries[0].Err, "no c=1 receipt")
	require.True(t, rep.Incomparable())

	_, err = answers.CompareLevels([]*receipts.Receipt{level(1, nil), level(1, nil)}, answers.DefaultPolicy())
	require.ErrorContains(t, err, "two receipts for set toy at c=1")

	base := []*receipts.Receipt{level(1, nil), level(16, nil)}
	cand := []*receipts.Receipt{level(1, nil), level(16, nil), level(32, nil)}
	rep, err = answers.CompareSweep(base, cand, answers.DefaultPolicy())
	require.NoError(t, err)
	require.Len(t, rep.Entries, 3)
	require.True(t, rep.Entries[0].Report.Passed)
	require.Contains(t, rep.Entries[2].Err, "no baseline receipt")
	require.True(t, rep.Failed())

	rep, err = answers.CompareSweep(base, base, answers.DefaultPolicy())
	require.NoError(t, err)
	require.True(t, rep.Passed)
}
