package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/judgments"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEnvFrom(t *testing.T) {
	e, err := EnvFrom(envOf(nil))
	require.NoError(t, err)
	require.Equal(t, DefaultSets, e.Sets)
	require.Equal(t, DefaultLevels, e.Levels)
	require.Equal(t, judgments.ModeTokenIDs, e.Mode)
	require.Equal(t, []string{"cold"}, e.Arms)

	e, err = EnvFrom(envOf(map[string]string{
		"VETBENCH_ENDPOINT": "http://gpu-box:8000/", "VETBENCH_MODEL": "google/gemma-4-31B-it",
		"VETBENCH_LEVELS": "1, 32", "VETBENCH_SETS": "faces", "VETBENCH_SCORING": "top_logprobs",
		"VETBENCH_TIMEOUT": "90s", "VETBENCH_ARMS": "cold,warm", "VETBENCH_CONTINUE_ON_ERROR": "1",
	}))
	require.NoError(t, err)
	require.Equal(t, "http://gpu-box:8000", e.Endpoint)
	require.Equal(t, []int{1, 32}, e.Levels)
	require.Equal(t, []string{"faces"}, e.Sets)
	require.Equal(t, judgments.ModeTopLogprobs, e.Mode)
	require.Equal(t, 90*time.Second, e.RequestTimeout)
	require.True(t, e.ContinueOnError)

	_, err = EnvFrom(envOf(map[string]string{"VETBENCH_LEVELS": "1,x", "VETBENCH_STUB": "vm", "VETBENCH_ARMS": "hot"}))
	require.ErrorContains(t, err, `VETBENCH_LEVELS="1,x": "x" is not a concurrency level`)
	require.ErrorContains(t, err, `VETBENCH_STUB="vm"`)
	require.ErrorContains(t, err, `arm "hot"`)
}

func TestTargetReceiptHidesSecrets(t *testing.T) {
	tg := &Target{Kind: "live", BaseURL: "http://user:pass@gpu-box:8000?token=x", APIKey: "sk-secret"}
	r := tg.Receipt()
	require.Equal(t, "http://gpu-box:8000", r.Endpoint)
}

func TestEnvTwinKnobs(t *testing.T) {
	e, err := EnvFrom(envOf(map[string]string{"VETBENCH_STUB_SLOWDOWN": "1.2", "VETBENCH_STUB_FAULTS": "http500:every=3; nan:match=r01",
		"VETBENCH_STUB_PROFILE": "h100-gemma4-31b", "VETBENCH_STUB_TIME_SCALE": "10"}))
	require.NoError(t, err)
	require.Equal(t, 1.2, e.Slowdown)
	require.Len(t, e.Faults, 2)
	require.Equal(t, 10.0, e.TimeScale)
	_, err = EnvFrom(envOf(map[string]string{"VETBENCH_STUB_SLOWDOWN": "0", "VETBENCH_STUB_FAULTS": "boom"}))
	require.ErrorContains(t, err, "VETBENCH_STUB_SLOWDOWN")
	require.ErrorContains(t, err, `unknown kind "boom"`)
}
