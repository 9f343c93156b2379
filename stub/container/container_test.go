package container_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/container"
)

// binary is the static vllmstub the tests share (built once in TestMain,
// as a CI job would with container.BuildBinary and WithBinary).
var binary string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "vllmstub-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "vllmstub")
		if err := container.BuildBinary(context.Background(), "../..", binary); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}

// requireDocker skips without a healthy Docker daemon, or fails under
// CI=true (CI must run the container tests).
func requireDocker(t *testing.T) {
	t.Helper()
	if err := container.DockerAvailable(t.Context()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs a Docker daemon for the container twin: %v", err)
		}
		t.Skipf("no Docker daemon, container twin not tested: %v", err)
	}
}

// TestRun starts the twin with server options, a replay file and a caller
// customizer, and shows each took effect inside the container: the served
// name, a fault, replayed answers, and dev mode switched on by the caller's
// environment (caller options come after the module's, so they win).
func TestRun(t *testing.T) {
	requireDocker(t)
	ctx := t.Context()
	receipt := "../../receipts/replay/testdata/check_match_vllm_receipt.json"
	ctr, err := container.Run(ctx,
		container.WithBinary(binary),
		container.WithConfig(stub.Config{Model: "twin-in-a-box", Faults: []stub.Fault{stub.Fault{Kind: stub.FaultHTTP429, Every: 3}}}),
		container.WithReplayFile(receipt),
		testcontainers.WithEnv(map[string]string{"VLLM_SERVER_DEV_MODE": "1"}))
	testcontainers.CleanupContainer(t, ctr)
	require.NoError(t, err)
	url, err := ctr.BaseURL(ctx)
	require.NoError(t, err)
	require.False(t, strings.HasSuffix(url, "/"))

	res, err := http.Get(url + "/v1/models")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Contains(t, string(body), `"id":"twin-in-a-box"`)

	res, err = http.Post(url+"/reset_mm_cache", "application/json", nil)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "the caller's VLLM_SERVER_DEV_MODE=1 reached the twin")

	// typevet recorded r00:clean payee_matches with P(true) ≈ 1; the
	// third chat request hits the fault.
	cl := judgments.NewClient(url)
	spec := judgments.Spec{Name: "checks", Questions: []judgments.Question{
		judgments.NewNoul("payee_matches", "Is the payee on the check the payee in the register row?",
			"The check names the register payee.", "The check names a different payee.")}}
	ctrl, err := cl.Tokenize(ctx, spec.Controls())
	require.NoError(t, err)
	item := judgments.Item{ID: "r00:clean", State: "A check.", Images: nil}
	var answers []judgments.Answer
	var se *judgments.StatusError
	for range 3 {
		j, err := cl.Judge(ctx, spec, ctrl, item)
		if errors.As(err, &se) {
			continue
		}
		require.NoError(t, err)
		answers = append(answers, j.Answers[0])
	}
	require.NotNil(t, se, "the fault fired")
	require.Equal(t, http.StatusTooManyRequests, se.Code)
	require.Len(t, answers, 2)
	require.Equal(t, answers[0], answers[1], "replayed, not sampled")
	require.Equal(t, "true", answers[0].Label)
}

// TestRunRefuses shows options that cannot reach a container, and bad
// options, fail before anything starts, with no container to clean up.
func TestRunRefuses(t *testing.T) {
	rp, err := stub.NewReplay("none", nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		opts []testcontainers.ContainerCustomizer
		want string
		is   error
	}{
		{"replay value", []testcontainers.ContainerCustomizer{container.WithConfig(stub.Config{Replay: &rp})}, "Config.Replay", errors.ErrUnsupported},
		{"adjust hook", []testcontainers.ContainerCustomizer{container.WithConfig(stub.Config{Adjust: func(string, string, map[int]float64) {}})}, "Config.Adjust", errors.ErrUnsupported},
		{"bad twin config", []testcontainers.ContainerCustomizer{container.WithConfig(stub.Config{TimeScale: -1})}, "time scale", nil},
		{"missing replay file", []testcontainers.ContainerCustomizer{container.WithReplayFile("no/such/receipt.json")}, "WithReplayFile", os.ErrNotExist},
		{"empty binary path", []testcontainers.ContainerCustomizer{container.WithBinary("")}, "WithBinary", nil},
		{"missing binary", []testcontainers.ContainerCustomizer{container.WithBinary(filepath.Join(t.TempDir(), "vllmstub"))}, "vllmstub binary", os.ErrNotExist},
		{"no module to build", []testcontainers.ContainerCustomizer{container.WithModuleDir(t.TempDir())}, "go build ./cmd/vllmstub", nil},
		{"empty executable path", []testcontainers.ContainerCustomizer{container.WithExecutable("")}, "WithExecutable", nil},
		{"executable not ELF", []testcontainers.ContainerCustomizer{container.WithExecutable("Dockerfile", "twin")}, "twin executable: Dockerfile is not an ELF executable", nil},
		{"dynamic binary", []testcontainers.ContainerCustomizer{container.WithBinary(dynamicELF(t))}, "is dynamically linked (interpreter /", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctr, err := container.Run(t.Context(), tc.opts...)
			require.Nil(t, ctr)
			require.ErrorContains(t, err, tc.want)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
		})
	}
}

// TestRunReturnsPartlyStarted shows a container that started but never
// became healthy (the caller's extra flag makes vllmstub exit) comes back
// with the error, which carries what the twin printed, so the caller can
// remove it.
func TestRunReturnsPartlyStarted(t *testing.T) {
	requireDocker(t)
	ctr, err := container.Run(t.Context(), container.WithBinary(binary), testcontainers.WithCmdArgs("--no-such-flag"))
	testcontainers.CleanupContainer(t, ctr) // fails the test if it cannot be removed
	require.ErrorContains(t, err, "vllmstub exited with code 2")
	require.ErrorContains(t, err, "no-such-flag")
	require.NotNil(t, ctr, "the started container comes back for cleanup")
	_, err = ctr.BaseURL(t.Context())
	require.Error(t, err, "never healthy, no base URL")
}

// TestNoReaper shows Run and DockerAvailable turn testcontainers' reaper
// off unless the caller chose: the reaper is an image to pull, and the
// machines vetbench runs on may reach no registry.
func TestNoReaper(t *testing.T) {
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "")
	os.Unsetenv("TESTCONTAINERS_RYUK_DISABLED")
	_ = container.DockerAvailable(t.Context())
	require.Equal(t, "true", os.Getenv("TESTCONTAINERS_RYUK_DISABLED"))
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "false")
	_ = container.DockerAvailable(t.Context())
	require.Equal(t, "false", os.Getenv("TESTCONTAINERS_RYUK_DISABLED"), "the caller's choice stands")
}
