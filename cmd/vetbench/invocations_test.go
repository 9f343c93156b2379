package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/sweep/interrupt"
	"github.com/vetbench/vetbench/stub/container"
)

// The exit contract (0 pass, 1 worse, 2 could not compare, 130
// interrupted) holds for every documented way to run vetbench, not only
// the built binary: `go run` turns every failure into 1 and make into 2,
// which is why the documents name these forms. Each runs as a user runs
// it, from the module root, on recorded twin outputs.
func TestDocumentedInvocationsKeepExitStatus(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds vetbench with the go command")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	const rec = "receipts/speed/testdata/twin/"
	inputs := []struct {
		name, cand string
		code       int
		makeSays   string
	}{
		{"unchanged passes", rec + "unchanged.txt", exitPass, ""},
		{"slowed fails", rec + "slowed.txt", exitFail, "make gate: vetbench gate exited 1 (the candidate is slower)"},
		{"missing candidate cannot compare", rec + "no-such-file.txt", exitNoVerdict, "make gate: vetbench gate exited 2 (could not compare)"},
	}
	forms := []struct {
		name string
		argv func(base, cand string) []string
		// make exits 2 for any failed recipe whatever the recipe's status
		// (GNU make); its line names vetbench's.
		viaMake bool
	}{
		{"go tool vetbench", func(b, c string) []string {
			return []string{"go", "tool", "vetbench", "gate", "-benchstat=false", b, c}
		}, false},
		{"scripts/gate", func(b, c string) []string { return []string{"scripts/gate", "-benchstat=false", b, c} }, false},
		{"make gate", func(b, c string) []string {
			return []string{"make", "-s", "gate", "BASE=" + b, "CAND=" + c, "GATE_FLAGS=-benchstat=false"}
		}, true},
	}
	for _, f := range forms {
		for _, in := range inputs {
			t.Run(f.name+"/"+in.name, func(t *testing.T) {
				argv := f.argv(rec+"baseline.txt", in.cand)
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Dir = root
				out, err := cmd.CombinedOutput()
				want := in.code
				if f.viaMake && want != exitPass {
					want = 2
					require.Contains(t, string(out), in.makeSays)
				}
				require.Equal(t, want, exitCode(t, err), "%s\n%s", strings.Join(argv, " "), out)
			})
		}
	}
}

// One Ctrl-C at a terminal reaches the whole process group: `go tool`
// and vetbench both get SIGINT, and go relays its own to vetbench, so
// vetbench sees one keypress twice. That must count as one (it cancels);
// a second Ctrl-C later exits 130, through go tool and scripts/gate
// alike. The gate blocks opening a FIFO nobody writes, so only the
// signals can end it.
func TestInterruptThroughGoTool(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds vetbench with the go command")
	}
	// Issue 24 (hostile) refuses a named pipe as an input from its stat,
	// before the open that blocked here forever; the gate now exits 2 at
	// once (TestLoadFileRefusesNonRegular). This test needs another input
	// that holds the gate until the signals come.
	t.Skip("the gate no longer blocks opening a FIFO (refused as not a regular file); needs another blocking input")
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	for _, argv := range [][]string{{"go", "tool", "vetbench", "gate"}, {"scripts/gate"}} {
		t.Run(argv[0], func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "cand.txt")
			require.NoError(t, syscall.Mkfifo(fifo, 0o600))
			build := exec.Command("go", "tool", "-n", "vetbench") // build first: the signals must reach a running gate
			build.Dir = root
			require.NoError(t, build.Run())
			cmd := exec.Command(argv[0], append(argv[1:], "-benchstat=false", "receipts/speed/testdata/twin/baseline.txt", fifo)...)
			cmd.Dir = root
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			ctrlC := func() { require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)) }
			waitOpening(t, fifo)
			ctrlC()
			select {
			case err := <-done:
				t.Fatalf("one Ctrl-C ended the gate blocked in an open (%v): the relayed echo was taken as a second:\n%s", err, out.String())
			case <-time.After(time.Second):
			}
			ctrlC()
			select {
			case err := <-done:
				require.Equal(t, exitInterrupted, exitCode(t, err), "%s", out.String())
			case <-time.After(20 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatalf("the second Ctrl-C did not exit:\n%s", out.String())
			}
		})
	}
}

// exitCode is the status of a finished command (0 when err is nil).
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	require.True(t, errors.As(err, &ee), "%v", err)
	return ee.ExitCode()
}

// waitOpening waits until a vetbench gate on path is blocked opening it,
// at most 60 s: a thread of a process whose command line names path and
// gate is in openat (/proc/<pid>/task/*/syscall; the go command and the
// shell wait in wait4 instead).
func waitOpening(t *testing.T, path string) {
	t.Helper()
	openat, ok := map[string]string{"amd64": "257", "arm64": "56"}[runtime.GOARCH]
	if !ok {
		t.Skipf("openat's syscall number on %s not listed", runtime.GOARCH)
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range procs {
			cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
			if err != nil || !strings.Contains(string(cmdline), path) || !strings.Contains(string(cmdline), "gate") {
				continue
			}
			tasks, _ := filepath.Glob(filepath.Join(d, "task", "*", "syscall"))
			for _, task := range tasks {
				if sc, _ := os.ReadFile(task); strings.HasPrefix(string(sc), openat+" ") {
					return
				}
			}
		}
	}
	t.Fatalf("no process blocked opening %s", path)
}

// Two Ctrl-C during a run on the container twin leave no container behind
// (no reaper runs: TESTCONTAINERS_RYUK_DISABLED). The first cancels, the
// second — while the run still stops — exits 130 after removing the
// container (interrupt.AtExit); either way the container the run's
// twin.log names is gone when vetbench has exited.
func TestTwoCtrlCLeaveNoContainer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the container twin")
	}
	if err := container.DockerAvailable(t.Context()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs a Docker daemon for the container twin: %v", err)
		}
		t.Skipf("no Docker daemon: %v", err)
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	bin := vetbenchBinary(t, root)
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "run", "-out", out, "-sets", "checks", "-levels", "1,4,16,32", "-count", "50")
	cmd.Env = append(os.Environ(), "VETBENCH_STUB=container", "TESTCONTAINERS_RYUK_DISABLED=true")
	var stderr strings.Builder
	cmd.Stderr, cmd.Stdout = &stderr, io.Discard
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	id := ""
	for deadline := time.Now().Add(2 * time.Minute); id == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		log, _ := os.ReadFile(filepath.Join(out, "twin.log"))
		if m := regexp.MustCompile(`Container started: ([0-9a-f]+)`).FindSubmatch(log); m != nil {
			id = string(m[1])
		}
	}
	require.NotEmpty(t, id, "the container twin never started:\n%s", stderr.String())
	time.Sleep(500 * time.Millisecond) // measuring
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	time.Sleep(2 * interrupt.Echo) // a second Ctrl-C, not the echo of the first
	// The first Ctrl-C may already have ended the run (its stop is quick on an
	// idle machine): then there is no second one to send, and the container
	// must be gone all the same.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("second Ctrl-C: %v", err)
	}
	select {
	case err := <-done:
		require.Equal(t, exitInterrupted, exitCode(t, err), "%s", stderr.String())
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("two Ctrl-C did not end the run:\n%s", stderr.String())
	}
	inspect, err := exec.Command("docker", "ps", "-a", "-q", "--no-trunc", "--filter", "id="+id).Output()
	require.NoError(t, err)
	if left := strings.TrimSpace(string(inspect)); left != "" {
		_ = exec.Command("docker", "rm", "-f", left).Run()
		t.Fatalf("container %s left behind after two Ctrl-C:\n%s", id, stderr.String())
	}
}
