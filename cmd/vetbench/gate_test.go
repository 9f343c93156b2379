package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/speed"
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
		{"too few runs cannot decide", base, slower, 3, exitNoVerdict, "can never reach p < 0.05", 7, 8},
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
		{"benchmark missing in candidate", []string{good, noFaces}, exitFail, "Judgments/set=faces/c=16-2 judgments/s: missing from the candidate"},
		{"one argument", []string{good}, exitNoVerdict, "usage: vetbench gate"},
	}
	for _, c := range cases {
		stdout, stderr, code := run(t, append([]string{"gate", "-benchstat=false"}, c.args...)...)
		require.Equal(t, c.code, code, "%s: %s%s", c.name, stdout, stderr)
		require.Contains(t, stdout+stderr, c.want, c.name)
	}
}

// fakeGo stands in for the go command: "go test" writes generated
// benchmark runs for the endpoint in VETBENCH_ENDPOINT, "go tool
// benchstat" prints its arguments.
type fakeGo struct {
	mu    sync.Mutex
	calls []string
	speed map[string]truth
	seed  uint64
}

func (f *fakeGo) exec(_ context.Context, env []string, stdout, _ io.Writer, name string, args ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name != "go" {
		return fmt.Errorf("unexpected %s", name)
	}
	if args[0] == "tool" {
		f.calls = append(f.calls, "benchstat "+strings.Join(args[2:], " "))
		fmt.Fprintln(stdout, "BENCHSTAT TABLE")
		return nil
	}
	endpoint := "inprocess"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "VETBENCH_ENDPOINT="); ok {
			endpoint = v
		}
	}
	count := args[slices.Index(args, "-count")+1]
	f.calls = append(f.calls, endpoint+" x"+count)
	n := 0
	fmt.Sscan(count, &n)
	f.seed++
	_, err := io.WriteString(stdout, benchOutput(rand.New(rand.NewPCG(f.seed, 3)), f.speed[endpoint], n, endpoint))
	return err
}

func TestGateRunInterleaves(t *testing.T) {
	t.Parallel()
	fake := &fakeGo{speed: map[string]truth{
		"http://a:8000": base,
		"http://b:8000": {jps: base.jps * 0.8, p95: base.p95 * 1.25, cv: base.cv},
		"inprocess":     base,
	}}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	e := &env{stdout: &stdout, stderr: &stderr, exec: fake.exec}
	code := vetbench(context.Background(), e, []string{"gate", "-run", "-count", "6", "-out", out, "http://a:8000", "http://b:8000"})
	require.Equal(t, exitFail, code, stdout.String()+stderr.String())
	require.Equal(t, []string{
		"http://a:8000 x1", "http://b:8000 x1",
		"http://b:8000 x1", "http://a:8000 x1",
		"http://a:8000 x1", "http://b:8000 x1",
		"http://b:8000 x1", "http://a:8000 x1",
		"http://a:8000 x1", "http://b:8000 x1",
		"http://b:8000 x1", "http://a:8000 x1",
		"benchstat -ignore target baseline=" + filepath.Join(out, "baseline.txt") + " candidate=" + filepath.Join(out, "candidate.txt"),
	}, fake.calls)
	require.Contains(t, stdout.String(), "BENCHSTAT TABLE")
	require.FileExists(t, filepath.Join(out, "baseline.txt"))

	// A file against a live target: one run of -count N for the live side.
	fake.calls = nil
	stdout.Reset()
	code = vetbench(context.Background(), e, []string{"gate", "-run", "-count", "6", "-out", t.TempDir(), "-benchstat=false",
		filepath.Join(out, "baseline.txt"), "inprocess"})
	require.Equal(t, exitPass, code, stdout.String())
	require.Equal(t, []string{"inprocess x6"}, fake.calls)

	_, _, code = run(t, "gate", "-run", "http://user:pw@a:8000", "http://b:8000")
	require.Equal(t, exitNoVerdict, code, "credentials on the command line are refused")
}

func TestChildEnv(t *testing.T) {
	t.Parallel()
	env := []string{"A=1", "VETBENCH_ENDPOINT=http://old", "B=2"}
	require.Equal(t, []string{"A=1", "B=2", "VETBENCH_ENDPOINT=http://new"}, childEnv(env, "http://new"))
	require.Equal(t, []string{"A=1", "B=2"}, childEnv(env, ""))
	require.Equal(t, []string{"A=1", "VETBENCH_ENDPOINT=http://old", "B=2"}, env, "the caller's slice is untouched")
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
	var rep speed.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	require.Equal(t, []string{"twin-profile: fast → h100-gemma4-31b"}, rep.Identity.Differs)

	stdout, _, code = run(t, "gate", "-benchstat=false", "-allow-identity-drift", fast, h100)
	require.Equal(t, exitFail, code, stdout)
	require.Contains(t, stdout, "identity differs (allowed)")

	stdout, _, code = run(t, "gate", "-benchstat=false", fast, fast2)
	require.Equal(t, exitPass, code, stdout)
}
