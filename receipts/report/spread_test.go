package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

// passRun writes a run directory of one point (checks c=1) measured in
// len(jps) passes — receipts/, receipts/pass2 … — the k-th receipt at
// jps[k] judgments/s; bench, when not empty, is its bench.txt.
func passRun(t *testing.T, jps []float64, bench string) string {
	t.Helper()
	src, err := receipts.ReadFile(filepath.Join("testdata", "base", "receipts", "checks_c1.json"))
	require.NoError(t, err)
	dir := t.TempDir()
	for k, v := range jps {
		pass := filepath.Join(dir, "receipts")
		if k > 0 {
			pass = filepath.Join(pass, fmt.Sprintf("pass%d", k+1))
		}
		require.NoError(t, os.MkdirAll(pass, 0o755))
		rc := src.Clone()
		rc.Throughput.JudgmentsPerSecond = v
		require.NoError(t, receipts.WriteFile(filepath.Join(pass, "checks_c1.json"), rc))
	}
	if bench != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, BenchName), []byte(bench), 0o644))
	}
	return dir
}

// benchLines is a bench.txt of checks c=1 whose lines report jps.
func benchLines(jps ...float64) string {
	s := "Unit judgments/s better=higher\n"
	for _, v := range jps {
		s += fmt.Sprintf("BenchmarkJudgments/set=checks/c=1-2 \t 1 \t %g judgments/s\n", v)
	}
	return s
}

// throughputPoint is the throughput chart's point of the run's series.
func throughputPoint(t *testing.T, rep *Report, series string) Point {
	t.Helper()
	for _, s := range rep.Sections {
		for _, ch := range s.Charts {
			lc, ok := ch.(LineChart)
			if !ok || !strings.HasSuffix(lc.Title, ": throughput") {
				continue
			}
			for _, ser := range lc.Series {
				if ser.Name == series {
					require.Len(t, ser.Points, 1)
					return ser.Points[0]
				}
			}
		}
	}
	t.Fatalf("no throughput series %q", series)
	return Point{}
}

// TestSpreadOfPasses: a run of three passes at 10, 30 and 20 judgments/s
// draws its point at the median, 20, with a 10–30 bar, and says so on
// hover and in the table — not the first pass's 10. The mutated input
// (the third pass at 40) moves the median to 30: the figure is the passes',
// not a constant. A single pass draws no bar.
func TestSpreadOfPasses(t *testing.T) {
	t.Parallel()
	get := func(jps ...float64) (Point, *Report) {
		run, err := Load(passRun(t, jps, ""), "run")
		require.NoError(t, err)
		require.Len(t, run.Passes, len(jps)-1)
		rep := build(t, run, nil)
		return throughputPoint(t, rep, "run"), rep
	}
	p, rep := get(10, 30, 20)
	require.Equal(t, Point{X: 1, Y: 20, Lo: 10, Hi: 30, Tip: "c=1: median 20 judgments/s, min–max 10–30 over 3 passes (receipts)"}, p)
	speedRow := csvs(t, rep)["speed_checks.csv"][1]
	require.Equal(t, []string{"run", "cold", "1", "3", "20", "10", "30"}, speedRow[:7])
	page := html(t, rep)
	pageHas(t, page, `class="spread"`)
	pageHas(t, page, "min–max of 3 passes")

	mutated, _ := get(10, 30, 40)
	require.Equal(t, 30.0, mutated.Y, "the median follows the passes")
	require.Equal(t, 40.0, mutated.Hi)

	single, rep := get(10)
	require.Equal(t, Point{X: 1, Y: 10, Lo: 10, Hi: 10, Tip: "c=1: 10 judgments/s"}, single)
	page = html(t, rep)
	pageLacks(t, page, `class="spread"`, "one pass, no bar")
	pageHas(t, page, "run: one pass, no spread")
}

// TestSpreadIsTheGates: with a bench.txt the point is the gate's median
// of its lines (speed.Samples.Summary, what Decide compares), not the
// receipts' — the 14.37 shown where the gate's median is 14.46.
// The control: the same receipts without the bench.txt give the
// receipts' median.
func TestSpreadIsTheGates(t *testing.T) {
	t.Parallel()
	receiptsJPS := []float64{14.37, 14.20, 14.25}
	dir := passRun(t, receiptsJPS, benchLines(14.46, 14.37, 14.61))
	run, err := Load(dir, "baseline")
	require.NoError(t, err)
	p := throughputPoint(t, build(t, run, nil), "baseline")
	gate := run.Bench.Summary("Judgments/set=checks/c=1-2", "judgments/s", DefaultOptions().Speed)
	require.Equal(t, 14.46, gate.Center)
	require.Equal(t, Point{X: 1, Y: gate.Center, Lo: 14.37, Hi: 14.61,
		Tip: "c=1: median 14.46 judgments/s, min–max 14.37–14.61 over 3 passes (bench.txt)"}, p)

	require.NoError(t, os.Remove(filepath.Join(dir, BenchName)))
	run, err = Load(dir, "baseline")
	require.NoError(t, err)
	require.Equal(t, 14.25, throughputPoint(t, build(t, run, nil), "baseline").Y, "control: without bench.txt, the receipts' median")
}

// TestCurvesAreTheGatesMedians: on the golden pair every throughput and
// p95 point of both runs is the speed gate's median of that benchmark,
// metric by metric.
func TestCurvesAreTheGatesMedians(t *testing.T) {
	t.Parallel()
	b := &builder{base: load(t, "base", "baseline"), cand: load(t, "cand", "candidate"), opt: DefaultOptions(), rep: &Report{}}
	rep := build(t, b.base, b.cand)
	b.decideGate()
	centers := map[string]float64{}
	for _, m := range b.gate.Metrics {
		centers["baseline "+m.Benchmark+" "+m.Unit] = m.Baseline.Center
		centers["candidate "+m.Benchmark+" "+m.Unit] = m.Candidate.Center
	}
	checked := 0
	for _, s := range rep.Sections {
		for _, ch := range s.Charts {
			lc, ok := ch.(LineChart)
			if !ok || !strings.HasPrefix(s.ID, "set-") {
				continue
			}
			unit := map[string]string{"throughput": "judgments/s", "p95 latency of a judgment": "p95-sec"}[strings.SplitN(lc.Title, ": ", 2)[1]]
			if unit == "" {
				continue
			}
			for _, ser := range lc.Series {
				for _, p := range ser.Points {
					key := fmt.Sprintf("%s Judgments/set=%s/c=%d-2 %s", ser.Name, strings.TrimPrefix(s.ID, "set-"), int(p.X), unit)
					want, ok := centers[key]
					require.True(t, ok, key)
					require.Equal(t, want, p.Y, key)
					require.LessOrEqual(t, p.Lo, p.Y)
					require.GreaterOrEqual(t, p.Hi, p.Y)
					checked++
				}
			}
		}
	}
	require.Equal(t, 2*2*2*3, checked, "2 sets × 2 charts × 2 runs × 3 levels")
}

func TestBenchPoints(t *testing.T) {
	t.Parallel()
	got := benchPoints([]string{"Judgments/set=checks/c=4-2", "Judgments/set=faces/c=16/arm=warm-16", "Judgments/set=faces/c=1",
		"Judgments/set=faces/rate=2.5", "TokensText/workload=text/c=4-2", "Judgments/set=x/c=y-2"})
	require.Equal(t, map[Key]string{
		{Set: "checks", C: 4}:              "Judgments/set=checks/c=4-2",
		{Set: "faces", Arm: "warm", C: 16}: "Judgments/set=faces/c=16/arm=warm-16",
		{Set: "faces", C: 1}:               "Judgments/set=faces/c=1",
	}, got)
	r := &Run{benchNames: got}
	name, ok := r.benchName(Key{Set: "checks", Arm: "cold", C: 4})
	require.True(t, ok, "a one-arm run names no arm")
	require.Equal(t, "Judgments/set=checks/c=4-2", name)
	_, ok = r.benchName(Key{Set: "faces", Arm: "cold", C: 16})
	require.False(t, ok, "the warm arm's line is not the cold arm's")
}
