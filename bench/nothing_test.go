package bench_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/stub"
)

// TestNothingSucceededFails: 0 of 14 judgments succeeding passed under
// continue-on-error with -max-failed 100%: a point that answered nothing
// measured nothing. It fails whatever share is accepted; the control is
// the same point with one failure in 14, accepted at 100%.
func TestNothingSucceededFails(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 14)
	cfg := testConfig()
	cfg.ContinueOnError, cfg.MaxFailed = true, 1
	all, err := stub.ParseFault("http500:match=r")
	require.NoError(t, err)
	rec, err := inProcess(t, set, cfg, stub.Config{Faults: []stub.Fault{all}}).Measure(t.Context(), bench.Point{Concurrency: 2})
	require.ErrorIs(t, err, bench.ErrFailures)
	require.ErrorContains(t, err, "no judgment succeeded")
	require.Zero(t, rec.Throughput.Judgments)
	require.Equal(t, 14, rec.Throughput.Failed)

	one, err := stub.ParseFault("http500:match=" + set.Cases[3].ID + ",limit=1")
	require.NoError(t, err)
	rec, err = inProcess(t, set, cfg, stub.Config{Faults: []stub.Fault{one}}).Measure(t.Context(), bench.Point{Concurrency: 2})
	require.NoError(t, err, "control: one failure in 14 is within 100%")
	require.Equal(t, 1, rec.Throughput.Failed)
}
