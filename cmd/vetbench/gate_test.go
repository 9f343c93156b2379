package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/receipts/speed"
	"github.com/vetbench/vetbench/stub"
)

// truth describes one side's true performance; runs are drawn from it.
type truth struct {
	jps, p95 float64 // centers: judgments/s (higher better), p95-sec (lower better)
	cv       float64 // relative spread of a run
}

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

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

var base = truth{jps: 5.3, p95: 3.4, cv: 0.03}

func TestGateFiles(t *testing.T) {
	t.Parallel()
	slower := truth{jps: base.jps * 0.8, p95: base.p95 * 1.25, cv: base.cv}
	noisy := truth{jps: base.jps, p95: base.p95, cv: 0.15}
	cases := []struct {
		name       string
		b, c       truth
		count      int
		code       int
		wantOut    string
		seedB, sdC uint64
	}{
		{"20% slower fails", base, slower, 10, exitFail, "judgments/s: candidate -", 1, 2},
		{"unchanged passes", base, base, 10, exitPass, "PASS: 8 gated metrics", 3, 4},
		{"noisy but equal passes", noisy, noisy, 10, exitPass, "PASS", 5, 6},
		{"too few runs cannot decide", base, slower, 3, exitNoVerdict, "too few runs: with 6 tested metrics Holm needs p < 0.00833; 3 vs 3 runs reach at best p = 0.1; use -count 5 or more", 7, 8},
		{"5 runs suffice for 6 metrics", base, slower, 5, exitFail, "judgments/s: candidate -", 7, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bf := writeFile(t, dir, "base.txt", benchOutput(rand.New(rand.NewPCG(c.seedB, 1)), c.b, c.count, "A"))
			cf := writeFile(t, dir, "cand.txt", benchOutput(rand.New(rand.NewPCG(c.sdC, 1)), c.c, c.count, "B"))
			stdout, stderr, code := run(t, "gate", "-benchstat=false", bf, cf)
			require.Equal(t, c.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.Contains(t, stdout, c.wantOut)
		})
	}
}

func TestGateSlowdownFailsOnEveryMetric(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bf := writeFile(t, dir, "base.txt", benchOutput(rand.New(rand.NewPCG(11, 1)), base, 10, "A"))
	slower := truth{jps: base.jps * 0.8, p95: base.p95 * 1.25, cv: base.cv}
	cf := writeFile(t, dir, "cand.txt", benchOutput(rand.New(rand.NewPCG(12, 1)), slower, 10, "B"))
	stdout, _, code := run(t, "gate", "-json", bf, cf)
	require.Equal(t, exitFail, code)
	var rep speed.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	verdicts := map[string]speed.Verdict{}
	for _, m := range rep.Metrics {
		verdicts[m.Benchmark+" "+m.Unit] = m.Verdict
	}
	require.Equal(t, map[string]speed.Verdict{
		"Judgments/set=checks/c=16-2 judgments/s": speed.Worse,
		"Judgments/set=checks/c=16-2 p95-sec":     speed.Worse,
		"Judgments/set=checks/c=16-2 moved-items": speed.Same,
		"Judgments/set=checks/c=16-2 sec/op":      speed.Same,
		"Judgments/set=faces/c=16-2 judgments/s":  speed.Worse,
		"Judgments/set=faces/c=16-2 p95-sec":      speed.Worse,
		"Judgments/set=faces/c=16-2 moved-items":  speed.Same,
		"Judgments/set=faces/c=16-2 sec/op":       speed.Same,
	}, verdicts)
	require.Equal(t, 8, rep.Gated)
	require.Equal(t, 4, rep.Worse)
	// A better candidate is not a failure.
	stdout, _, code = run(t, "gate", "-json", cf, bf)
	require.Equal(t, exitPass, code)
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	require.Zero(t, rep.Worse)
}

// A run directory stands for its bench.txt (vetbench gate out/runs/a
// out/runs/b): the same verdict and figures as the files; a directory
// without one is refused, saying it is a directory.
func TestGateRunDirectories(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bd, cd := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	require.NoError(t, os.MkdirAll(bd, 0o755))
	require.NoError(t, os.MkdirAll(cd, 0o755))
	bf := writeFile(t, bd, "bench.txt", benchOutput(rand.New(rand.NewPCG(11, 1)), base, 10, "A"))
	slower := truth{jps: base.jps * 0.8, p95: base.p95 * 1.25, cv: base.cv}
	cf := writeFile(t, cd, "bench.txt", benchOutput(rand.New(rand.NewPCG(12, 1)), slower, 10, "B"))
	files, _, code := run(t, "gate", bf, cf)
	require.Equal(t, exitFail, code)
	dirs, stderr, code := run(t, "gate", bd, cd)
	require.Equal(t, exitFail, code, stderr)
	require.Equal(t, files, dirs)

	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.MkdirAll(empty, 0o755))
	_, stderr, code = run(t, "gate", empty, cd)
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, "baseline: read "+empty+": not a regular file (a directory)")
}

func TestGateBadInputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFile(t, dir, "good.txt", benchOutput(rand.New(rand.NewPCG(1, 1)), base, 10, "A"))
	noUnits := writeFile(t, dir, "nounits.txt", "BenchmarkX-2 1 5 widgets\nBenchmarkX-2 1 6 widgets\n")
	malformed := writeFile(t, dir, "bad.txt", "BenchmarkX-2 1 5 widgets\nBenchmarkY-2 x 5 widgets\n")
	empty := writeFile(t, dir, "empty.txt", "PASS\n")
	var missing strings.Builder
	for _, line := range strings.Split(benchOutput(rand.New(rand.NewPCG(2, 1)), base, 10, "B"), "\n") {
		if !strings.Contains(line, "set=faces") {
			missing.WriteString(line + "\n")
		}
	}
	noFaces := writeFile(t, dir, "nofaces.txt", missing.String())
	// A candidate bench.txt cut short, mid-line and at a line's end, as a
	// run killed while writing leaves it: it cannot be compared (2), it is
	// not "worse" (1).
	full := benchOutput(rand.New(rand.NewPCG(2, 1)), base, 10, "B")
	cutMid := writeFile(t, dir, "cut_mid.txt", full[:len(full)*2/3])
	cutLine := writeFile(t, dir, "cut_line.txt", full[:strings.LastIndex(full[:len(full)*2/3], "\n")+1])
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"nothing to gate", []string{noUnits, noUnits}, exitNoVerdict, "nothing to gate"},
		{"malformed line", []string{malformed, malformed}, exitNoVerdict, "malformed benchmark lines"},
		{"no results", []string{empty, good}, exitNoVerdict, "no benchmark results"},
		{"missing file", []string{filepath.Join(dir, "nope.txt"), good}, exitNoVerdict, "no such file"},
		{"benchmark missing in candidate", []string{good, noFaces}, exitNoVerdict, "Judgments/set=faces/c=16-2 judgments/s: missing from the candidate"},
		{"candidate cut mid-line", []string{good, cutMid}, exitNoVerdict, "output cut short"},
		{"candidate cut at a line", []string{good, cutLine}, exitNoVerdict, "output cut short"},
		{"one argument", []string{good}, exitNoVerdict, "usage: vetbench gate"},
		{"bad flag", []string{"-margin", "x", good, good}, exitNoVerdict, "invalid value"},
	}
	for _, c := range cases {
		stdout, stderr, code := run(t, append([]string{"gate", "-benchstat=false"}, c.args...)...)
		require.Equal(t, c.code, code, "%s: %s%s", c.name, stdout, stderr)
		require.Contains(t, stdout+stderr, c.want, c.name)

		// With -json stdout always holds one JSON document: the report
		// (when there is one) or an error object, never nothing.
		stdout, stderr, code = run(t, append([]string{"gate", "-json"}, c.args...)...)
		require.Equal(t, c.code, code, "%s -json: %s", c.name, stderr)
		var doc struct {
			Schema string `json:"schema"`
			Error  string `json:"error"`
			Exit   int    `json:"exit"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &doc), "%s -json: %q", c.name, stdout)
		switch doc.Schema {
		case ErrorSchema:
			require.NotEmpty(t, doc.Error, c.name)
			require.Equal(t, c.code, doc.Exit, c.name)
		case speed.ReportSchema:
		default:
			t.Fatalf("%s -json: schema %q", c.name, doc.Schema)
		}
	}
}

// gate -run measures in this process, needs no source tree (it runs from
// an empty working directory here) and interleaves two live targets
// A B, B A, A B. Each side is a run directory of its own under a new
// out/runs/<id>, with every run's receipts and bench.txt, and nothing is
// written anywhere else. Three runs a side can never reach significance,
// so the verdict is a certain exit 2, whatever the machine's timing.
func TestGateRunInterleaves(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	var twins []string
	for range 2 {
		srv, err := stub.Start(stub.Config{DevMode: true})
		require.NoError(t, err)
		t.Cleanup(func() { srv.Close() })
		twins = append(twins, srv.URL())
	}
	environ := map[string]string{"VETBENCH_FIXTURE_SIZE": "1", "VETBENCH_SETS": "checks", "VETBENCH_LEVELS": "2"}
	stdout, stderr, code := runWith(t, environ, "gate", "-run", "-count", "3", "-benchstat=false", twins[0], twins[1])
	require.Equal(t, exitNoVerdict, code, stdout+stderr)
	require.Contains(t, stdout, "too few runs: ")

	var order []string
	for _, line := range strings.Split(stderr, "\n") {
		if _, rest, ok := strings.Cut(line, "done ("); ok {
			order = append(order, strings.Fields(rest)[0]+" "+strings.TrimSuffix(strings.Fields(rest)[1], ","))
		}
	}
	require.Equal(t, []string{"baseline 1/3", "candidate 1/3", "candidate 2/3", "baseline 2/3", "baseline 3/3", "candidate 3/3"}, order, stderr)

	entries, err := os.ReadDir(wd)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only out/")
	runs, err := filepath.Glob(filepath.Join(wd, "out", "runs", "*"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	for _, side := range []string{"baseline", "candidate"} {
		dir := filepath.Join(runs[0], side)
		for _, p := range []string{"receipts/checks_c2.json", "receipts/pass2/checks_c2.json", "receipts/pass3/checks_c2.json", "settings.toml"} {
			require.FileExists(t, filepath.Join(dir, p))
		}
		s, err := speed.LoadFile(filepath.Join(dir, "bench.txt"))
		require.NoError(t, err, side)
		require.NotNil(t, s)
		bench, err := os.ReadFile(filepath.Join(dir, "bench.txt"))
		require.NoError(t, err)
		require.Equal(t, 3, strings.Count(string(bench), "BenchmarkJudgments/set=checks/c=2"), "one line per run")
	}
	settings, err := os.ReadFile(filepath.Join(runs[0], "candidate", "settings.toml"))
	require.NoError(t, err)
	require.Contains(t, string(settings), `endpoint = "`+twins[1]+`"`)

	// A named directory that holds results is refused, as for vetbench run.
	_, stderr, code = runWith(t, environ, "gate", "-run", "-count", "3", "-out", runs[0], twins[0], twins[1])
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, "holds results of an earlier run")

	// A file against the in-process twin: -count runs of the live side only.
	cand := filepath.Join(runs[0], "candidate", "bench.txt")
	stdout, stderr, code = runWith(t, environ, "gate", "-run", "-count", "3", "-benchstat=false", "-out", "second", "inprocess", cand)
	require.Equal(t, exitNoVerdict, code, stdout+stderr)
	require.Contains(t, stderr, "run 3/3 done (baseline 3/3, target inprocess)")
	require.NotContains(t, stderr, "candidate 1/3")
	require.FileExists(t, filepath.Join(wd, "second", "baseline", "receipts", "pass3", "checks_c2.json"))
	require.NoDirExists(t, filepath.Join(wd, "second", "candidate"))

	_, _, code = run(t, "gate", "-run", "http://user:pw@a:8000", "http://b:8000")
	require.Equal(t, exitNoVerdict, code, "credentials on the command line are refused")
}

// sideFile writes n runs of a side read from a file: one benchmark line a
// run for each of levels of set checks, named as the live side names
// them, with units[i] the units of levels[i]; exact declares a unit
// assume=exact (compared exactly, not by the U test).
func sideFile(t *testing.T, dir string, n int, exact string, levels []int, units ...[]string) string {
	t.Helper()
	var b strings.Builder
	for _, u := range metrics.Units() {
		if !u.Exact {
			b.WriteString(u.Line())
			if u.Name == exact {
				b.WriteString(" assume=exact")
			}
			b.WriteString("\n")
		}
	}
	for r := range n {
		for i, us := range units {
			fmt.Fprintf(&b, "Benchmark%s\t1", metrics.FullName(metrics.PointName("checks", levels[i], "", false)))
			for _, u := range us {
				fmt.Fprintf(&b, "\t%g %s", 1+0.01*float64(r), u)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("PASS\n")
	return writeFile(t, dir, fmt.Sprintf("side%d.txt", rand.Int()), b.String())
}

// gate -run warns, before its first run, when its -count cannot decide:
// the too-few-runs line of the decision, with "at least" the metrics every
// run reports (5 a point here: the server's own figures come on top), and
// the runs a side read from a file has. It measures anyway: the runs are
// written and gated, and where it warned the gate has no verdict (2),
// saying too few runs; where it did not, the decision does not say so.
// Each boundary has its pair: 7 tested metrics warn at 5 runs, 6 do not;
// 6 warn at 4 runs, not at 5; 10 file runs against 2 warn, against 3 not.
func TestGateRunWarnsTooFewRuns(t *testing.T) {
	dir := t.TempDir()
	five := []string{metrics.JudgmentsPerSec, metrics.ImagesPerSec, metrics.P50Sec, metrics.P95Sec, metrics.P99Sec}
	seven := sideFile(t, dir, 5, "", []int{1, 2}, five, five[:2])
	six := sideFile(t, dir, 5, "", []int{1, 2}, five, five[:1])
	sevenExact := sideFile(t, dir, 5, metrics.P50Sec, []int{1, 2}, five, five[:2])
	tenRuns := sideFile(t, dir, 10, "", []int{2}, five)
	const anyway = "; measuring anyway: the runs are written and gated, but no verdict can come of them (exit 2"
	for _, c := range []struct {
		name       string
		count      int
		levels     string
		base, cand string
		want       string // the warning, "" for none
	}{
		{"3 vs 3 live cannot decide", 3, "2", "inprocess", "inprocess",
			"vetbench gate: -count 3: too few runs: with at least 5 tested metrics Holm needs p < 0.01; 3 vs 3 runs reach at best p = 0.1; use -count 5 or more" + anyway + ", or 1 if the candidate's run fails)\n"},
		{"6 vs 6 live decide", 6, "2", "inprocess", "inprocess", ""},
		{"7 file metrics at 5 runs cannot decide", 5, "1,2", seven, "inprocess",
			"vetbench gate: -count 5: too few runs: with at least 7 tested metrics Holm needs p < 0.00714; 5 vs 5 runs reach at best p = 0.0079; use -count 6 or more (or gate at most 6 metrics, or -holm=false)" + anyway + ", or 1 if the candidate's run fails)\n"},
		{"6 file metrics at 5 runs decide", 5, "1,2", six, "inprocess", ""},
		{"6 file metrics at 4 runs cannot decide", 4, "1,2", six, "inprocess",
			"vetbench gate: -count 4: too few runs: with at least 6 tested metrics Holm needs p < 0.00833; 5 vs 4 runs reach at best p = 0.016; use -count 5 or more (or gate at most 3 metrics, or -holm=false)" + anyway + ", or 1 if the candidate's run fails)\n"},
		{"assume=exact is no U test metric", 5, "1,2", sevenExact, "inprocess", ""},
		{"2 live runs against 10 in a file cannot decide", 2, "2", "inprocess", tenRuns,
			"vetbench gate: -count 2: too few runs: with at least 5 tested metrics Holm needs p < 0.01; 2 vs 10 runs reach at best p = 0.03; use -count 3 or more (or gate at most 1 metric, or -holm=false)" + anyway + ")\n"},
		{"3 live runs against 10 in a file decide", 3, "2", "inprocess", tenRuns, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			environ := map[string]string{"VETBENCH_FIXTURE_SIZE": "1", "VETBENCH_SETS": "checks", "VETBENCH_LEVELS": c.levels}
			out := filepath.Join(t.TempDir(), "ab")
			stdout, stderr, code := runWith(t, environ, "gate", "-run", "-count", fmt.Sprint(c.count), "-benchstat=false", "-out", out, c.base, c.cand)
			first := strings.Index(stderr, "run 1/")
			require.Positive(t, first, stderr)
			if c.want == "" {
				require.NotContains(t, stderr, "too few runs", stderr)
				require.NotContains(t, stdout, "too few runs", "the decision agrees the runs sufficed")
			} else {
				at := strings.Index(stderr, c.want)
				require.True(t, at >= 0 && at < first, "the warning, before the first run's lines:\n%s", stderr)
				require.Equal(t, 1, strings.Count(stderr, "too few runs"), stderr)
				require.Equal(t, exitNoVerdict, code, stdout+stderr)
				require.Contains(t, stdout, "too few runs: ")
			}
			// Measured and written all the same.
			side := map[bool]string{true: "baseline", false: "candidate"}[c.base == "inprocess"]
			bench, err := os.ReadFile(filepath.Join(out, side, "bench.txt"))
			require.NoError(t, err)
			require.Equal(t, c.count*len(strings.Split(c.levels, ",")), strings.Count(string(bench), "BenchmarkJudgments/"))
		})
	}
}

// TestGateIdentity: a fast-profile run against an h100-profile run is
// refused with what differs listed; allowed, it goes to the statistics.
func TestGateIdentity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := func(profile string) string {
		return strings.Join(speed.ConfigLines(map[string]string{speed.KeyTarget: "twin", speed.KeyTwinProfile: profile, speed.KeyModel: "m"}), "\n") + "\n"
	}
	fast := writeFile(t, dir, "fast.txt", cfg("fast")+benchOutput(rand.New(rand.NewPCG(1, 1)), base, 10, "A"))
	fast2 := writeFile(t, dir, "fast2.txt", cfg("fast")+benchOutput(rand.New(rand.NewPCG(2, 1)), base, 10, "B"))
	h100 := writeFile(t, dir, "h100.txt", cfg("h100-gemma4-31b")+benchOutput(rand.New(rand.NewPCG(3, 1)), truth{jps: base.jps * 0.34, p95: base.p95 * 3, cv: base.cv}, 10, "B"))

	stdout, stderr, code := run(t, "gate", fast, h100)
	require.Equal(t, exitNoVerdict, code, stdout+stderr)
	require.Contains(t, stdout, "identity differs: twin-profile: fast → h100-gemma4-31b")
	require.NotContains(t, stdout, "WORSE", "no statistics")

	stdout, _, code = run(t, "gate", "-json", fast, h100)
	require.Equal(t, exitNoVerdict, code)
	var jerr jsonError // the documented error object, not a gate report
	require.NoError(t, json.Unmarshal([]byte(stdout), &jerr))
	require.Equal(t, ErrorSchema, jerr.Schema)
	require.Equal(t, []string{"twin-profile: fast → h100-gemma4-31b"}, jerr.Details)

	stdout, _, code = run(t, "gate", "-benchstat=false", "-allow-identity-drift", fast, h100)
	require.Equal(t, exitFail, code, stdout)
	require.Contains(t, stdout, "identity differs (allowed)")

	stdout, _, code = run(t, "gate", "-benchstat=false", fast, fast2)
	require.Equal(t, exitPass, code, stdout)
}

// A side whose run did not pass never passes the gate, even when its lines
// look fast: a failed candidate fails (1) whatever the statistics say, a
// failed baseline cannot be compared (2); both outputs are still gated and
// their lines kept. A candidate whose engine is dead from the start ends
// the runs and fails with nothing to read; an interrupt is 130. Control:
// the same runs, none failing, have no verdict at three runs a side (2).
func TestGateRunFailedSide(t *testing.T) {
	environ := map[string]string{"VETBENCH_FIXTURE_SIZE": "1", "VETBENCH_SETS": "checks", "VETBENCH_LEVELS": "2"}
	twin := func(faults ...string) string {
		cfg := stub.Config{DevMode: true}
		for _, f := range faults {
			cfg.Faults = append(cfg.Faults, mustFault(t, f))
		}
		srv, err := stub.Start(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { srv.Close() })
		return srv.URL()
	}
	stops := "missing-candidate:match=|r00:unsigned|"
	for _, tc := range []struct {
		name       string
		base, cand string
		code       int
		want       []string
	}{
		{"candidate fails", twin(), twin(stops), exitFail, []string{"candidate run failed: candidate 1/3: 1 point(s) did not pass"}},
		{"baseline fails", twin(stops), twin(), exitNoVerdict, []string{"baseline run failed: baseline 1/3: 1 point(s) did not pass"}},
		{"control", twin(), twin(), exitNoVerdict, []string{"too few runs: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "gate")
			stdout, stderr, code := runWith(t, environ, "gate", "-run", "-count", "3", "-benchstat=false", "-out", dir, tc.base, tc.cand)
			require.Equal(t, tc.code, code, stdout+stderr)
			for _, w := range tc.want {
				require.Contains(t, stdout, w)
			}
			if tc.name == "control" {
				require.NotContains(t, stdout+stderr, "run failed")
				return
			}
			// Every run of the failing side ran, and its lines carry the
			// point's failure.
			side := "candidate"
			if tc.name == "baseline fails" {
				side = "baseline"
			}
			bench, err := os.ReadFile(filepath.Join(dir, side, "bench.txt"))
			require.NoError(t, err)
			require.Equal(t, 3, strings.Count(string(bench), "BenchmarkJudgments/set=checks/c=2"))
			require.Equal(t, 3, strings.Count(string(bench), " 1.000 failed-items"), "the stopped item is counted on every line")
			require.True(t, strings.HasSuffix(string(bench), "\nFAIL\n"))
		})
	}

	// The candidate's engine is dead before the first judgment: no point
	// has a receipt or a line, the runs end there (no baseline 2/3), and
	// the gate fails with an error object.
	dir := filepath.Join(t.TempDir(), "gate")
	stdout, stderr, code := runWith(t, environ, "gate", "-run", "-json", "-count", "3", "-out", dir, twin(), twin("engine-dead:after=0"))
	require.Equal(t, exitFail, code, stdout+stderr)
	var doc jsonError
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	require.Equal(t, ErrorSchema, doc.Schema)
	require.Equal(t, exitFail, doc.Exit)
	require.Contains(t, doc.Error, "candidate run failed: candidate 1/3: ")
	require.Contains(t, doc.Error, "server down")
	require.Contains(t, stderr, "no later run is measured")
	require.NotContains(t, stderr, "baseline 2/3")

	// Interrupted (here: before it starts): 130, and with -json an error
	// object that says so.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	stdout, stderr, code = runCtx(ctx, environ, "gate", "-run", "-json", "-count", "3", "-out", filepath.Join(t.TempDir(), "gate"), twin(), twin())
	require.Equal(t, exitInterrupted, code, stdout+stderr)
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	require.Equal(t, exitInterrupted, doc.Exit)
	require.Equal(t, "interrupted", doc.Error)
}

// gate -json on outputs of different experiments writes the documented
// error object (vetbench.error/v1) with what differs, and exits 2.
func TestGateJSONIdentityMismatchIsAnError(t *testing.T) {
	t.Parallel()
	const rec = "../../receipts/speed/testdata/twin/"
	data, err := os.ReadFile(rec + "slowed.txt")
	require.NoError(t, err)
	drift := writeFile(t, t.TempDir(), "drift.txt", strings.Replace(string(data), "twin-profile: h100-gemma4-31b", "twin-profile: fast", 1))
	stdout, _, code := run(t, "gate", "-json", rec+"baseline.txt", drift)
	require.Equal(t, exitNoVerdict, code)
	var got jsonError
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	require.Equal(t, ErrorSchema, got.Schema)
	require.Equal(t, "gate", got.Command)
	require.Equal(t, exitNoVerdict, got.Exit)
	require.Equal(t, []string{"twin-profile: h100-gemma4-31b → fast"}, got.Details)
	// With the drift allowed it is a gate report again.
	stdout, _, _ = run(t, "gate", "-json", "-allow-identity-drift", rec+"baseline.txt", drift)
	require.Contains(t, stdout, `"schema": "vetbench.gate/v1"`)
}

// firstRuns keeps the first n runs (lines) of every benchmark of a
// recorded output: the same measurement at a smaller -count.
func firstRuns(t *testing.T, path string, n int) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	seen := map[string]int{}
	var b strings.Builder
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if name, _, ok := strings.Cut(line, "\t"); ok && strings.HasPrefix(name, "Benchmark") {
			if seen[name]++; seen[name] > n {
				continue
			}
		}
		b.WriteString(line)
	}
	return b.String()
}

// TestGateTooFewRunsForHolm: the recorded twin flow (gate.toml: 48 gated
// metrics, 32 decided by the U test), its slowed candidate cut to fewer
// runs. Before the fix 5 and 6 runs a side passed (exit 0: Holm needs
// p < 0.05/32 = 0.00156, and 5 or 6 runs reach at best 0.0079 or 0.0022,
// so nothing could fail); now they have no verdict (2) and say the count
// that suffices, 7, at which the slowed twin fails (1), as at 10. With
// -holm=false 5 runs decide; -allow-few-runs does not make a verdict of
// runs that can decide nothing.
func TestGateTooFewRunsForHolm(t *testing.T) {
	t.Parallel()
	const rec = "../../receipts/speed/testdata/twin/"
	dir := t.TempDir()
	cut := func(name string, n int) string {
		return writeFile(t, dir, fmt.Sprintf("%s%d.txt", name, n), firstRuns(t, rec+name+".txt", n))
	}
	for _, c := range []struct {
		n     int
		flags []string
		code  int
		want  string
	}{
		{5, nil, exitNoVerdict, "too few runs: with 32 tested metrics Holm needs p < 0.00156; 5 vs 5 runs reach at best p = 0.0079; use -count 7 or more (or gate at most 6 metrics, or -holm=false)"},
		{6, nil, exitNoVerdict, "too few runs: with 32 tested metrics Holm needs p < 0.00156; 6 vs 6 runs reach at best p = 0.0022; use -count 7 or more"},
		{5, []string{"-allow-few-runs"}, exitNoVerdict, "too few runs: with 32 tested metrics"},
		{5, []string{"-holm=false"}, exitFail, "judgments/s: candidate -"},
		{7, nil, exitFail, "judgments/s: candidate -"},
		{10, nil, exitFail, "judgments/s: candidate -"},
	} {
		args := append(append([]string{"gate", "-benchstat=false"}, c.flags...), cut("baseline", c.n), cut("slowed", c.n))
		stdout, stderr, code := run(t, args...)
		require.Equal(t, c.code, code, "%d runs %v:\n%s%s", c.n, c.flags, stdout, stderr)
		require.Contains(t, stdout, c.want, "%d runs %v", c.n, c.flags)
		if c.code == exitNoVerdict {
			require.NotContains(t, stdout, "PASS")
			require.Contains(t, stdout, "TOO_FEW_RUNS")
		}
	}
	// The unchanged rerun at 5 runs: no verdict either (it is no pass).
	_, _, code := run(t, "gate", "-benchstat=false", cut("baseline", 5), cut("unchanged", 5))
	require.Equal(t, exitNoVerdict, code)

	// -json: the power object and each metric's best p.
	stdout, _, code := run(t, "gate", "-json", cut("baseline", 5), cut("slowed", 5))
	require.Equal(t, exitNoVerdict, code)
	var rep speed.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.Equal(t, speed.Power{Tested: 32, Threshold: 0.05 / 32, MinCount: 7, TooFewRuns: 32}, rep.Power)
	require.Equal(t, 48, rep.Gated)
	for _, m := range rep.Metrics {
		if m.MinP != nil {
			require.Equal(t, speed.FewRuns, m.Verdict, "%s %s", m.Benchmark, m.Unit)
			require.InDelta(t, 2.0/252, *m.MinP, 1e-12)
		}
	}
}

// gate -run into an -out that holds an earlier gate's sides: refused
// (exit 2) before anything is measured or said to be there, the earlier
// results untouched; with -force both sides are replaced.
func TestGateRunOutHoldsResults(t *testing.T) {
	environ := map[string]string{"VETBENCH_FIXTURE_SIZE": "1", "VETBENCH_SETS": "checks", "VETBENCH_LEVELS": "1"}
	out := filepath.Join(t.TempDir(), "ab")
	earlier := filepath.Join(out, "baseline", "bench.txt")
	require.NoError(t, os.MkdirAll(filepath.Dir(earlier), 0o755))
	require.NoError(t, os.WriteFile(earlier, []byte("BenchmarkJudgments/set=checks/c=1 1 1 ns/op\n"), 0o644))
	args := []string{"gate", "-run", "-count", "1", "-allow-few-runs", "-benchstat=false", "-out", out, "inprocess", "inprocess"}

	_, stderr, code := runWith(t, environ, args...)
	require.Equal(t, exitNoVerdict, code, stderr)
	require.Contains(t, stderr, filepath.Join(out, "baseline")+" holds results of an earlier run (bench.txt)")
	require.NotContains(t, stderr, "results in", "nothing was measured there")
	b, err := os.ReadFile(earlier)
	require.NoError(t, err)
	require.Equal(t, "BenchmarkJudgments/set=checks/c=1 1 1 ns/op\n", string(b), "the earlier results are kept")

	_, stderr, code = runWith(t, environ, append(args[:len(args)-2:len(args)-2], "-force", "inprocess", "inprocess")...)
	require.NotContains(t, stderr, "holds results", "exit %d", code)
	require.Contains(t, stderr, "vetbench gate: results in "+out)
	b, err = os.ReadFile(earlier)
	require.NoError(t, err)
	require.Contains(t, string(b), "\nBenchmarkJudgments/set=checks/c=1-", "replaced by this run's lines")
	require.NotContains(t, string(b), " 1 1 ns/op\n")
}
