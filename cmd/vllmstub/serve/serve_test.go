package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts/roofline"
	"github.com/vetbench/vetbench/stub"
)

// startRun runs the command in the background and returns its base URL
// (read from the banner) and a stop function that returns run's error.
func startRun(t *testing.T, args ...string) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, "vllmstub", append([]string{"--host", "127.0.0.1", "--port", "0"}, args...), pw, io.Discard)
		_ = pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	re := regexp.MustCompile(`on (http://\S+)`)
	var url string
	for lines.Scan() {
		if m := re.FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
			break
		}
	}
	require.NotEmpty(t, url, "no banner")
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return url, func() error {
		cancel()
		select {
		case err := <-errc:
			return err
		case <-time.After(10 * time.Second):
			return context.DeadlineExceeded
		}
	}
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	if v != nil && res.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(res.Body).Decode(v))
	}
	return res.StatusCode
}

// TestRunServesAndShutsDown starts the binary's run with vllm serve flags
// and the twin's own, checks they took effect, and stops it gracefully.
func TestRunServesAndShutsDown(t *testing.T) {
	t.Setenv("VLLM_SERVER_DEV_MODE", "1")
	url, stop := startRun(t, "--served-model-name", "gemma-twin", "--max-model-len", "4096",
		"--limit-mm-per-prompt", `{"image":1}`, "--profile", "fast", "--time-scale", "2", "--fault", "http429:every=2,retry-after=5")
	var models struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	require.Equal(t, http.StatusOK, getJSON(t, url+"/v1/models", &models))
	require.Equal(t, "gemma-twin", models.Data[0].ID)
	require.Equal(t, 4096, models.Data[0].MaxModelLen)
	res, err := http.Post(url+"/reset_mm_cache", "application/json", nil)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "VLLM_SERVER_DEV_MODE=1 mounts the reset endpoints")
	chat := func() *http.Response {
		res, err := http.Post(url+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"gemma-twin","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`))
		require.NoError(t, err)
		res.Body.Close()
		return res
	}
	require.Equal(t, http.StatusOK, chat().StatusCode)
	second := chat()
	require.Equal(t, http.StatusTooManyRequests, second.StatusCode, "--fault http429:every=2")
	require.Equal(t, "5", second.Header.Get("Retry-After"))
	require.NoError(t, stop(), "SIGINT/SIGTERM (ctx) shuts down gracefully")
}

// TestRunDevModeOff shows the reset endpoints are 404 without dev mode.
func TestRunDevModeOff(t *testing.T) {
	t.Setenv("VLLM_SERVER_DEV_MODE", "")
	url, stop := startRun(t)
	res, err := http.Post(url+"/reset_prefix_cache", "application/json", nil)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.NoError(t, stop())
}

// TestRunBadFlags shows bad flags fail with an error that names them.
func TestRunBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--enable-prefix-caching", "--no-enable-prefix-caching"}, "contradict"},
		{[]string{"--logprobs-mode", "processed_logits"}, "raw logprobs only"},
		{[]string{"--limit-mm-per-prompt", `{"image":`}, "--limit-mm-per-prompt"},
		{[]string{"--limit-mm-per-prompt", `{"video":1}`}, "images only"},
		{[]string{"--profile", "a100"}, `unknown profile "a100"`},
		{[]string{"--fault", "http418"}, `unknown kind "http418"`},
		{[]string{"--time-scale", "0"}, "time scale"},
		{[]string{"--max-model-len", "-5"}, "max_model_len"},
		{[]string{"--replay", "/no/such/receipt.json"}, "--replay"},
		{[]string{"--answer-spread", "lots"}, "flag -answer-spread"},
		{[]string{"m1", "m2"}, "one MODEL argument"},
	} {
		err := run(context.Background(), "vllmstub", append([]string{"--port", "0"}, tc.args...), io.Discard, io.Discard)
		require.Error(t, err, "%v", tc.args)
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}

// TestProfileFlags shows vllm serve flags override the profile.
func TestProfileFlags(t *testing.T) {
	o, err := parse("vllmstub", []string{"my/model", "--max-num-seqs", "8", "--max-num-batched-tokens", "2048", "--no-enable-prefix-caching",
		"--num-gpu-blocks-override", "900", "--max-logprobs", "5", "--profile", "h100-gemma4-31b"}, io.Discard)
	require.NoError(t, err)
	p, err := o.buildProfile()
	require.NoError(t, err)
	want := stub.ProfileH100Gemma4()
	want.Model, want.Root = "my/model", "my/model"
	want.MaxNumSeqs, want.MaxNumBatchedTokens, want.EnablePrefixCaching, want.NumGPUBlocks, want.MaxLogprobs = 8, 2048, false, 900, 5
	require.Equal(t, want, p)
	js, err := json.Marshal(stub.ProfileFast())
	require.NoError(t, err)
	o, err = parse("vllmstub", []string{"--profile-json", string(js)}, io.Discard)
	require.NoError(t, err)
	p, err = o.buildProfile()
	require.NoError(t, err)
	require.Equal(t, stub.ProfileFast(), p, "--profile-json round-trips a whole profile")
}

// TestRunReplay serves a typevet receipt with --replay: the recorded
// distribution of an item's question comes back exactly through the
// client's softmax; a malformed receipt is refused, naming the flag.
func TestRunReplay(t *testing.T) {
	url, stop := startRun(t, "--replay", "../../../receipts/replay/testdata/check_match_vllm_receipt.json")
	cl := judgments.NewClient(url)
	spec := judgments.Spec{Name: "checks", Questions: []judgments.Question{
		judgments.NewNoul("payee_matches", "Is the payee on the check the payee in the register row?",
			"The check names the register payee.", "The check names a different payee.")}}
	ctrl, err := cl.Tokenize(t.Context(), spec.Controls())
	require.NoError(t, err)
	j, err := cl.Judge(t.Context(), spec, ctrl, judgments.Item{ID: "r00:clean", State: "A check."})
	require.NoError(t, err)
	require.InDelta(t, 0.9999999957707868, j.Answers[0].Value, 1e-12, "typevet's recorded P(true) for r00:clean")
	require.NoError(t, stop())

	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"backend": "vllm", "pins": {}}`), 0o600))
	err = run(context.Background(), "vllmstub", []string{"--port", "0", "--replay", bad}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "--replay")
}

// TestFlagsRoundTrip shows stub.Config.Args and this command agree: the
// command line and environment Args gives for a config make vllmstub serve
// that config, field for field.
func TestFlagsRoundTrip(t *testing.T) {
	p := stub.ProfileH100Gemma4()
	p.NumGPUBlocks = 900
	fault, err := stub.ParseFault("http429:every=3,retry-after=2")
	require.NoError(t, err)
	cfg := stub.Config{Profile: p, Model: "served-name", TimeScale: 10, Slowdown: 1.2, BatchNoise: 0.0004,
		Spread: stub.Spread{Confident: 0.7, NearTie: 0.1}, Faults: []stub.Fault{fault}, DevMode: true, TransportAllowance: 150 * time.Microsecond}
	back, args, env := roundTrip(t, cfg)
	require.Equal(t, map[string]string{"VLLM_SERVER_DEV_MODE": "1"}, env)
	require.Equal(t, []string{"--profile-json", "--served-model-name", "--time-scale", "--slowdown", "--batch-noise", "--answer-spread",
		"--transport-allowance", "--fault"}, flagNames(args))
	want, err := cfg.Resolve()
	require.NoError(t, err)
	require.Equal(t, want, back)

	// Batch noise off crosses as 0; defaults cross as nothing but the profile.
	back, args, _ = roundTrip(t, stub.Config{NoBatchNoise: true})
	require.True(t, back.NoBatchNoise)
	require.Equal(t, []string{"--profile-json", "--batch-noise"}, flagNames(args))

	rp, err := stub.NewReplay("none", nil)
	require.NoError(t, err)
	_, _, err = stub.Config{Replay: &rp}.Args()
	require.ErrorIs(t, err, errors.ErrUnsupported, "a replay crosses as a file")
	_, _, err = stub.Config{TimeScale: -1}.Args()
	require.ErrorContains(t, err, "time scale -1")
}

// roundTrip sends cfg through Args and this command's parsing and returns
// the config vllmstub would serve (resolved), with the args and env.
func roundTrip(t *testing.T, cfg stub.Config) (stub.Config, []string, map[string]string) {
	t.Helper()
	args, env, err := cfg.Args()
	require.NoError(t, err)
	for _, k := range []string{stub.EnvDevMode, stub.EnvAPIKey} {
		t.Setenv(k, env[k])
	}
	o, err := parse("vllmstub", args, io.Discard)
	require.NoError(t, err)
	served, err := o.config()
	require.NoError(t, err)
	served, err = served.Resolve()
	require.NoError(t, err)
	return served, args, env
}

func flagNames(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			out = append(out, a)
		}
	}
	return out
}

// TestPhysicalProfileFlags: -model-config and -gpu build a first-principles
// profile (roofline steps, KV capacity from the GPU's memory); measured
// peaks and dtypes reach it; a GPU family without fitted constants is
// refused unless one is borrowed; the profile crosses to a container as
// --profile-json unchanged.
func TestPhysicalProfileFlags(t *testing.T) {
	cfg := filepath.Join("..", "..", "..", "receipts", "roofline", "testdata", "qwen3-0.6b.json")
	o, err := parse("vllmstub", []string{"-model-config", cfg, "-gpu", "h100-sxm", "--max-model-len", "4096", "-bandwidth", "3e12", "-kv-dtype", "fp8"}, io.Discard)
	require.NoError(t, err)
	p, err := o.buildProfile()
	require.NoError(t, err)
	require.NotNil(t, p.Physical)
	require.Equal(t, "qwen3-0.6b", p.Name)
	require.Equal(t, 4096, p.MaxModelLen)
	require.Equal(t, 3e12, p.Physical.Hardware.Bandwidth.Value, "a measured peak wins")
	require.EqualValues(t, "measured", p.Physical.Hardware.Bandwidth.Source)
	require.EqualValues(t, "fp8", p.Physical.Dtypes.KV)
	require.Equal(t, "hopper", p.Physical.Efficiency.Family)
	// KV capacity: 80 GiB × 0.9 − the weights − the profile run's
	// activations (roofline.Shape.KVPlan), in 16-token blocks of 28
	// layers × 2 × 8 KV heads × 128 × 1 byte (fp8).
	shape, err := roofline.NewShape(p.Physical.Config, p.Physical.Dtypes)
	require.NoError(t, err)
	want := (80*(1<<30)*0.9 - 2*596049920 - shape.Activations(p.MaxNumBatchedTokens, p.MaxNumSeqs, 1)) / (28 * 2 * 8 * 128) / 16
	require.InDelta(t, want, float64(p.NumGPUBlocks), want/1000)

	_, err = parse("vllmstub", []string{"-model-config", cfg}, io.Discard)
	require.ErrorContains(t, err, "go together")
	o, err = parse("vllmstub", []string{"-model-config", cfg, "-gpu", "rtx3090"}, io.Discard)
	require.NoError(t, err)
	_, err = o.buildProfile()
	require.ErrorContains(t, err, "no fitted efficiency constants")
	o, err = parse("vllmstub", []string{"-model-config", cfg, "-gpu", "rtx3090", "-efficiency", "hopper"}, io.Discard)
	require.NoError(t, err)
	borrowed, err := o.buildProfile()
	require.NoError(t, err)
	require.Equal(t, 936e9, borrowed.Physical.Hardware.Bandwidth.Value)

	back, _, _ := roundTrip(t, stub.Config{Profile: p})
	require.Equal(t, p, back.Profile, "the profile survives --profile-json")
}

// TestFlagsRoundTripVLLM carries the vllm serve features the twin has
// (--api-key through VLLM_API_KEY, never the command line) across Args.
func TestFlagsRoundTripVLLM(t *testing.T) {
	cfg := stub.Config{APIKeys: []string{"k1", "k2"}, OffFormat: 0.25, Legacy: true, PromptTokensDetails: true, DataParallel: 2}
	back, args, env := roundTrip(t, cfg)
	require.Equal(t, map[string]string{"VLLM_API_KEY": "k1,k2"}, env)
	require.NotContains(t, strings.Join(args, " "), "k1", "the key stays off the command line")
	want, err := cfg.Resolve()
	require.NoError(t, err)
	require.Equal(t, want, back)
}

// TestRunAPIKey serves with --api-key: the guarded paths answer 401
// {"error": "Unauthorized"} without the key, the public ones answer.
func TestRunAPIKey(t *testing.T) {
	t.Setenv("VLLM_API_KEY", "")
	url, stop := startRun(t, "--api-key", "s3cr3t", "--data-parallel-size", "2")
	get := func(path, key string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, url+path, nil)
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := get("/v1/models", "")
	require.Equal(t, http.StatusUnauthorized, code)
	require.JSONEq(t, `{"error":"Unauthorized"}`, body)
	code, _ = get("/v1/models", "s3cr3t")
	require.Equal(t, http.StatusOK, code)
	code, _ = get("/health", "")
	require.Equal(t, http.StatusOK, code)
	code, body = get("/metrics", "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `engine="1"`, "--data-parallel-size 2: a second engine's series")
	require.NoError(t, stop())
}

// TestFeatureFlags: --speculative-config, --stream-interval,
// --reasoning-parser and --default-chat-template-kwargs set the profile's
// serving features (a physical profile's pricing gets the drafter too),
// survive --profile-json, and bad values are refused naming the flag.
func TestFeatureFlags(t *testing.T) {
	o, err := parse("vllmstub", []string{"--speculative-config", `{"method":"mtp","num_speculative_tokens":2}`, "--stream-interval", "4",
		"--reasoning-parser", "deepseek_v4", "--default-chat-template-kwargs", `{"thinking": true}`}, io.Discard)
	require.NoError(t, err)
	cfg, err := o.config()
	require.NoError(t, err)
	p := cfg.Profile
	require.Equal(t, &stub.Speculative{Method: "mtp", NumSpeculativeTokens: 2}, p.Speculative)
	require.Equal(t, 4, p.StreamInterval)
	require.Equal(t, &stub.Reasoning{Parser: "deepseek_v4", ThinkByDefault: true}, p.Reasoning)
	back, _, _ := roundTrip(t, cfg)
	require.Equal(t, p, back.Profile)

	phys := filepath.Join("..", "..", "..", "receipts", "roofline", "testdata", "qwen3-0.6b.json")
	o, err = parse("vllmstub", []string{"-model-config", phys, "-gpu", "h100-sxm", "--speculative-config", `{"num_speculative_tokens":3,"acceptance":[0.8,0.6,0.4]}`}, io.Discard)
	require.NoError(t, err)
	cfg, err = o.config()
	require.NoError(t, err)
	require.Equal(t, 3, cfg.Profile.Physical.Speculative.Tokens)
	require.InDelta(t, 0.6, cfg.Profile.Physical.Speculative.Acceptance, 1e-12)

	for flag, bad := range map[string]string{"--speculative-config": `{"method":"mtp"}`, "--stream-interval": "-2",
		"--reasoning-parser": "qwen9", "--default-chat-template-kwargs": "{"} {
		o, err := parse("vllmstub", []string{flag, bad}, io.Discard)
		if err == nil {
			_, err = o.config()
		}
		require.Error(t, err, flag)
	}
}
