package receipts_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

func TestIdentityDigestIgnoresRunDetails(t *testing.T) {
	t.Parallel()
	base := sample(t)
	want := base.IdentityDigest()
	for name, mutate := range map[string]func(r *receipts.Receipt){
		"concurrency": func(r *receipts.Receipt) { r.Pins.Concurrency, r.Throughput.Concurrency = 32, 32 },
		"run id":      func(r *receipts.Receipt) { r.RunID = "other" },
		"time": func(r *receipts.Receipt) {
			r.Started = r.Started.Add(time.Hour)
			r.Finished = r.Finished.Add(time.Hour)
		},
		"endpoint":  func(r *receipts.Receipt) { r.Target.Endpoint = "http://10.0.0.9:8000" },
		"container": func(r *receipts.Receipt) { r.Target.Kind = receipts.TargetContainer },
		"latency":   func(r *receipts.Receipt) { r.Items[0].LatencySeconds = 99 },
		"alias":     func(r *receipts.Receipt) { r.Pins.Model = "alias"; r.Pins.Served[0].ID = "alias" },
		"upstream":  func(r *receipts.Receipt) { r.Identity.Upstream = map[string]string{"issue": "1"} },
	} {
		r := sample(t)
		mutate(r)
		require.Equal(t, want, r.IdentityDigest(), name)
		require.Empty(t, receipts.IdentityDiff(base, r), name)
	}
}

func TestIdentityDigestCoversWhatDecidesAnswers(t *testing.T) {
	t.Parallel()
	base := sample(t)
	cases := []struct {
		name   string
		mutate func(r *receipts.Receipt)
		diff   string
	}{
		{"model", func(r *receipts.Receipt) {
			r.Pins.Model = "google/gemma-4-31B-it-FP8"
			r.Pins.Served[0] = receipts.ServedModel{ID: "google/gemma-4-31B-it-FP8", Root: "google/gemma-4-31B-it-FP8", MaxModelLen: 8192}
		}, "model: google/gemma-4-31B-it → google/gemma-4-31B-it-FP8"},
		{"revision", func(r *receipts.Receipt) { r.Pins.ModelRevision = "abc" }, ""}, // one side only: unverified
		{"max model len", func(r *receipts.Receipt) { r.Pins.Served[0].MaxModelLen = 4096 }, "served: google/gemma-4-31B-it (max_model_len 8192) → google/gemma-4-31B-it (max_model_len 4096)"},
		{"server build", func(r *receipts.Receipt) { r.Pins.ServerBuild = "0.31.0" }, "server_build: 0.30.0 → 0.31.0"},
		{"scoring mode", func(r *receipts.Receipt) { r.Pins.ScoringMode = "top_logprobs"; r.Pins.TopLogprobs = 20 }, "scoring_mode: token_ids → top_logprobs (top_logprobs 20)"},
		{"control ids", func(r *receipts.Receipt) { r.Pins.Controls["4"] = 1 }, "control_token_ids: 0=236771 1=236770 2=236769 3=236768 4=236767 → 0=236771 1=236770 2=236769 3=236768 4=1"},
		{"prompt", func(r *receipts.Receipt) { r.Identity.PromptDigests["verdict"] = strings.Repeat("f", 64) }, "prompt_digests.verdict: "},
		{"slice", func(r *receipts.Receipt) { r.Pins.Fixture.SliceSHA256 = strings.Repeat("cd", 32) }, "fixture.slice_sha256: abababababab… → cdcdcdcdcdcd…"},
		{"item image", func(r *receipts.Receipt) { r.Identity.FixtureDigests["i2"] = strings.Repeat("09", 32) }, "fixture_digests: 1 items differ (i2)"},
		{"server flags", func(r *receipts.Receipt) { r.Identity.ServerFlags = "--enable-prefix-caching" }, ""},
		{"server env", func(r *receipts.Receipt) { r.Identity.ServerEnv = "VLLM_BATCH_INVARIANT=1" }, ""},
		{"harness", func(r *receipts.Receipt) { r.Identity.HarnessVersion = "vetbench/other" }, "harness_version: vetbench/test → vetbench/other"},
		{"twin vs live", func(r *receipts.Receipt) { r.Target.Kind = receipts.TargetLive }, "target: twin → live"},
		{"set", func(r *receipts.Receipt) { r.Set = "faces" }, "set: toy → faces"},
	}
	for _, c := range cases {
		r := sample(t)
		c.mutate(r)
		require.NotEqual(t, base.IdentityDigest(), r.IdentityDigest(), c.name)
		diff := receipts.IdentityDiff(base, r)
		if c.diff == "" {
			require.Empty(t, diff, c.name)
			require.NotEmpty(t, receipts.IdentityUnverified(base, r), c.name)
			continue
		}
		found := false
		for _, d := range diff {
			found = found || strings.HasPrefix(d, c.diff)
		}
		require.True(t, found, "%s: %q", c.name, diff)
	}
}

// A server environment stated on both sides is compared; a receipt written
// before the field existed keeps its digest.
func TestIdentityServerEnv(t *testing.T) {
	t.Parallel()
	a, b := sample(t), sample(t)
	old := a.IdentityDigest()
	a.Identity.ServerEnv = "VLLM_BATCH_INVARIANT=1"
	b.Identity.ServerEnv = "VLLM_BATCH_INVARIANT=0"
	require.Equal(t, []string{"server_env: VLLM_BATCH_INVARIANT=1 → VLLM_BATCH_INVARIANT=0"}, receipts.IdentityDiff(a, b))
	b.Identity.ServerEnv = ""
	require.Equal(t, old, b.IdentityDigest(), "an unrecorded server env leaves the digest as it was")
	require.NoError(t, b.Validate())
}

func TestNormalizeDropsVolatileOnly(t *testing.T) {
	t.Parallel()
	a, b := sample(t), sample(t)
	b.RunID = "run-2"
	b.Started = b.Started.Add(time.Hour)
	b.Finished = b.Finished.Add(2 * time.Hour)
	b.Target.Endpoint = "http://127.0.0.1:9999"
	b.Throughput.WallSeconds, b.Throughput.JudgmentsPerSecond = 3, 1.3
	b.Throughput.Latency = receipts.Latency{N: 4, Mean: 0.5, P50: 0.4, P95: 0.9, P99: 0.9}
	b.Server.Counters["request_success"] = 99
	b.Items[2].LatencySeconds = 7
	b.Warnings = []string{"slow"}
	require.Equal(t, receipts.Normalize(a), receipts.Normalize(b))

	// What must stay stable does not normalize away.
	c := sample(t)
	c.Items[2].Answers[0] = noul(t, 0.61)
	require.NotEqual(t, receipts.Normalize(a), receipts.Normalize(c))
	require.NoError(t, receipts.Normalize(a).Validate())
	// Normalize copies: the input is untouched.
	require.Equal(t, "run-1", a.RunID)
}

func TestClone(t *testing.T) {
	t.Parallel()
	r := sample(t)
	sat := 0.9
	r.Checks = &receipts.Checks{LittlesLaw: &receipts.LittlesLaw{Saturation: &sat, Problems: []string{"p"}}}
	r.Quality = &receipts.Quality{NoulAcceptRateByGroup: map[string]map[string]float64{"same": {"g": 0.5}}}
	c := r.Clone()
	require.Equal(t, r, c)
	c.Items[0].Answers[1].Probabilities["a"] = 0
	c.Items[0].Answers[1].Labels[0] = "z"
	c.Items[0].Gold["verdict"][0] = "z"
	c.Pins.Controls["0"] = 0
	c.Pins.Served[0].ID = "z"
	c.Server.Counters["request_success"] = 0
	c.Identity.PromptDigests["same"] = ""
	*c.Checks.LittlesLaw.Saturation = 0
	c.Checks.LittlesLaw.Problems[0] = "z"
	c.Quality.NoulAcceptRateByGroup["same"]["g"] = 0
	c.Started = c.Started.Add(time.Hour)
	fresh := sample(t)
	require.Equal(t, fresh.Items, r.Items)
	require.Equal(t, fresh.Pins, r.Pins)
	require.Equal(t, fresh.Server, r.Server)
	require.Equal(t, fresh.Identity, r.Identity)
	require.Equal(t, fresh.Started, r.Started)
	require.Equal(t, 0.9, *r.Checks.LittlesLaw.Saturation)
	require.Equal(t, "p", r.Checks.LittlesLaw.Problems[0])
	require.Equal(t, 0.5, r.Quality.NoulAcceptRateByGroup["same"]["g"])
	require.Nil(t, (*receipts.Receipt)(nil).Clone())
}
