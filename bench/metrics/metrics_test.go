package metrics

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"

	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/speed"
	"github.com/vetbench/vetbench/receipts/tally"
)

func f(v float64) *float64 { return &v }

// receipt is typevet's CEDAR c16 run with the server figures of the
// scrape testdata.
func receipt() *receipts.Receipt {
	return &receipts.Receipt{
		Throughput: receipts.Throughput{
			WallSeconds: 13.363, Judgments: 60, Images: 120,
			JudgmentsPerSecond: 4.489868611455695, ImagesPerSecond: 8.97973722291139,
			Latency: receipts.Latency{N: 60, P50: 3.4076462700031698, P95: 3.9685543871019036, P99: 3.9721462880261242},
		},
		Server: &receipts.Server{
			Status:             scrape.StatusOK,
			PrefixCacheHitRate: f(0.5459789782449279),
			MMCacheHitRate:     f(260.0 / 360),
			Counters:           map[string]float64{scrape.Preemptions: 3},
			Histograms: map[string]receipts.Histogram{
				scrape.HistQueue: {Status: scrape.StatusOK, Count: 180, Sum: 4.5},
			},
		},
	}
}

func TestFromReceipt(t *testing.T) {
	got := FromReceipt(receipt())
	require.Equal(t, []Metric{
		{0, FailedItems},
		{0, DiscardedItems},
		{4.489868611455695, JudgmentsPerSec},
		{8.97973722291139, ImagesPerSec},
		{3.4076462700031698, P50Sec},
		{3.9685543871019036, P95Sec},
		{3.9721462880261242, P99Sec},
		{0.5459789782449279, PrefixHitRatio},
		{260.0 / 360, MMHitRatio},
		{4.5 / 180, QueueSec},
		{3, Preemptions},
	}, got)

	// Missing figures are left out, not zero.
	r := receipt()
	r.Server.PrefixCacheHitRate = nil
	r.Server.Histograms[scrape.HistQueue] = receipts.Histogram{Status: "unknown: bucket edges changed"}
	delete(r.Server.Counters, scrape.Preemptions)
	units := unitsOf(FromReceipt(r))
	require.NotContains(t, units, PrefixHitRatio)
	require.NotContains(t, units, QueueSec)
	require.NotContains(t, units, Preemptions)
	require.Contains(t, units, MMHitRatio)

	r.Server = nil
	require.Equal(t, []string{FailedItems, DiscardedItems, JudgmentsPerSec, ImagesPerSec, P50Sec, P95Sec, P99Sec}, unitsOf(FromReceipt(r)))
	require.Nil(t, FromReceipt(nil))

	// Off-format answers are an exact count, 0 included, when the receipt
	// knows the sampled tokens; unknown otherwise.
	r.OffFormat = &receipts.OffFormat{Answers: 84, Total: 0, ByQuestion: map[string]int{"verdict": 0}}
	require.Contains(t, FromReceipt(r), Metric{0, OffFormat})
	r.OffFormat.Total = 5
	require.Contains(t, FromReceipt(r), Metric{5, OffFormat})
	// Failures are reported as counted, also when nothing was kept.
	r = &receipts.Receipt{Throughput: receipts.Throughput{WallSeconds: 1, Failed: 136, Discarded: 3}}
	ms := FromReceipt(r)
	require.Equal(t, []Metric{{136, FailedItems}, {3, DiscardedItems}, {0, JudgmentsPerSec}, {0, ImagesPerSec}}, ms)
}

// Every point that kept one judgment, through the tally that makes its
// figures and with no server figures at all, reports each Assured unit,
// and each is one the speed gate tests (a direction, not exact): the
// least a gate counts before measuring holds.
func TestAssured(t *testing.T) {
	units := map[string]Unit{}
	for _, u := range Units() {
		units[u.Name] = u
	}
	for _, c := range []struct {
		open, slo bool
		n         int
	}{{false, false, 5}, {true, false, 6}, {false, true, 7}, {true, true, 8}} {
		ty := tally.Tally{Concurrency: 1, WallSeconds: 1, OpenLoop: c.open}
		if c.slo {
			ty.SLOSeconds = 0.001 // the judgment misses it: goodput 0, still reported
		}
		ty.Add(tally.Judgment{LatencySeconds: 0.5, Images: 1, Requests: 1})
		got := unitsOf(FromReceipt(&receipts.Receipt{Throughput: ty.Close()}))
		assured := Assured(c.open, c.slo)
		require.Len(t, assured, c.n)
		for _, u := range assured {
			require.Contains(t, got, u, "open %v slo %v", c.open, c.slo)
			require.NotEmpty(t, units[u].Better, u)
			require.False(t, units[u].Exact, u)
		}
	}
}

func unitsOf(ms []Metric) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Unit)
	}
	return out
}

// TestBenchstatReadsMetrics reports the metrics through a real
// testing.B, prints the result line as `go test -bench` does after the
// unit lines, and reads it all back with benchfmt: every unit must parse,
// carry its direction and exactness, and keep its value.
func TestBenchstatReadsMetrics(t *testing.T) {
	ms := append(FromReceipt(receipt()), Moved(2), Metric{3, OffFormat})
	// No timed loop: the figures come from the receipt, and without one
	// testing.Benchmark returns at once instead of filling -benchtime.
	res := testing.Benchmark(func(b *testing.B) {
		Report(b, ms) // panics on a unit with whitespace
	})

	var out bytes.Buffer
	out.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/vetbench/vetbench/bench\n")
	require.NoError(t, WriteUnits(&out))
	out.WriteString("BenchmarkJudgments/set=signatures/c=16-2\t" + res.String() + "\n")

	r := benchfmt.NewReader(strings.NewReader(out.String()), "bench.txt")
	var results []*benchfmt.Result
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Fatalf("benchfmt: %v", rec)
		case *benchfmt.Result:
			results = append(results, rec.Clone())
		}
	}
	require.NoError(t, r.Err())
	require.Len(t, results, 1)

	units := r.Units()
	for _, u := range Units() {
		better := units.Get(u.Name, "better")
		require.NotNil(t, better, "unit %s has no better= metadata", u.Name)
		want := 1
		if u.Better == Lower {
			want = -1
		}
		require.Equal(t, want, units.GetBetter(u.Name), u.Name)
		if u.Exact {
			require.Equal(t, benchmath.AssumeExact, units.GetAssumption(u.Name), u.Name)
		} else {
			require.Equal(t, benchmath.AssumeNothing, units.GetAssumption(u.Name), u.Name)
		}
	}

	res0 := results[0]
	require.Equal(t, "Judgments/set=signatures/c=16-2", string(res0.Name))
	for _, m := range ms {
		v, ok := res0.Value(m.Unit)
		require.True(t, ok, "unit %s missing from the result line", m.Unit)
		require.InDelta(t, m.Value, v, 1e-3*max(1, m.Value), m.Unit) // printed to 4 significant figures
	}
}

func TestUnitLines(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, WriteUnits(&out))
	require.Equal(t, `Unit judgments/s better=higher
Unit images/s better=higher
Unit p50-sec better=lower
Unit p95-sec better=lower
Unit p99-sec better=lower
Unit prefix-hit-ratio better=higher
Unit mm-hit-ratio better=higher
Unit queue-sec better=lower
Unit preemptions better=lower assume=exact
Unit moved-items better=lower assume=exact
Unit off-format better=lower assume=exact
Unit failed-items better=lower assume=exact
Unit discarded-items better=lower assume=exact
Unit client-queue-sec better=lower
Unit goodput better=higher
Unit good-judgments/s better=higher
`, out.String())
}

// What Writer writes reads back through benchfmt (as gate and benchstat
// read it) with the same names, units, values and configuration as go
// test's output of the same benchmark.
func TestWriter(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b, "model", "m1")
	ms := []Metric{{48.8, JudgmentsPerSec}, {0.3, P50Sec}, {2, Preemptions}}
	require.NoError(t, w.Write(PointName("checks", 16, receipts.ArmCold, false), 3, ms))
	require.NoError(t, w.Write(PointName("faces", 1, receipts.ArmWarm, true), 1, ms[:1]))
	out := b.String()
	require.True(t, strings.HasPrefix(out, "Unit judgments/s better=higher\n"), out)
	require.Equal(t, 1, strings.Count(out, "Unit p95-sec"), "units once")

	r := benchfmt.NewReader(strings.NewReader(out), "bench.txt")
	var results []*benchfmt.Result
	units := 0
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			results = append(results, rec.Clone())
		case *benchfmt.UnitMetadata:
			units++
		case *benchfmt.SyntaxError:
			t.Fatal(rec)
		}
	}
	require.NoError(t, r.Err())
	exact := 0
	for _, u := range Units() {
		if u.Exact {
			exact++
		}
	}
	require.Equal(t, len(Units())+exact, units, "better= for each unit, assume= for the counts")
	require.Len(t, results, 2)
	procs := ""
	if p := runtime.GOMAXPROCS(0); p != 1 {
		procs = fmt.Sprintf("-%d", p)
	}
	require.Equal(t, "Judgments/set=checks/c=16"+procs, results[0].Name.String())
	require.Equal(t, "Judgments/set=faces/c=1/arm=warm"+procs, results[1].Name.String())
	require.Equal(t, 3, results[0].Iters)
	for _, k := range []string{"goos", "goarch", "pkg", "model"} {
		require.NotEmpty(t, results[0].GetConfig(k), k)
	}
	require.Equal(t, Package, results[0].GetConfig("pkg"))
	v, ok := results[0].Value(JudgmentsPerSec)
	require.True(t, ok)
	require.Equal(t, 48.8, v)
	v, ok = results[0].Value(P50Sec)
	require.True(t, ok, results[0].Values)
	require.Equal(t, 0.3, v)

	// The line itself is go test's: tab-separated, numbers as testing
	// formats them, units sorted.
	require.Contains(t, out, "\nmodel: m1\nBenchmarkJudgments/set=checks/c=16"+procs+"\t       3\t        48.80 judgments/s\t         0.3000 p50-sec\t         2.000 preemptions\n")

	// The speed gate reads it as a whole output only once End has
	// written go test's last line: before, it is a run cut short.
	_, err := speed.Load(strings.NewReader(out), "bench.txt")
	require.ErrorIs(t, err, speed.ErrCut)
	for _, passed := range []bool{true, false} {
		var ended strings.Builder
		w := NewWriter(&ended, "model", "m1")
		require.NoError(t, w.Write(PointName("checks", 16, receipts.ArmCold, false), 3, ms))
		require.NoError(t, w.Write(PointName("faces", 1, receipts.ArmWarm, true), 1, ms[:1]))
		require.NoError(t, w.End(passed))
		s, err := speed.Load(strings.NewReader(ended.String()), "bench.txt")
		require.NoError(t, err, ended.String())
		require.Len(t, s.Benchmarks(), 2)
	}
	// A writer that wrote no result ends nothing: an empty bench.txt is no
	// result (a run that measured nothing), where a lone FAIL would be one.
	var empty strings.Builder
	require.NoError(t, NewWriter(&empty).End(false))
	require.Empty(t, empty.String())
}
