package stub

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// simCalibration holds what the simulated calibration needs: typevet's
// sweep over the three sets and typevet's receipts.
type simCalibration struct {
	sweeps *TypevetSweep
	rec    map[string]twintest.Receipt
}

// newSimCalibration prepares the sets the profile is fitted to: the checks
// generator's prompts (twintest.CompactChecks) and look-alikes of typevet's
// LFW and CEDAR slices (images of those sets' sizes; see lookalike.go),
// with typevet's sweep subsets, run before the full sets (receipt pins).
func newSimCalibration(t testing.TB) *simCalibration {
	t.Helper()
	checks := twintest.CompactChecks(t)
	sets := []TypevetSet{{Name: "checks", Spec: checks.Spec, Items: caseItems(checks), Subset: 63}}
	for _, mk := range []func() (TypevetSet, error){func() (TypevetSet, error) { return TypevetLookalikeFaces(100) },
		func() (TypevetSet, error) { return TypevetLookalikeSignatures(60) }} {
		s, err := mk()
		require.NoError(t, err)
		sets = append(sets, s)
	}
	w, err := NewTypevetSweep(ProfileH100Gemma4(), sets)
	require.NoError(t, err)
	return &simCalibration{sweeps: w, rec: twintest.LoadTypevetThroughput(t)}
}

// sweep is typevet's sweep on a fresh server per set (TypevetSweep.Run).
func (sc *simCalibration) sweep(p Profile, slowdown float64, only string) map[string]simRun {
	return sc.sweeps.Run(p, slowdown, only)
}

// run simulates typevet's session for each set on a fresh server (its
// whole sweep: the subset at every level, then the full set at c=16 and
// c=32) and keeps the full-set runs, keyed "<set>_full_c<c>" as in the
// receipts.
func (sc *simCalibration) run(p Profile, slowdown float64, only string) map[string]simRun {
	out := sc.sweep(p, slowdown, only)
	for k := range out {
		if !strings.Contains(k, "_full_") {
			delete(out, k)
		}
	}
	return out
}

func simFigures(r simRun) twintest.Figures {
	return twintest.Figures{JPS: r.JPS, P50: r.P50, P95: r.P95, HitRate: r.HitRate, QueueMean: r.QueueMean}
}

// TestCalibrationSimulated runs the H100 profile on a virtual clock through
// typevet's sessions for all three sets and compares with the six full-set
// receipts. The checks figures and, for faces and signatures, throughput,
// latency and hit rate must be within ±15% (a hit rate under 0.1 within
// 0.015); the faces/signatures c=32 queue times are reported, not
// asserted: the twin queues for KV capacity less than the H100 did (see
// the README). A 30% slower engine must break the calibration.
func TestCalibrationSimulated(t *testing.T) {
	sc := newSimCalibration(t)
	got := sc.run(ProfileH100Gemma4(), 1, "") // the full-set receipts
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var bad []string
	for _, k := range keys {
		want := twintest.ReceiptFigures(sc.rec[k].Throughput)
		g := simFigures(got[k])
		t.Logf("%s: prefill %.3f/%.3f s, e2e %.3f/%.3f s (twin/receipt, not calibrated)", k,
			got[k].PrefillMean, sc.rec[k].Throughput.Server.Prefill.Sum/sc.rec[k].Throughput.Server.Prefill.Count,
			got[k].E2EMean, sc.rec[k].Throughput.Server.E2E.Sum/sc.rec[k].Throughput.Server.E2E.Count)
		out := twintest.CompareFigures(t, k, g, want)
		for _, b := range out {
			if k[:6] != "checks" && (contains(b, "queue time") || (contains(b, "hit rate") && math.Abs(g.HitRate-want.HitRate) <= 0.015 && want.HitRate < 0.1)) {
				continue
			}
			bad = append(bad, b)
		}
	}
	require.Empty(t, bad, "the h100 profile no longer reproduces typevet's receipts")

	slow := sc.run(ProfileH100Gemma4(), 1.3, "checks")
	outside := twintest.CompareFigures(t, "slowdown 1.3", simFigures(slow["checks_full_c16"]), twintest.ReceiptFigures(sc.rec["checks_full_c16"].Throughput))
	require.NotEmpty(t, outside, "a 30% slower engine still passes: the calibration check cannot fail")
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
