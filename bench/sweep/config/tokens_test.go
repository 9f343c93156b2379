package config

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTokenAndMatrixDefaults(t *testing.T) {
	c := Default()
	require.Equal(t, Tokens{Workloads: []string{"text", "one_image"}, API: "/v1/chat/completions", Levels: []int{1, 4, 8, 16, 32},
		OutputTokens: 128, Repeats: 3, Warmup: 1}, c.Tokens)
	require.Equal(t, Matrix{Contexts: []int{8192, 16384, 32768, 65536, 131072}, Levels: []int{1, 2, 4, 8, 16, 32, 64, 128},
		Duration: 30 * time.Second, OutputTokens: 4096, Targeting: "estimate", LoopDetection: true}, c.Matrix)
}

func TestTokenAndMatrixSettings(t *testing.T) {
	parse := func(scope Scope, environ map[string]string, args ...string) (Config, error) {
		fs := flag.NewFlagSet(string(scope), flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		src := ScopeFlags(fs, scope)
		if err := fs.Parse(args); err != nil {
			return Config{}, err
		}
		return Load(Env(env(environ)), src)
	}
	environ := map[string]string{EnvTokensLevels: "2,4", EnvMatrixLevels: "1,8", EnvLevels: "16", EnvTokensOutput: "64"}
	c, err := parse(ScopeTokens, environ, "-levels", "1,32", "-workload", "one_image", "-repeats", "5", "-max-failed", "0.1", "-out", "o")
	require.NoError(t, err)
	require.Equal(t, Tokens{Workloads: []string{"one_image"}, API: "/v1/chat/completions", Levels: []int{1, 32}, OutputTokens: 64, Repeats: 5, Warmup: 1, MaxFailed: 0.1}, c.Tokens)
	require.Equal(t, []int{16}, c.Levels, "-levels of tokens is not the judgments' levels")
	require.Equal(t, []int{1, 8}, c.Matrix.Levels)
	require.Equal(t, "o", c.Out)
	c, err = parse(ScopeTokens, nil, "-api", "completions", "-workload", "text")
	require.NoError(t, err)
	require.Equal(t, "/v1/completions", c.Tokens.API)
	_, err = parse(ScopeTokens, nil, "-api", "/v1/completions")
	require.ErrorContains(t, err, "want chat or completions")

	c, err = parse(ScopeMatrix, environ, "-contexts", "8K,123k,5000", "-duration", "2s", "-output", "256", "-targeting", "exact", "-loop-detection=false", "-ready-timeout", "5s")
	require.NoError(t, err)
	require.Equal(t, Matrix{Contexts: []int{8192, 125952, 5000}, Levels: []int{1, 8}, Duration: 2 * time.Second, OutputTokens: 256,
		Targeting: "exact", ReadyTimeout: 5 * time.Second}, c.Matrix)

	c, err = parse(ScopeMatrix, nil, "-scrape-interval", "50ms", "-hold", "0", "-pause", "10ms")
	require.NoError(t, err)
	require.Equal(t, 50*time.Millisecond, c.Matrix.ScrapeInterval)
	require.Equal(t, time.Duration(-1), c.Matrix.Hold, "0 said is none, not the default")
	require.Equal(t, 10*time.Millisecond, c.Matrix.Pause)

	for _, tc := range []struct {
		scope Scope
		args  []string
		want  string
	}{
		{ScopeTokens, []string{"-levels", "4,4"}, `-levels "4,4": level 4 given twice`},
		{ScopeTokens, []string{"-workload", "video"}, `workload "video": want text and/or one_image`},
		{ScopeTokens, []string{"-output", "0"}, `-output "0": want a whole number >= 1`},
		{ScopeTokens, []string{"-max-failed", "1"}, `want a share from 0 to below 1`},
		{ScopeMatrix, []string{"-contexts", "8Q"}, `"8Q" is not a context length`},
		{ScopeMatrix, []string{"-contexts", "8K,8192"}, `context 8192 given twice`},
		{ScopeMatrix, []string{"-duration", "0s"}, `want a positive duration`},
		{ScopeMatrix, []string{"-targeting", "guess"}, `want estimate or exact`},
		{ScopeMatrix, []string{"-scrape-interval", "0s"}, `want a positive duration such as 1s`},
		{ScopeMatrix, []string{"-hold", "-1s"}, `want a duration >= 0`},
	} {
		_, err := parse(tc.scope, nil, tc.args...)
		require.ErrorContains(t, err, tc.want, tc.args)
	}
	_, err = Load(Env(env(map[string]string{EnvMatrixDuration: "forever"})))
	require.ErrorContains(t, err, `VETBENCH_MATRIX_DURATION="forever"`)

	// Each command has only its own flags.
	fs := flag.NewFlagSet("tokens", flag.ContinueOnError)
	var b strings.Builder
	fs.SetOutput(&b)
	ScopeFlags(fs, ScopeTokens)
	fs.PrintDefaults()
	require.Contains(t, b.String(), "(VETBENCH_TOKENS_LEVELS) (default 1,4,8,16,32)")
	require.NotContains(t, b.String(), "-sets")
	require.NotContains(t, b.String(), "-contexts")
}
