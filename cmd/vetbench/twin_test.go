package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/stub/container"
)

// `vetbench twin` serves the twin with vllmstub's flags until its context
// ends, then exits 0; -h is its flags, exit 0; a bad flag exits 2 naming
// the command.
func TestTwinCommand(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- vetbench(ctx, &env{stdout: pw, stderr: io.Discard}, []string{"twin", "--host", "127.0.0.1", "--port", "0", "--served-model-name", "twin-cmd"})
		_ = pw.Close()
	}()
	banner, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url := regexp.MustCompile(`on (http://\S+)`).FindStringSubmatch(banner)
	require.NotNil(t, url, banner)
	res, err := http.Get(url[1] + "/v1/models")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Contains(t, string(body), `"id":"twin-cmd"`)
	cancel()
	select {
	case code := <-done:
		require.Equal(t, exitPass, code)
	case <-time.After(time.Minute):
		t.Fatal("vetbench twin did not stop when its context ended")
	}

	stdout, _, code := run(t, "twin", "-h")
	require.Equal(t, exitPass, code)
	require.Contains(t, stdout, "-served-model-name")
	_, stderr, code := run(t, "twin", "--no-such-flag")
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, "vetbench twin: flag provided but not defined: -no-such-flag")
}

// An installed binary — built static as `make vetbench` builds it, copied
// out of the tree, run where there is no go.mod and no go command — runs
// the container twin from its own executable (`vetbench twin` in a FROM
// scratch image), not in-process, removes the container when done, and
// says which build it is.
func TestInstalledBinaryRunsContainerTwin(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds vetbench and starts the container twin")
	}
	if err := container.DockerAvailable(t.Context()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs a Docker daemon for the container twin: %v", err)
		}
		t.Skipf("no Docker daemon: %v", err)
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	dir := t.TempDir()
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		require.NoFileExists(t, filepath.Join(d, "go.mod"), "the installed binary must run outside any module")
	}
	bin := filepath.Join(dir, "vetbench")
	build := exec.Command("go", "build", "-o", bin, "./cmd/vetbench")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, container.StaticELF(bin))

	cmdEnv := installedEnv(t)
	version := exec.Command(bin, "version")
	version.Dir, version.Env = dir, cmdEnv
	out, err = version.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "module:   github.com/vetbench/vetbench\n")

	runCmd := exec.Command(bin, "run", "-out", "run", "-sets", "checks", "-levels", "1", "-count", "1")
	runCmd.Dir, runCmd.Env = dir, cmdEnv
	var stderr strings.Builder
	runCmd.Stdout, runCmd.Stderr = io.Discard, &stderr
	require.NoError(t, runCmd.Run(), "%s", stderr.String())
	require.NotContains(t, stderr.String(), "in-process")
	data, err := os.ReadFile(filepath.Join(dir, "run", "receipts", "checks_c1.json"))
	require.NoError(t, err, "%s", stderr.String())
	var rec struct {
		Target struct{ Kind string } `json:"target"`
	}
	require.NoError(t, json.Unmarshal(data, &rec))
	require.Equal(t, "container", rec.Target.Kind, "%s", stderr.String())

	log, err := os.ReadFile(filepath.Join(dir, "run", "twin.log"))
	require.NoError(t, err)
	id := regexp.MustCompile(`Container started: ([0-9a-f]+)`).FindSubmatch(log)
	require.NotNil(t, id, "%s", log)
	left, err := exec.Command("docker", "ps", "-a", "-q", "--filter", "id="+string(id[1])).Output()
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(left)), "the run removes its container")
}

// installedEnv is the environment of a user's shell with vetbench
// installed: no VETBENCH_* settings, no go command on PATH (so nothing
// could build vllmstub), the reaper off as everywhere here.
func installedEnv(t *testing.T) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	goDir := filepath.Dir(goBin)
	var out []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "VETBENCH_"), k == "GOFLAGS", k == "GOWORK":
			continue
		case k == "PATH":
			kv = "PATH=" + strings.Join(slices.DeleteFunc(filepath.SplitList(v), func(p string) bool {
				return filepath.Clean(p) == goDir
			}), string(filepath.ListSeparator))
		}
		out = append(out, kv)
	}
	return append(out, "TESTCONTAINERS_RYUK_DISABLED=true")
}
