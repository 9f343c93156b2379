package stub

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// sweepRow is one receipt's judgments/s beside the twin's.
type sweepRow struct {
	Key, Set, Slice string
	Level           int
	Want, Got       float64
	Fitted          bool
}

func (r sweepRow) rel() float64 { return r.Got/r.Want - 1 }

// sweepRows pairs every receipt the testdata holds with the simulated run
// of the same key, by set, slice and level.
func sweepRows(sc *simCalibration, got map[string]simRun) []sweepRow {
	var rows []sweepRow
	for k, rec := range sc.rec {
		run, ok := got[k]
		if !ok {
			continue
		}
		parts := strings.Split(k, "_")
		rows = append(rows, sweepRow{Key: k, Set: parts[0], Slice: parts[1], Level: rec.Throughput.Concurrency,
			Want: rec.Throughput.JudgmentsPerSecond, Got: run.JPS, Fitted: TypevetFitted[k]})
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Slice != b.Slice {
			return a.Slice > b.Slice // subset first, as the sweep ran
		}
		if a.Level != b.Level {
			return a.Level < b.Level
		}
		return a.Set < b.Set
	})
	return rows
}

// sweepTable renders rows as the report's table.
func sweepTable(rows []sweepRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-5s %-10s %-7s %10s %8s %8s  %s\n", "level", "set", "slice", "typevet", "twin", "error", "used to fit")
	for _, r := range rows {
		fit := "held-out"
		if r.Fitted {
			fit = "fit"
		}
		fmt.Fprintf(&b, "c=%-3d %-10s %-7s %10.3f %8.3f %+7.1f%%  %s\n", r.Level, r.Set, r.Slice, r.Want, r.Got, 100*r.rel(), fit)
	}
	return b.String()
}

// TestTypevetSweepSimulated runs ProfileH100Gemma4 on a virtual clock
// through typevet's whole sweep (subset at c=1, 4, 16, 32, then the full
// sets at 16 and 32), driven with the typevet dispatch, and compares
// judgments/s with every receipt of the sweep the testdata holds: each
// within ±15%, fitted and held-out alike (the table says which is which;
// make test prints it with -v). The latency split behind it is in the log:
// per judgment, the network round trips, the waits and work of the
// frontend for the tokenize calls and the chat requests, and the engine.
// A 30% slower engine must miss.
func TestTypevetSweepSimulated(t *testing.T) {
	sc := newSimCalibration(t)
	got := sc.sweep(ProfileH100Gemma4(), 1, "")
	rows := sweepRows(sc, got)
	require.NotEmpty(t, rows)
	t.Logf("typevet's sweep, judgments/s, twin (typevet dispatch, simulated) against typevet's H100 receipts:\n%s", sweepTable(rows))
	for _, k := range []string{"signatures_subset_c1", "signatures_subset_c16", "checks_full_c16", "checks_full_c32"} {
		r, rec := got[k], sc.rec[k].Throughput
		t.Logf("%s: server e2e %.3f/%.3f s, prefill %.3f/%.3f s per request (twin/receipt); frontend busy %.0f%%, engine busy %.0f%%, a tokenize call waits %.1f ms",
			k, r.E2EMean, rec.Server.E2E.Sum/rec.Server.E2E.Count, r.PrefillMean, rec.Server.Prefill.Sum/rec.Server.Prefill.Count,
			100*r.FrontendBusy, 100*r.EngineBusy, 1000*r.TokenizeWait)
	}
	var bad []string
	for _, r := range rows {
		if math.Abs(r.rel()) > twintest.Tolerance {
			bad = append(bad, fmt.Sprintf("%s %+.1f%%", r.Key, 100*r.rel()))
		}
	}
	require.Empty(t, bad, "judgments/s outside ±15%% of typevet's receipts")

	slow := sweepRows(sc, sc.sweep(ProfileH100Gemma4(), 1.3, "signatures"))
	var outside int
	for _, r := range slow {
		if math.Abs(r.rel()) > twintest.Tolerance {
			outside++
		}
	}
	require.Positive(t, outside, "a 30%% slower engine still reproduces the sweep: the check cannot fail\n%s", sweepTable(slow))
}

// The typevet simulation hands each chat request to the engine core as
// the served twin does (the profile's ingest after the frontend): a
// profile with an ingest latency judges more slowly by at least that
// much a judgment at c=1 (typevet's H100 profile has none, so its sweep
// is unchanged).
func TestTypevetSweepIngests(t *testing.T) {
	sc := newSimCalibration(t)
	base := sc.sweep(ProfileH100Gemma4(), 1, "signatures")
	p := ProfileH100Gemma4()
	p.IngestBase = 100 * time.Millisecond
	slow := sc.sweep(p, 1, "signatures")
	k := "signatures_subset_c1"
	require.Contains(t, base, k)
	extra := 1/slow[k].JPS - 1/base[k].JPS
	require.Greater(t, extra, 0.099, "each judgment's chat request waits the ingest: %.3f s more a judgment", extra)
}
