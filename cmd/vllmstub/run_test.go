package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
		errc <- run(ctx, append([]string{"--host", "127.0.0.1", "--port", "0"}, args...), pw, io.Discard)
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
		{[]string{"--answer-spread", "lots"}, "--answer-spread"},
		{[]string{"m1", "m2"}, "one MODEL argument"},
	} {
		err := run(context.Background(), append([]string{"--port", "0"}, tc.args...), io.Discard, io.Discard)
		require.Error(t, err, "%v", tc.args)
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}

// TestProfileFlags shows vllm serve flags override the profile.
func TestProfileFlags(t *testing.T) {
	o, err := parse([]string{"my/model", "--max-num-seqs", "8", "--max-num-batched-tokens", "2048", "--no-enable-prefix-caching",
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
	o, err = parse([]string{"--profile-json", string(js)}, io.Discard)
	require.NoError(t, err)
	p, err = o.buildProfile()
	require.NoError(t, err)
	require.Equal(t, stub.ProfileFast(), p, "--profile-json round-trips a whole profile")
}
