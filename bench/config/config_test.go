package config

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/fixtures/sets"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := Load(Env(env(nil)))
	require.NoError(t, err)
	require.Equal(t, Default(), c)
	require.Equal(t, []string{"checks", "faces", "signatures"}, c.Sets)
	require.Equal(t, []int{1, 4, 16, 32}, c.Levels)
	require.Equal(t, []receipts.Arm{receipts.ArmCold}, c.Arms)
	require.Equal(t, judgments.ModeTokenIDs, c.Mode)
	require.Equal(t, judgments.DefaultTopLogprobs, c.TopLogprobs)
	require.Equal(t, 120*time.Second, c.RequestTimeout)
	require.Equal(t, 1, c.Warmup)
	require.Equal(t, Twin{TimeScale: 1, Slowdown: 1}, c.Twin)
	require.Empty(t, c.Target)
	require.Equal(t, sets.Options{}, c.Fixtures)

	// Defaults are copies: a caller changing its Config changes no other.
	c.Levels[0] = 99
	require.Equal(t, 1, Default().Levels[0])
}

func TestEnv(t *testing.T) {
	c, err := Load(Env(env(map[string]string{
		EnvEndpoint:        "http://gpu-box:8000/",
		EnvModel:           "google/gemma-4-31B-it",
		EnvAPIKey:          "sk-secret",
		EnvLevels:          "1, 32",
		EnvSets:            "faces",
		EnvScoring:         "top_logprobs",
		EnvTopLogprobs:     "5",
		EnvTimeout:         "90s",
		EnvArms:            "cold,warm",
		EnvContinueOnError: "1",
		EnvStub:            "inprocess",
		EnvStubProfile:     "h100-gemma4-31b",
		EnvStubTimeScale:   "10",
		EnvStubSlowdown:    "1.2",
		EnvStubFaults:      "http500:every=3; nan:match=r01;",
		EnvOut:             "/tmp/out",
		EnvGoldenDir:       "goldens/x",
		EnvModelRevision:   "abc",
		EnvServerFlags:     "--max-num-seqs 32",
		EnvGPUHourlyUSD:    " 2.49 ",
		EnvLFWDir:          " /data/lfw ",
		EnvCEDARDir:        "/data/cedar",
		EnvFixtureSeed:     "7",
		EnvFixtureSize:     "30",
		EnvTypevetIDs:      "true",
		"VETBENCH_UNKNOWN": "ignored",
	})))
	require.NoError(t, err)
	require.Equal(t, Config{
		Target:          Target{Endpoint: "http://gpu-box:8000", Model: "google/gemma-4-31B-it", APIKey: "sk-secret"},
		Twin:            Twin{Placement: receipts.TargetInProcess, Profile: "h100-gemma4-31b", TimeScale: 10, Slowdown: 1.2, Faults: []string{"http500:every=3", "nan:match=r01"}},
		Sets:            []string{"faces"},
		Fixtures:        sets.Options{Seed: 7, Size: 30, LFWDir: "/data/lfw", CEDARDir: "/data/cedar", TypevetIDs: true},
		Levels:          []int{1, 32},
		Arms:            []receipts.Arm{receipts.ArmCold, receipts.ArmWarm},
		Warmup:          1,
		RequestTimeout:  90 * time.Second,
		ContinueOnError: true,
		Mode:            judgments.ModeTopLogprobs,
		TopLogprobs:     5,
		Out:             "/tmp/out",
		GoldenDir:       "goldens/x",
		ModelRevision:   "abc",
		ServerFlags:     "--max-num-seqs 32",
		GPUHourlyUSD:    2.49,
		Tokens:          Default().Tokens,
		Matrix:          Default().Matrix,
	}, c)
}

// Every bad value is reported at once, each naming its variable and value.
func TestEnvErrors(t *testing.T) {
	for _, tt := range []struct {
		name, value string
		want        string
	}{
		{EnvEndpoint, "gpu-box:8000", `VETBENCH_ENDPOINT="gpu-box:8000": want a base URL such as http://gpu-box:8000`},
		{EnvStub, "vm", `VETBENCH_STUB="vm": want container or inprocess`},
		{EnvStubTimeScale, "0", `VETBENCH_STUB_TIME_SCALE="0": want a number > 0`},
		{EnvStubSlowdown, "Inf", `VETBENCH_STUB_SLOWDOWN="Inf": want a factor > 0`},
		{EnvScoring, "logits", `VETBENCH_SCORING="logits"`},
		{EnvTopLogprobs, "0", `VETBENCH_TOP_LOGPROBS="0": want a positive integer`},
		{EnvSets, "cats", `VETBENCH_SETS="cats": unknown set "cats" (want checks, faces, signatures)`},
		{EnvSets, ",", `VETBENCH_SETS=",": want at least one set`},
		{EnvLevels, "1,x", `VETBENCH_LEVELS="1,x": "x" is not a concurrency level >= 1`},
		{EnvLevels, "0", `VETBENCH_LEVELS="0": "0" is not a concurrency level`},
		{EnvArms, "hot", `VETBENCH_ARMS="hot": arm "hot": want cold and/or warm`},
		{EnvTimeout, "90", `VETBENCH_TIMEOUT="90": want a positive duration such as 90s`},
		{EnvContinueOnError, "yes please", `VETBENCH_CONTINUE_ON_ERROR="yes please": want true or false`},
		{EnvGPUHourlyUSD, "$2.49", `VETBENCH_GPU_HOURLY_USD="$2.49": not a number`},
		{EnvGPUHourlyUSD, "2,49", `VETBENCH_GPU_HOURLY_USD="2,49": not a number`},
		{EnvGPUHourlyUSD, "0", `VETBENCH_GPU_HOURLY_USD="0": want a positive, finite price`},
		{EnvGPUHourlyUSD, "-1", `VETBENCH_GPU_HOURLY_USD="-1": want a positive`},
		{EnvGPUHourlyUSD, "NaN", `VETBENCH_GPU_HOURLY_USD="NaN": want a positive, finite`},
		{EnvFixtureSeed, "-1", `VETBENCH_FIXTURE_SEED="-1": want a whole number >= 0`},
		{EnvFixtureSeed, "zero", `VETBENCH_FIXTURE_SEED="zero": want a whole number >= 0`},
		{EnvFixtureSize, "0", `VETBENCH_FIXTURE_SIZE="0": want a whole number >= 1`},
		{EnvTypevetIDs, "yes please", `VETBENCH_TYPEVET_IDS="yes please": want true or false`},
	} {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			_, err := Load(Env(env(map[string]string{tt.name: tt.value})))
			require.ErrorContains(t, err, "bad configuration: ")
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := Load(Env(env(map[string]string{EnvLevels: "x", EnvStub: "vm", EnvArms: "hot"})))
	for _, want := range []string{EnvLevels, EnvStub, EnvArms} {
		require.ErrorContains(t, err, want+"=")
	}
	// Blank means unset, for every variable.
	blank := map[string]string{}
	for _, s := range settings() {
		if s.env != "" {
			blank[s.env] = "  "
		}
	}
	c, err := Load(Env(env(blank)))
	require.NoError(t, err)
	require.Equal(t, Default(), c)
}

// Flags override the environment, only where given; a flag's error names
// the flag. The environment is never rewritten from flags.
func TestFlags(t *testing.T) {
	parse := func(environ map[string]string, args ...string) (Config, error) {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		src := Flags(fs)
		if err := fs.Parse(args); err != nil {
			return Config{}, err
		}
		return Load(Env(env(environ)), src)
	}
	environ := map[string]string{EnvLevels: "1,4", EnvSets: "faces", EnvOut: "/env/out"}

	c, err := parse(environ)
	require.NoError(t, err)
	require.Equal(t, []int{1, 4}, c.Levels)
	require.Equal(t, "/env/out", c.Out)

	c, err = parse(environ, "-levels", "16", "-arms", "warm", "-warmup", "0", "-out", "cli/out")
	require.NoError(t, err)
	require.Equal(t, []int{16}, c.Levels, "the flag wins")
	require.Equal(t, []string{"faces"}, c.Sets, "the variable stands where no flag is given")
	require.Equal(t, []receipts.Arm{receipts.ArmWarm}, c.Arms)
	require.Equal(t, 0, c.Warmup)
	require.Equal(t, "cli/out", c.Out)

	_, err = parse(environ, "-levels", "0", "-sets", "cats", "-warmup", "-1")
	require.ErrorContains(t, err, `-levels "0": "0" is not a concurrency level >= 1`)
	require.ErrorContains(t, err, `-sets "cats": unknown set "cats"`)
	require.ErrorContains(t, err, `-warmup "-1": want a whole number >= 0`)
	require.NotContains(t, err.Error(), "VETBENCH_LEVELS", "the environment's own value was fine")

	// A bad variable is an error even when a flag overrides it: the user
	// set it, and one of the two is a mistake worth hearing about.
	_, err = parse(map[string]string{EnvLevels: "x"}, "-levels", "4")
	require.ErrorContains(t, err, `VETBENCH_LEVELS="x"`)
}

func TestFlagHelp(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var b strings.Builder
	fs.SetOutput(&b)
	Flags(fs)
	fs.PrintDefaults()
	for _, want := range []string{
		"-levels levels", "(VETBENCH_LEVELS) (default 1,4,16,32)",
		"-sets sets", "(default checks,faces,signatures)",
		"-arms arms", "(default cold)", "-out directory", "-warmup n", "(default 1)",
	} {
		require.Contains(t, b.String(), want)
	}
	require.NotContains(t, b.String(), "api", "secrets are never flags")
}

func ExampleLoad() {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	flags := Flags(fs)
	_ = fs.Parse([]string{"-levels", "1,16"})
	environ := map[string]string{"VETBENCH_SETS": "checks", "VETBENCH_LEVELS": "32"}
	c, err := Load(Env(func(k string) string { return environ[k] }), flags)
	fmt.Println(c.Sets, c.Levels, c.Arms, err)
	// Output: [checks] [1 16] [cold] <nil>
}
