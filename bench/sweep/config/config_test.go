package config

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	require.Equal(t, Twin{TimeScale: 1, Slowdown: 1, Replicas: 1}, c.Twin)
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
		EnvControlTimeout:  "3s",
		EnvMaxFailed:       "5%",
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
		EnvServerEnv:       " VLLM_BATCH_INVARIANT=1 ",
		EnvScoringFallback: "true",
		EnvGPUHourlyUSD:    " 2.49 ",
		EnvLFWDir:          " /data/lfw ",
		EnvCEDARDir:        "/data/cedar",
		EnvFixtureSeed:     "7",
		EnvFixtureSize:     "30",
		EnvTypevetIDs:      "true",
		EnvDispatch:        " typevet ",
		"VETBENCH_UNKNOWN": "ignored",
	})))
	require.NoError(t, err)
	require.Equal(t, Config{
		Target:          Target{Endpoint: "http://gpu-box:8000", Model: "google/gemma-4-31B-it", APIKey: "sk-secret"},
		Twin:            Twin{Placement: receipts.TargetInProcess, Profile: "h100-gemma4-31b", TimeScale: 10, Slowdown: 1.2, Faults: []string{"http500:every=3", "nan:match=r01"}, Replicas: 1},
		Sets:            []string{"faces"},
		Fixtures:        sets.Options{Seed: 7, Size: 30, LFWDir: "/data/lfw", CEDARDir: "/data/cedar", TypevetIDs: true},
		Levels:          []int{1, 32},
		Arms:            []receipts.Arm{receipts.ArmCold, receipts.ArmWarm},
		Warmup:          1,
		RequestTimeout:  90 * time.Second,
		ControlTimeout:  3 * time.Second,
		ContinueOnError: true,
		Dispatch:        judgments.DispatchTypevet,
		MaxFailed:       0.05,
		Mode:            judgments.ModeTopLogprobs,
		TopLogprobs:     5,
		Out:             "/tmp/out",
		GoldenDir:       "goldens/x",
		ModelRevision:   "abc",
		ServerFlags:     "--max-num-seqs 32",
		ServerEnv:       "VLLM_BATCH_INVARIANT=1",
		ScoringFallback: true,
		GPUHourlyUSD:    2.49,
		Tokens:          Default().Tokens,
		Matrix:          Default().Matrix,
		Stream:          Default().Stream,
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
		{EnvControlTimeout, "-1s", `VETBENCH_CONTROL_TIMEOUT="-1s": want a positive duration`},
		{EnvMaxFailed, "1.5", `VETBENCH_MAX_FAILED="1.5": want a share from 0 to 1`},
		{EnvMaxFailed, "101%", `VETBENCH_MAX_FAILED="101%": want a share`},
		{EnvMaxFailed, "-0.1", `VETBENCH_MAX_FAILED="-0.1": want a share`},
		{EnvMaxFailed, "NaN", `VETBENCH_MAX_FAILED="NaN": want a share`},
		// A base URL with credentials or a query is refused, and the value
		// is echoed without them, also when it does not parse.
		{EnvEndpoint, "http://user:SECRET@gpu-box:8000", `VETBENCH_ENDPOINT="http://xxxxx@gpu-box:8000": a base URL holds no credentials: give the key in VETBENCH_API_KEY`},
		{EnvEndpoint, "http://gpu-box:8000/?token=SECRET", `VETBENCH_ENDPOINT="http://gpu-box:8000/?xxxxx": a base URL has no query`},
		{EnvEndpoint, "http://user:SECRET@gpu-box:port", `VETBENCH_ENDPOINT="http://xxxxx@gpu-box:port": want a base URL`},
		{EnvEndpoint, "user:SECRET@gpu-box", `VETBENCH_ENDPOINT="xxxxx@gpu-box": want a base URL`},
		{EnvGPUHourlyUSD, "$2.49", `VETBENCH_GPU_HOURLY_USD="$2.49": not a number`},
		{EnvGPUHourlyUSD, "2,49", `VETBENCH_GPU_HOURLY_USD="2,49": not a number`},
		{EnvGPUHourlyUSD, "0", `VETBENCH_GPU_HOURLY_USD="0": want a positive, finite price`},
		{EnvGPUHourlyUSD, "-1", `VETBENCH_GPU_HOURLY_USD="-1": want a positive`},
		{EnvGPUHourlyUSD, "NaN", `VETBENCH_GPU_HOURLY_USD="NaN": want a positive, finite`},
		{EnvFixtureSeed, "-1", `VETBENCH_FIXTURE_SEED="-1": want a whole number >= 0`},
		{EnvFixtureSeed, "zero", `VETBENCH_FIXTURE_SEED="zero": want a whole number >= 0`},
		{EnvFixtureSize, "0", `VETBENCH_FIXTURE_SIZE="0": want a whole number >= 1`},
		{EnvTypevetIDs, "yes please", `VETBENCH_TYPEVET_IDS="yes please": want true or false`},
		{EnvScoringFallback, "maybe", `VETBENCH_SCORING_FALLBACK="maybe": want true or false`},
	} {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			_, err := Load(Env(env(map[string]string{tt.name: tt.value})))
			require.ErrorContains(t, err, "bad configuration: ")
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), "SECRET")
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

// Probes, resets, scrapes and health checks wait at most 10 s, or less
// when requests are told to give up sooner; a stated control timeout wins.
func TestControlDeadline(t *testing.T) {
	c := Default()
	require.Equal(t, DefaultControlTimeout, c.ControlDeadline())
	c.RequestTimeout = 2 * time.Second
	require.Equal(t, 2*time.Second, c.ControlDeadline())
	c.ControlTimeout = 30 * time.Second
	require.Equal(t, 30*time.Second, c.ControlDeadline())
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

func writeRunFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.toml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// A run file sets what the environment and flags do, and they override it:
// defaults < file < environment < flags.
func TestFile(t *testing.T) {
	path := writeRunFile(t, `
sets = ["checks", "faces"]
levels = [1, 16]
arms = "cold,warm"
warmup = 2
timeout = "90s"
continue_on_error = true
scoring = "top_logprobs"
top_logprobs = 5
gpu_hourly_usd = 2.49
golden_dir = "goldens/x"
out = "baseline"

[target]
endpoint = "http://gpu-box:8000/"
model = "google/gemma-4-31B-it"
model_revision = "abc"
server_flags = "--max-num-seqs 32"

[twin]
placement = "inprocess"
profile = "h100-gemma4-31b"
time_scale = 10
slowdown = 1.2
faults = ["http500:every=3", "nan:match=r01"]

[fixtures]
seed = 7
size = 3
lfw_dir = "/data/lfw"
cedar_dir = ""
typevet_ids = true
`)
	c, err := Load(Env(env(map[string]string{EnvConfig: path})))
	require.NoError(t, err)
	require.Equal(t, Config{
		Target:          Target{Endpoint: "http://gpu-box:8000", Model: "google/gemma-4-31B-it"},
		Twin:            Twin{Placement: receipts.TargetInProcess, Profile: "h100-gemma4-31b", TimeScale: 10, Slowdown: 1.2, Faults: []string{"http500:every=3", "nan:match=r01"}, Replicas: 1},
		Sets:            []string{"checks", "faces"},
		Dispatch:        judgments.DispatchInOrder,
		Fixtures:        sets.Options{Seed: 7, Size: 3, LFWDir: "/data/lfw", TypevetIDs: true},
		Levels:          []int{1, 16},
		Arms:            []receipts.Arm{receipts.ArmCold, receipts.ArmWarm},
		Warmup:          2,
		RequestTimeout:  90 * time.Second,
		ContinueOnError: true,
		Mode:            judgments.ModeTopLogprobs,
		TopLogprobs:     5,
		Out:             "baseline",
		File:            path,
		GoldenDir:       "goldens/x",
		ModelRevision:   "abc",
		ServerFlags:     "--max-num-seqs 32",
		GPUHourlyUSD:    2.49,
		Tokens:          Default().Tokens,
		Matrix:          Default().Matrix,
		Stream:          Default().Stream,
	}, c)

	// The environment overrides the file, the flags override both; -config
	// names the file as VETBENCH_CONFIG does.
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags := Flags(fs)
	require.NoError(t, fs.Parse([]string{"-config", path, "-levels", "4", "-force"}))
	c, err = Load(Env(env(map[string]string{EnvLevels: "32", EnvSets: "signatures", EnvStubProfile: "fast"})), flags)
	require.NoError(t, err)
	require.Equal(t, []int{4}, c.Levels, "flag over environment over file")
	require.Equal(t, []string{"signatures"}, c.Sets, "environment over file")
	require.Equal(t, "fast", c.Twin.Profile, "environment over file")
	require.Equal(t, 2, c.Warmup, "the file stands where nothing overrides it")
	require.True(t, c.Force)
	require.Equal(t, path, c.File)
}

func TestFileErrors(t *testing.T) {
	for _, tt := range []struct {
		name, content string
		want          []string
	}{
		{"unknown key", "levles = [1]\n", []string{`unknown key "levles" (top-level keys: `, "levels", "[twin]"}},
		{"unknown key in a table", "[twin]\nprofil = \"fast\"\n", []string{`unknown key "twin.profil" (keys of [twin]: placement, profile, time_scale, slowdown, faults, replicas)`}},
		{"unknown table", "[twn]\nprofile = \"fast\"\n", []string{`unknown table [twn] (key "twn.profile")`}},
		{"api key", "[target]\napi_key = \"sk-secret\"\n", []string{"target.api_key: the API key is never read from a file; set VETBENCH_API_KEY"}},
		{"force", "force = true\n", []string{"force: never kept in a file"}},
		{"bad value", "levels = [0]\n", []string{`levels = [0]: "0" is not a concurrency level >= 1`}},
		{"duplicate level", "levels = [1, 1]\n", []string{"levels = [1,1]: level 1 given twice"}},
		{"array for a value", "warmup = [1]\n", []string{"warmup = [1]: want one value, not an array"}},
		{"table for a value", "[sets]\nx = 1\n", []string{`unknown key "sets.x": sets is a setting, not a table`}},
		{"element holds the separator", "sets = [\"checks,faces\"]\n", []string{`element 0 ("checks,faces") holds ","`}},
		{"syntax", "levels = [1,\n", []string{"run file ", "toml: "}},
		// An endpoint with credentials or a query is refused, echoed
		// without them.
		{"endpoint credentials", "[target]\nendpoint = \"http://u:sk-secret@gpu-box:8000\"\n", []string{`target.endpoint = "http://xxxxx@gpu-box:8000": a base URL holds no credentials`}},
		{"endpoint query", "[target]\nendpoint = \"http://gpu-box:8000/?token=sk-secret\"\n", []string{`target.endpoint = "http://gpu-box:8000/?xxxxx": a base URL has no query`}},
		{"bad max_failed", "max_failed = 2\n", []string{"max_failed = 2: want a share from 0 to 1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeRunFile(t, tt.content)
			_, err := Load(Env(env(map[string]string{EnvConfig: path})))
			require.Error(t, err)
			require.Contains(t, err.Error(), path)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
			require.NotContains(t, err.Error(), "sk-secret", "a secret is never echoed")
		})
	}
	_, err := Load(Env(env(map[string]string{EnvConfig: filepath.Join(t.TempDir(), "nope.toml")})))
	require.ErrorContains(t, err, "run file: open ")
	require.ErrorContains(t, err, "no such file")

	// Every bad key is reported at once.
	path := writeRunFile(t, "levles = 1\nsets = [\"cats\"]\n")
	_, err = Load(File(path))
	require.ErrorContains(t, err, `unknown key "levles"`)
	require.ErrorContains(t, err, `unknown set "cats"`)
}

// settings.toml, read back as a run file, gives the same configuration;
// it never holds the API key, the endpoint's user info or query, or out.
func TestWriteSettingsRoundTrip(t *testing.T) {
	c, err := Load(Env(env(map[string]string{
		EnvEndpoint: "http://gpu-box:8000", EnvAPIKey: "sk-secret", EnvModel: "m \"quoted\"\x7f",
		EnvLevels: "1,32", EnvArms: "warm,cold", EnvStubFaults: "http500:every=3;nan:match=r01",
		EnvStubTimeScale: "10", EnvGPUHourlyUSD: "2.49", EnvFixtureSize: "3", EnvTypevetIDs: "1",
		EnvServerFlags: "--max-num-seqs 32\n--x", EnvOut: "/somewhere", EnvForce: "1",
	})))
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, WriteSettings(&b, c))
	text := b.String()
	require.NotContains(t, text, "sk-secret")
	require.NotContains(t, text, "pw@")
	require.NotContains(t, text, "/somewhere")
	require.NotContains(t, text, "force")
	require.Contains(t, text, "levels = [1, 32]\n")
	require.Contains(t, text, "\n[twin]\n")
	require.Less(t, strings.Index(text, "levels ="), strings.Index(text, "[target]"), "top-level keys come before the tables")

	path := writeRunFile(t, text)
	got, err := Load(File(path))
	require.NoError(t, err, text)
	want := c
	want.Target.APIKey, want.Out, want.Force, want.File = "", "", false, path
	require.Equal(t, want, got, text)

	// Load refuses an endpoint with credentials or a query; one set by
	// hand is still written without them.
	withSecrets := c
	withSecrets.Target.Endpoint = "http://user:pw@gpu-box:8000/?token=SECRET"
	b.Reset()
	require.NoError(t, WriteSettings(&b, withSecrets))
	require.NotContains(t, b.String(), "pw@")
	require.NotContains(t, b.String(), "SECRET")
	require.Contains(t, b.String(), `endpoint = "http://xxxxx@gpu-box:8000/?xxxxx"`)

	// The defaults round-trip too.
	b.Reset()
	require.NoError(t, WriteSettings(&b, Default()))
	path = writeRunFile(t, b.String())
	got, err = Load(File(path))
	require.NoError(t, err)
	want = Default()
	want.File = path
	require.Equal(t, want, got)
}

// Duplicates are refused: two points of one name would write one receipt.
func TestDuplicatesRefused(t *testing.T) {
	for _, tt := range []struct{ name, value, want string }{
		{EnvLevels, "1,4,1", `VETBENCH_LEVELS="1,4,1": level 1 given twice`},
		{EnvSets, "checks, checks", "set checks given twice"},
		{EnvArms, "cold,cold", "arm cold given twice"},
	} {
		_, err := Load(Env(env(map[string]string{tt.name: tt.value})))
		require.ErrorContains(t, err, tt.want)
	}
}

func TestResolve(t *testing.T) {
	c := Config{Out: "baseline", GoldenDir: "/abs/goldens", File: "run.toml", Fixtures: sets.Options{LFWDir: "data/lfw"}}
	c.Resolve("/module")
	require.Equal(t, "/module/baseline", c.Out)
	require.Equal(t, "/abs/goldens", c.GoldenDir, "absolute: as given")
	require.Equal(t, "/module/run.toml", c.File)
	require.Equal(t, "/module/data/lfw", c.Fixtures.LFWDir)
	require.Empty(t, c.Fixtures.CEDARDir, "unset stays unset")
}

// docs/configuration.md's sample run file is a run file: it loads, and says what it
// says it does.
func TestREADMERunFile(t *testing.T) {
	readme, err := os.ReadFile("../../../docs/configuration.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(readme), "### Run file")
	require.True(t, ok)
	_, rest, ok = strings.Cut(rest, "```toml\n")
	require.True(t, ok)
	sample, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	c, err := Load(File(writeRunFile(t, sample)))
	require.NoError(t, err)
	require.Equal(t, "http://gpu-box:8000", c.Target.Endpoint)
	require.Equal(t, DefaultLevels, c.Levels)
	require.Equal(t, 2.49, c.GPUHourlyUSD)
	require.Equal(t, "--max-num-seqs 32", c.ServerFlags)
	require.Equal(t, "fast", c.Twin.Profile)
	// Every key a run file may hold appears in the sample.
	for _, s := range settings() {
		if s.key != "" {
			_, name, _ := strings.Cut(s.key, ".")
			if name == "" {
				name = s.key
			}
			require.True(t, strings.Contains(sample, "\n"+name+" = ") || strings.Contains(sample, "\n# "+name+" = "), s.key)
		}
	}
}

// The dispatch is in order unless said: a run file sets it, the
// environment over it, a flag over both (defaults < file < environment <
// flags); settings.toml keeps it. fan_out, its older spelling, still sets
// fan-out (true) or in-order (false) in its layer.
func TestDispatch(t *testing.T) {
	require.Equal(t, judgments.DispatchInOrder, Default().Dispatch)
	path := writeRunFile(t, "dispatch = \"typevet\"\n")
	load := func(environ map[string]string, args ...string) Config {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		flags := Flags(fs)
		require.NoError(t, fs.Parse(args))
		c, err := Load(Env(env(environ)), flags)
		require.NoError(t, err)
		return c
	}
	require.Equal(t, judgments.DispatchTypevet, load(map[string]string{EnvConfig: path}).Dispatch, "the file")
	require.Equal(t, judgments.DispatchFanOut, load(map[string]string{EnvConfig: path, EnvDispatch: "fan-out"}).Dispatch, "the environment over the file")
	require.Equal(t, judgments.DispatchInOrder, load(map[string]string{EnvConfig: path, EnvDispatch: "fan-out"}, "-dispatch", "in-order").Dispatch, "the flag over both")
	require.Equal(t, judgments.DispatchTypevet, load(nil, "-dispatch=typevet").Dispatch)
	// The older spelling.
	require.Equal(t, judgments.DispatchFanOut, load(map[string]string{EnvConfig: writeRunFile(t, "fan_out = true\n")}).Dispatch)
	require.Equal(t, judgments.DispatchInOrder, load(map[string]string{EnvConfig: path, EnvFanOut: "0"}).Dispatch, "the environment over the file")
	require.Equal(t, judgments.DispatchFanOut, load(map[string]string{EnvFanOut: "0"}, "-fan-out").Dispatch, "a bare flag over the environment")

	_, err := Load(Env(env(map[string]string{EnvFanOut: "sometimes"})))
	require.ErrorContains(t, err, `VETBENCH_FANOUT="sometimes": want true or false`)
	_, err = Load(Env(env(map[string]string{EnvDispatch: "fanout"})))
	require.ErrorContains(t, err, `VETBENCH_DISPATCH="fanout": want in-order, fan-out or typevet`)

	for _, d := range judgments.Dispatches() {
		var b strings.Builder
		require.NoError(t, WriteSettings(&b, load(map[string]string{EnvDispatch: string(d)})))
		require.Contains(t, b.String(), "\ndispatch = \""+string(d)+"\"\n")
		require.NotContains(t, b.String(), "fan_out")
		require.Equal(t, d, load(map[string]string{EnvConfig: writeRunFile(t, b.String())}).Dispatch, "settings.toml reads back")
	}
}

// A concurrency level is at most MaxLevel, for run, tokens and matrix
// alike: tokens -levels 100000000 made 1e8 prompts at once and died out
// of memory (fatal error, exit 2 with a stack, no message of ours).
func TestLevelsAreBounded(t *testing.T) {
	for _, tt := range []struct {
		name, value string
		want        string // "" = accepted
	}{
		{EnvLevels, "1,4096", ""},
		{EnvLevels, "1,4097", `VETBENCH_LEVELS="1,4097": level 4097 is over 4096`},
		{EnvLevels, "100000000", `VETBENCH_LEVELS="100000000": level 100000000 is over 4096`},
		{EnvTokensLevels, "4096", ""},
		{EnvTokensLevels, "99999999999999999999", `level 99999999999999999999 is over 4096`},
		{EnvTokensLevels, "-99999999999999999999", `"-99999999999999999999" is not a concurrency level >= 1`},
		{EnvTokensLevels, "100000000", `VETBENCH_TOKENS_LEVELS="100000000": level 100000000 is over 4096`},
		{EnvMatrixLevels, "9223372036854775807", `VETBENCH_MATRIX_LEVELS="9223372036854775807": level 9223372036854775807 is over 4096`},
	} {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			_, err := Load(Env(env(map[string]string{tt.name: tt.value})))
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}
