package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/sweep/interrupt"
	"github.com/vetbench/vetbench/stub"
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
		// go run exits 1 for any failure of its program (docs/gate.md's
		// table says so; the other documents use the forms above).
		goRun bool
	}{
		{"go tool vetbench", func(b, c string) []string {
			return []string{"go", "tool", "vetbench", "gate", "-benchstat=false", b, c}
		}, false, false},
		{"scripts/gate", func(b, c string) []string { return []string{"scripts/gate", "-benchstat=false", b, c} }, false, false},
		{"make gate", func(b, c string) []string {
			return []string{"make", "-s", "gate", "BASE=" + b, "CAND=" + c, "GATE_FLAGS=-benchstat=false"}
		}, true, false},
		{"go run", func(b, c string) []string {
			return []string{"go", "run", "./cmd/vetbench", "gate", "-benchstat=false", b, c}
		}, false, true},
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
				if f.goRun && want != exitPass {
					want = 1
				}
				require.Equal(t, want, exitCode(t, err), "%s\n%s", strings.Join(argv, " "), out)
			})
		}
	}
}

// One Ctrl-C at a terminal reaches the whole process group: `go tool`
// and vetbench both get SIGINT, and go may relay its own to vetbench. It
// counts as one: the gate stops the point in flight, writes what it
// measured (the receipt with a stopped block, bench.txt, settings.toml)
// and exits 130, through go tool and scripts/gate alike — not 1 as under
// `go run`, and not "interrupted again" before the receipt. (Whether the
// relayed copy reaches vetbench apart from the terminal's depends on
// timing, the runtime merging a signal pending twice; the echo rule itself
// is TestEchoIsOneSignalAndExitFuncsRun's in bench/sweep/interrupt.)
//
// The gate benchmarks a server (-run) that answers the probes as the twin
// does and never answers a judgment's request, so only the signal can end
// the point; the signal goes once the server holds a request.
func TestInterruptThroughGoTool(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds vetbench with the go command")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	build := exec.Command("go", "tool", "-n", "vetbench") // build first: the signal must reach a running gate
	build.Dir = root
	require.NoError(t, build.Run())
	for _, argv := range [][]string{{"go", "tool", "vetbench", "gate"}, {"scripts/gate"}} {
		t.Run(argv[0], func(t *testing.T) {
			url, held := silentServer(t)
			out := filepath.Join(t.TempDir(), "ab")
			cmd := exec.Command(argv[0], append(argv[1:], "-run", "-count", "1", "-warmup", "0", "-sets", "checks", "-levels", "1", "-out", out, url, url)...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "VETBENCH_STUB=inprocess")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var said strings.Builder
			cmd.Stdout, cmd.Stderr = &said, &said
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-held:
			case err := <-done:
				t.Fatalf("the gate ended before the server held a request (%v):\n%s", err, said.String())
			case <-time.After(2 * time.Minute):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatalf("no judgment request reached the server:\n%s", said.String())
			}
			require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)) // Ctrl-C at the terminal
			select {
			case err := <-done:
				require.Equal(t, exitInterrupted, exitCode(t, err), "%s", said.String())
			case <-time.After(time.Minute):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatalf("one Ctrl-C did not stop the gate:\n%s", said.String())
			}
			require.Contains(t, said.String(), "vetbench gate: interrupted")
			require.NotContains(t, said.String(), "interrupted again", "the relayed echo was taken as a second Ctrl-C")
			for _, f := range []string{"bench.txt", "settings.toml"} {
				require.FileExists(t, filepath.Join(out, "baseline", f))
			}
			// -warmup 0: the held request is a measured one, so the point has
			// a receipt to write (an interrupted warmup measured nothing).
			data, err := os.ReadFile(filepath.Join(out, "baseline", "receipts", "checks_c1.json"))
			require.NoError(t, err, "the point in flight's receipt:\n%s", said.String())
			var rec struct {
				Stopped *struct{ Reason string } `json:"stopped"`
			}
			require.NoError(t, json.Unmarshal(data, &rec))
			require.NotNil(t, rec.Stopped, "the receipt says the point stopped early")
			require.Equal(t, "canceled", rec.Stopped.Reason)
		})
	}
}

// silentServer serves the twin's API except a judgment's requests, which
// it accepts and never answers (until the client goes); held is closed
// when the first arrives.
func silentServer(t *testing.T) (url string, held <-chan struct{}) {
	t.Helper()
	tw, err := stub.New(stub.Config{DevMode: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = tw.Close() })
	ch, stop := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		// A judgment's questions carry its images; the probes before a
		// point (models, capabilities, identity) do not.
		if r.URL.Path == "/v1/chat/completions" && bytes.Contains(body, []byte(`"image_url"`)) {
			once.Do(func() { close(ch) })
			select {
			case <-r.Context().Done():
			case <-stop: // the test is over: Close waits for handlers
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		tw.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // before srv.Close (cleanups run last first)
	return srv.URL, ch
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

// Two Ctrl-C during a run on the container twin leave no container behind
// (no reaper runs: TESTCONTAINERS_RYUK_DISABLED). The first cancels, the
// second — while the run still stops — exits 130 after removing the
// container (interrupt.AtExit); either way the container the run's
// twin.log names is gone when vetbench has exited. Twice: while it
// measures, and the moment the container has started (the readiness wait,
// whose removal on the way out a second Ctrl-C once exited past: 3 of 3
// containers left behind before bench/sweep/target registered it there).
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
	for _, c := range []struct {
		name  string
		after time.Duration // from "Container started" to the first Ctrl-C
	}{{"measuring", 500 * time.Millisecond}, {"starting", 0}} {
		t.Run(c.name, func(t *testing.T) { twoCtrlC(t, bin, c.after) })
	}
}

// twoCtrlC runs vetbench on the container twin, sends Ctrl-C after the
// container started, another 2 × interrupt.Echo later, and checks the exit
// status and that the container is gone.
func twoCtrlC(t *testing.T, bin string, after time.Duration) {
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "run", "-out", out, "-sets", "checks", "-levels", "1,4,16,32", "-count", "50")
	cmd.Env = append(os.Environ(), "VETBENCH_STUB=container", "TESTCONTAINERS_RYUK_DISABLED=true")
	var stderr strings.Builder
	cmd.Stderr, cmd.Stdout = &stderr, io.Discard
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	id := ""
	for deadline := time.Now().Add(2 * time.Minute); id == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		log, _ := os.ReadFile(filepath.Join(out, "twin.log"))
		if m := regexp.MustCompile(`Container started: ([0-9a-f]+)`).FindSubmatch(log); m != nil {
			id = string(m[1])
		}
	}
	require.NotEmpty(t, id, "the container twin never started:\n%s", stderr.String())
	time.Sleep(after)
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
