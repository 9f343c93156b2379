package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const workflow = "../../.github/workflows/vetbench.yml"

// ciStep is one `run: scripts/ci <step>` of the workflow.
type ciStep struct {
	name            string
	continueOnError bool
}

// workflowSteps reads the scripts/ci steps of the workflow in order, with
// whether each may fail without stopping the job (continue-on-error).
func workflowSteps(t *testing.T) []ciStep {
	t.Helper()
	data, err := os.ReadFile(workflow)
	require.NoError(t, err)
	var steps []ciStep
	coe := false
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "- "):
			coe = false // a new step
		case trimmed == "continue-on-error: true":
			coe = true
		case strings.HasPrefix(trimmed, "run: scripts/ci "):
			steps = append(steps, ciStep{strings.TrimPrefix(trimmed, "run: scripts/ci "), coe})
		}
	}
	return steps
}

// ciSlowdown is the candidate twin's slowdown in TestCIWorkflowSteps, the
// size of the margin the physics guarantees on a loaded machine. The twin
// never answers before its modelled time (a timer fires late, never early),
// so a candidate pass takes at least ciSlowdown × M, M ≈ 0.27 s of wall
// clock (14 checks judgments at c=4 on h100-gemma4-31b at ×10; measured:
// 10.2 judgments/s wall at 5×, a floor of 1.37 s a pass), while a baseline
// pass takes M + O, O the machine's share (CPU and scheduling, partly
// hidden behind the modelled waits). The gate fails judgments/s for sure
// while every candidate pass is slower than every baseline one by more
// than its 5% margin: O < (ciSlowdown/1.05 − 1) × M. At 2× that is
// O < 0.25 s, and a load of ~17 on 2 cores with a parallel static build
// reached it (judgments/s overlapped; only queue-sec failed). At 5× it is
// O < 1.0 s, about 7 times the whole serialized overhead of a pass
// measured at that load (0.04–0.15 s at time scale 10⁶, where M ≈ 0), for
// about 5 s more of candidate. How small a slowdown the gate catches is
// receipts/speed's to show, on recorded and synthetic samples; here it is
// the workflow's plumbing.
const ciSlowdown = "5"

// The workflow's steps, run in its order as a script against the twin
// from nothing (no baseline: one is recorded), with a candidate twin slowed
// ciSlowdown×: answers pass, speed fails, both report, the summary holds
// the report and never the receipts, and the job's verdict is the worse of
// the two. The control: the baseline's own run as the candidate passes
// speed and the verdict (a "worse" that is not always said).
func TestCIWorkflowSteps(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the twin")
	}
	steps := workflowSteps(t)
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = s.name
	}
	require.Equal(t, []string{"baseline", "candidate", "answers", "speed", "report", "verdict"}, names)
	require.True(t, steps[2].continueOnError && steps[3].continueOnError, "answers and speed both report whatever the other says")
	wf, err := os.ReadFile(workflow)
	require.NoError(t, err)
	require.Contains(t, string(wf), "path: out/ci/summary/", "the workflow uploads the summary directory only")
	require.Contains(t, string(wf), "CI_DIR: ${{ github.workspace }}/out/ci")

	dir := t.TempDir()
	config := filepath.Join(dir, "small.toml")
	require.NoError(t, os.WriteFile(config, []byte(`sets = ["checks"]
levels = [4]
[twin]
placement = "inprocess"
profile = "h100-gemma4-31b"
time_scale = 10
[fixtures]
size = 2
`), 0o644))
	ci := filepath.Join(dir, "ci")
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	runIn := func(ciDir, step string, extra ...string) (string, int) {
		cmd := exec.Command(filepath.Join(root, "scripts", "ci"), step)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), append([]string{"CI_DIR=" + ciDir, "CI_COUNT=6", "CI_CONFIG=" + config, "GITHUB_STEP_SUMMARY="}, extra...)...)
		out, err := cmd.CombinedOutput()
		return string(out), exitCode(t, err)
	}
	run := func(step string, extra ...string) (string, int) { return runIn(ci, step, extra...) }
	want := map[string]int{"baseline": 0, "candidate": 0, "answers": 0, "speed": exitFail, "report": 0, "verdict": exitFail}
	for _, s := range steps {
		var extra []string
		if s.name == "candidate" {
			extra = []string{"VETBENCH_STUB_SLOWDOWN=" + ciSlowdown}
		}
		out, code := run(s.name, extra...)
		require.Equal(t, want[s.name], code, "scripts/ci %s:\n%s", s.name, out)
		if s.name == "baseline" {
			require.Contains(t, out, "none found; recording one")
			require.FileExists(t, filepath.Join(ci, "baseline", "bench.txt"))
			again, code := run("baseline")
			require.Equal(t, 0, code)
			require.Contains(t, again, "reusing", "a restored baseline is used, not re-recorded")
		}
	}
	summary, err := os.ReadFile(filepath.Join(ci, "summary", "summary.md"))
	require.NoError(t, err)
	require.Contains(t, string(summary), "| same answers? (compare) | pass |")
	require.Contains(t, string(summary), "| as fast? (gate) | **worse** |")
	require.Regexp(t, regexp.MustCompile(`judgments/s: candidate -\d`), string(summary))
	for _, f := range []string{"report.html", "compare.json", "gate.json", "baseline-bench.txt", "candidate-bench.txt"} {
		require.FileExists(t, filepath.Join(ci, "summary", f))
	}
	var size int64
	require.NoError(t, filepath.WalkDir(filepath.Join(ci, "summary"), func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		require.NotEqual(t, "receipts", d.Name(), "receipts are never uploaded")
		if info, err := d.Info(); err == nil && !d.IsDir() {
			size += info.Size()
		}
		return nil
	}))
	require.Less(t, size, int64(2<<20), "the upload is a summary, not the run")

	// The control, on no timer: the baseline's own run as the candidate
	// has the same answers and the same speed, so both steps and the
	// verdict pass.
	same := filepath.Join(dir, "same")
	for _, side := range []string{"baseline", "candidate"} {
		require.NoError(t, os.CopyFS(filepath.Join(same, side), os.DirFS(filepath.Join(ci, "baseline"))))
	}
	for _, step := range []string{"answers", "speed", "verdict"} {
		out, code := runIn(same, step)
		require.Equal(t, exitPass, code, "scripts/ci %s, the baseline against itself:\n%s", step, out)
	}
}

// actionlint (a tool of go.mod: Debian has no package) finds nothing in the
// workflow, and finds a mistake put in a copy of it.
func TestCIWorkflowLint(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds actionlint")
	}
	lint := func(path string) (string, int) {
		cmd := exec.Command("go", "tool", "actionlint", "-no-color", path)
		out, err := cmd.CombinedOutput()
		return string(out), exitCode(t, err)
	}
	out, code := lint(workflow)
	require.Equal(t, 0, code, out)
	data, err := os.ReadFile(workflow)
	require.NoError(t, err)
	broken := filepath.Join(t.TempDir(), "broken.yml")
	require.NoError(t, os.WriteFile(broken, []byte(strings.Replace(string(data), "steps.cache.outputs.cache-matched-key", "steps.cahce.outputs.cache-matched-key", 1)), 0o644))
	out, code = lint(broken)
	require.NotEqual(t, 0, code, "actionlint missed a step id typo:\n%s", out)
}
