package speed_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/speed"
)

// truth describes one side's true performance; runs are drawn from it.
type truth struct {
	jps, p95 float64 // centers: judgments/s (higher better), p95-sec (lower better)
	cv       float64 // relative spread of a run
}

var base = truth{jps: 5.3, p95: 3.4, cv: 0.03}

// slowed is base with a 20% slowdown: 20% fewer judgments/s, p95 1.25x.
func slowed(t truth) truth { return truth{jps: t.jps * 0.8, p95: t.p95 * 1.25, cv: t.cv} }

// benchOutput draws count runs of two sets from a seeded RNG and writes
// them as go test -bench output with the Unit lines our benchmarks print.
func benchOutput(rng *rand.Rand, s truth, count int, target string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "goos: linux\ngoarch: amd64\npkg: github.com/vetbench/vetbench/bench\ntarget: %s\n", target)
	b.WriteString("Unit judgments/s better=higher\nUnit p95-sec better=lower\nUnit moved-items better=lower assume=exact\n")
	draw := func(center float64) float64 { return center * (1 + s.cv*rng.NormFloat64()) }
	for range count {
		for _, set := range []string{"checks", "faces"} {
			fmt.Fprintf(&b, "BenchmarkJudgments/set=%s/c=16-2 \t       1\t%d ns/op\t%.4f judgments/s\t%.4f p95-sec\t0 moved-items\n",
				set, int64(draw(2.6e10)), draw(s.jps), draw(s.p95))
		}
	}
	b.WriteString("PASS\nok  \tgithub.com/vetbench/vetbench/bench\t60.1s\n")
	return b.String()
}

func load(t testing.TB, seed uint64, s truth, count int) *speed.Samples {
	t.Helper()
	sm, err := speed.Load(strings.NewReader(benchOutput(rand.New(rand.NewPCG(seed, 9)), s, count, "x")), "gen")
	require.NoError(t, err)
	return sm
}

// lines writes one benchmark's runs, one value each, as go test -bench
// output in unit u (declared better=higher).
func lines(u string, vs ...float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Unit %s better=higher\n", u)
	for _, v := range vs {
		fmt.Fprintf(&b, "BenchmarkX-2 1 %g %s\n", v, u)
	}
	return b.String()
}

func verdicts(r *speed.Report) map[string]speed.Verdict {
	m := map[string]speed.Verdict{}
	for _, x := range r.Metrics {
		m[x.Benchmark+" "+x.Unit] = x.Verdict
	}
	return m
}

// The decision on samples whose truth is known: a 20% shift fails, equal
// distributions pass, a shift inside the margin passes, and runs too few
// to ever reach significance leave no verdict (never a pass).
func TestDecideKnownShifts(t *testing.T) {
	t.Parallel()
	ten := []float64{100, 101, 102, 103, 104, 105, 106, 107, 108, 109}
	scaled := func(k float64) []float64 {
		out := make([]float64, len(ten))
		for i, v := range ten {
			out[i] = k * v
		}
		return out
	}
	cases := []struct {
		name      string
		base      string
		cand      string
		verdict   speed.Verdict
		passed    bool
		noVerdict bool
	}{
		{"20% slower fails", lines("ops/s", ten...), lines("ops/s", scaled(0.8)...), speed.Worse, false, false},
		{"identical samples pass", lines("ops/s", ten...), lines("ops/s", ten...), speed.Same, true, false},
		{"same distribution, other order passes", lines("ops/s", ten...), lines("ops/s", 109, 100, 108, 101, 107, 102, 106, 103, 105, 104), speed.Same, true, false},
		{"3% slower is inside the 5% margin", lines("ops/s", ten...), lines("ops/s", scaled(0.97)...), speed.Same, true, false},
		{"20% faster is better, not a failure", lines("ops/s", ten...), lines("ops/s", scaled(1.2)...), speed.Better, true, false},
		{"3 runs each cannot decide", lines("ops/s", 100, 101, 102), lines("ops/s", 80, 81, 82), speed.FewRuns, false, true},
		{"4 runs each can, alone", lines("ops/s", 100, 101, 102, 103), lines("ops/s", 80, 81, 82, 83), speed.Worse, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, err := speed.Load(strings.NewReader(c.base), "base")
			require.NoError(t, err)
			cd, err := speed.Load(strings.NewReader(c.cand), "cand")
			require.NoError(t, err)
			rep := speed.Decide(b, cd, speed.DefaultPolicy())
			require.Equal(t, map[string]speed.Verdict{"X-2 ops/s": c.verdict}, verdicts(rep))
			require.Equal(t, c.passed, rep.Passed, rep.Failures)
			require.Equal(t, c.noVerdict, rep.NoVerdict(), rep.Problems)
			require.Equal(t, !c.passed && !c.noVerdict, rep.Failed())
			if c.noVerdict {
				require.Contains(t, rep.Problems[0], "too few runs: with 1 tested metric Holm needs p < 0.05; 3 vs 3 runs reach at best p = 0.1; use -count 4 or more")
			}
		})
	}
}

// The generated suite (two sets, three gated units each with sec/op),
// drawn with noise: a 20% slower candidate fails on every speed metric and
// on nothing else; the reverse is a pass.
func TestDecideSlowdownFailsOnEveryMetric(t *testing.T) {
	t.Parallel()
	b, c := load(t, 11, base, 10), load(t, 12, slowed(base), 10)
	rep := speed.Decide(b, c, speed.DefaultPolicy())
	require.Equal(t, map[string]speed.Verdict{
		"Judgments/set=checks/c=16-2 judgments/s": speed.Worse,
		"Judgments/set=checks/c=16-2 p95-sec":     speed.Worse,
		"Judgments/set=checks/c=16-2 moved-items": speed.Same,
		"Judgments/set=checks/c=16-2 sec/op":      speed.Same,
		"Judgments/set=faces/c=16-2 judgments/s":  speed.Worse,
		"Judgments/set=faces/c=16-2 p95-sec":      speed.Worse,
		"Judgments/set=faces/c=16-2 moved-items":  speed.Same,
		"Judgments/set=faces/c=16-2 sec/op":       speed.Same,
	}, verdicts(rep))
	require.Equal(t, 8, rep.Gated)
	require.Equal(t, 4, rep.Worse)
	require.True(t, rep.Failed())
	require.Contains(t, strings.Join(rep.Failures, "\n"), "Judgments/set=checks/c=16-2 judgments/s: candidate -")

	rev := speed.Decide(c, b, speed.DefaultPolicy())
	require.True(t, rev.Passed)
	require.Zero(t, rev.Worse)
}

// The decision's error rates, over many seeds: a candidate equal to the
// baseline rarely fails (the test's alpha bounds it), a 20% slower one
// with -count 10 nearly always does. Seeded: the counts are the same on
// every run.
func TestDecideErrorRates(t *testing.T) {
	t.Parallel()
	p := speed.DefaultPolicy()
	slower := truth{jps: base.jps * 0.8, p95: base.p95 * 1.25, cv: 0.08}
	noisy := truth{jps: base.jps, p95: base.p95, cv: 0.08}
	perMetric := p
	perMetric.Holm = false
	const n = 200
	falseAlarms, misses, perMetricAlarms := 0, 0, 0
	for i := range uint64(n) {
		b, c, s := load(t, 2*i, noisy, 10), load(t, 2*i+1, noisy, 10), load(t, 1000+i, slower, 10)
		if !speed.Decide(b, c, p).Passed {
			falseAlarms++
		}
		if !speed.Decide(b, c, perMetric).Passed {
			perMetricAlarms++
		}
		if speed.Decide(b, s, p).Passed {
			misses++
		}
	}
	require.LessOrEqual(t, falseAlarms, n/10, "equal candidates failed %d of %d", falseAlarms, n)
	require.LessOrEqual(t, misses, n/100, "20%% slower candidates passed %d of %d", misses, n)
	require.GreaterOrEqual(t, perMetricAlarms, falseAlarms, "Holm never fails more often than per-metric tests")
	t.Logf("false alarms %d/%d (per-metric alpha: %d/%d), misses %d/%d (cv 8%%, -count 10, 6 noisy metrics)", falseAlarms, n, perMetricAlarms, n, misses, n)
}

// An output cut short is refused, never compared as if it were whole: one
// that ends mid-line, and go test output without go test's last line. The
// whole output (and hand-made input without a pkg: line) loads.
func TestLoadRefusesCutOutput(t *testing.T) {
	t.Parallel()
	full := benchOutput(rand.New(rand.NewPCG(1, 1)), base, 4, "x")
	_, err := speed.Load(strings.NewReader(full), "full")
	require.NoError(t, err)
	withFail := strings.Replace(full, "PASS\nok  \tgithub.com/vetbench/vetbench/bench\t60.1s\n", "--- FAIL: BenchmarkJudgments/set=faces\nFAIL\nexit status 1\nFAIL\tgithub.com/vetbench/vetbench/bench\t3.1s\n", 1)
	require.NotEqual(t, full, withFail)
	_, err = speed.Load(strings.NewReader(withFail), "failed run")
	require.NoError(t, err, "a run that failed ended: its lines load (Decide fails it: TestOutputThatEndsFailIsAFailedRun)")
	for _, cut := range []int{len(full) / 2, strings.LastIndex(full[:len(full)/2], "\n") + 1, strings.Index(full, "PASS")} {
		_, err := speed.Load(strings.NewReader(full[:cut]), "cut")
		require.ErrorIs(t, err, speed.ErrCut, "cut at %d", cut)
	}
	_, err = speed.Load(strings.NewReader("BenchmarkX-2 1 5 widgets\nBenchmarkX-2 1 6 widgets\n"), "hand-made")
	require.NoError(t, err)
}

func TestDecideCandidateShape(t *testing.T) {
	t.Parallel()
	good := load(t, 1, base, 10)
	var b strings.Builder
	for _, line := range strings.Split(benchOutput(rand.New(rand.NewPCG(2, 1)), base, 10, "B"), "\n") {
		if !strings.Contains(line, "set=faces") {
			b.WriteString(line + "\n")
		}
	}
	noFaces, err := speed.Load(strings.NewReader(b.String()), "nofaces")
	require.NoError(t, err)

	// A gated benchmark the candidate lost (a cut output) leaves no
	// verdict; one it gained is listed.
	rep := speed.Decide(good, noFaces, speed.DefaultPolicy())
	require.True(t, rep.NoVerdict())
	require.False(t, rep.Passed)
	require.Contains(t, rep.Problems, "Judgments/set=faces/c=16-2 judgments/s: missing from the candidate (output cut short, or the point did not run)")
	require.Equal(t, speed.Missing, verdicts(rep)["Judgments/set=faces/c=16-2 judgments/s"])
	rep = speed.Decide(noFaces, good, speed.DefaultPolicy())
	require.True(t, rep.Passed)
	require.Equal(t, speed.New, verdicts(rep)["Judgments/set=faces/c=16-2 judgments/s"])

	// A failure count the baseline never recorded fails when nonzero, and
	// only then.
	withFailed := func(n int) *speed.Samples {
		var b strings.Builder
		b.WriteString("Unit failed-items better=lower assume=exact\n")
		for _, line := range strings.Split(benchOutput(rand.New(rand.NewPCG(2, 1)), base, 10, "B"), "\n") {
			if strings.HasPrefix(line, "Benchmark") {
				line += fmt.Sprintf("\t%d failed-items", n)
			}
			b.WriteString(line + "\n")
		}
		s, err := speed.Load(strings.NewReader(b.String()), "failed")
		require.NoError(t, err)
		return s
	}
	rep = speed.Decide(good, withFailed(0), speed.DefaultPolicy())
	require.True(t, rep.Passed, "%v %v", rep.Failures, rep.Problems)
	rep = speed.Decide(good, withFailed(136), speed.DefaultPolicy())
	require.True(t, rep.Failed())
	require.Contains(t, strings.Join(rep.Failures, "\n"), "failed-items: 136 in the candidate, not recorded in the baseline")

	// Nothing with a direction: no verdict.
	nu, err := speed.Load(strings.NewReader("BenchmarkX-2 1 5 widgets\nBenchmarkX-2 1 6 widgets\n"), "nounits")
	require.NoError(t, err)
	rep = speed.Decide(nu, nu, speed.DefaultPolicy())
	require.True(t, rep.NoVerdict())
	require.Contains(t, rep.Problems[0], "nothing to gate")

	// Both sides declare a direction, and they disagree: no verdict.
	up, err := speed.Load(strings.NewReader(lines("w", 1, 2, 3, 4, 5, 6)), "up")
	require.NoError(t, err)
	down, err := speed.Load(strings.NewReader(strings.Replace(lines("w", 1, 2, 3, 4, 5, 6), "better=higher", "better=lower", 1)), "down")
	require.NoError(t, err)
	rep = speed.Decide(up, down, speed.DefaultPolicy())
	require.True(t, rep.NoVerdict())
	require.Equal(t, speed.DirectionConflict, verdicts(rep)["X-2 w"])
}

func TestLoad(t *testing.T) {
	t.Parallel()
	_, err := speed.Load(strings.NewReader("BenchmarkX-2 1 5 widgets\nBenchmarkY-2 x 5 widgets\n"), "bad.txt")
	require.ErrorContains(t, err, "bad.txt: malformed benchmark lines")
	_, err = speed.Load(strings.NewReader("PASS\n"), "empty.txt")
	require.ErrorContains(t, err, "empty.txt: no benchmark results")
	_, err = speed.LoadFile("testdata/nope.txt")
	require.ErrorContains(t, err, "no such file")

	s := load(t, 3, base, 4)
	require.Equal(t, []string{"Judgments/set=checks/c=16-2", "Judgments/set=faces/c=16-2"}, s.Benchmarks())
	require.Len(t, s.Values("Judgments/set=faces/c=16-2", "judgments/s"), 4)
	require.Nil(t, s.Values("Judgments/set=faces/c=16-2", "furlongs"))
}

func TestVaryingConfig(t *testing.T) {
	t.Parallel()
	a := load(t, 1, base, 2) // target: x
	other, err := speed.Load(strings.NewReader(strings.Replace(benchOutput(rand.New(rand.NewPCG(1, 1)), base, 2, "y"), "goos: linux\n", "goos: linux\nextra: 1\n", 1)), "other")
	require.NoError(t, err)
	require.Empty(t, speed.VaryingConfig(a, a))
	require.Equal(t, []string{"extra", "target"}, speed.VaryingConfig(a, other))
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, speed.DefaultPolicy().Validate())
	for _, mutate := range []func(p *speed.Policy){
		func(p *speed.Policy) { p.Margin = -0.1 },
		func(p *speed.Policy) { p.Alpha = 0 },
		func(p *speed.Policy) { p.Alpha = 1 },
		func(p *speed.Policy) { p.Confidence = 1.5 },
	} {
		p := speed.DefaultPolicy()
		mutate(&p)
		require.Error(t, p.Validate(), "%+v", p)
	}
}

func TestMinUTestP(t *testing.T) {
	t.Parallel()
	require.InDelta(t, 0.1, speed.MinUTestP(3, 3), 1e-12)          // 2/C(6,3)
	require.InDelta(t, 2.0/70, speed.MinUTestP(4, 4), 1e-12)       // 2/C(8,4)
	require.InDelta(t, 2.0/184756, speed.MinUTestP(10, 10), 1e-15) // 2/C(20,10)
	require.Equal(t, 1.0, speed.MinUTestP(0, 5))
}

// The JSON form is the vetbench.gate/v1 contract.
func TestReportJSONContract(t *testing.T) {
	t.Parallel()
	rep := speed.Decide(load(t, 11, base, 10), load(t, 12, slowed(base), 10), speed.DefaultPolicy())
	data, err := json.Marshal(rep)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	require.Equal(t, "vetbench.gate/v1", m["schema"])
	for _, k := range []string{"policy", "metrics", "gated", "worse", "failures", "problems", "passed", "identity", "power"} {
		require.Contains(t, m, k)
	}
	require.Equal(t, map[string]any{"margin": 0.05, "alpha": 0.05, "confidence": 0.95, "holm": true, "allow_identity_drift": false, "allow_few_runs": false}, m["policy"])
	// 6 metrics the U test decides (moved-items, exact, aside), 10 runs a side.
	require.Equal(t, map[string]any{"tested": 6.0, "threshold": 0.05 / 6, "min_count": 5.0, "too_few_runs": 0.0, "allowed": false}, m["power"])
	require.Equal(t, map[string]any{"differs": []any{}, "changed": []any{}, "unverified": []any{}, "allowed": false}, m["identity"])
	mt := m["metrics"].([]any)[1].(map[string]any)
	for _, k := range []string{"benchmark", "unit", "better", "baseline", "candidate", "delta", "p", "min_p", "verdict", "significant"} {
		require.Contains(t, mt, k)
	}
	require.Equal(t, "worse", mt["verdict"])
	require.InDelta(t, 2.0/184756, mt["min_p"], 1e-15)
	for _, k := range []string{"center", "lo", "hi", "n", "range"} {
		require.Contains(t, mt["baseline"], k)
	}
}
