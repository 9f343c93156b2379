package config

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A typo of a variable is an error naming the variable and the nearest
// known one (VETBENCH_LEVEL=4 once ran all four levels, exit 0); the
// user's own VETBENCH_X_* and known names pass.
func TestUnknownVariables(t *testing.T) {
	cases := []struct {
		env  []string
		want string // "" passes
	}{
		{[]string{"VETBENCH_LEVEL=4"}, "VETBENCH_LEVEL is not a vetbench variable (did you mean VETBENCH_LEVELS?"},
		{[]string{"VETBENCH_STUB_SLOWDWN=1.2"}, "did you mean VETBENCH_STUB_SLOWDOWN?"},
		{[]string{"VETBENCH_ENDPIONT=http://x"}, "did you mean VETBENCH_ENDPOINT?"},
		{[]string{"VETBENCH_LEVELS=4", "VETBENCH_X_BASELINE=main", "HOME=/root"}, ""},
		{[]string{"VETBENCH_LEVEL="}, ""}, // blank is unset
	}
	for _, c := range cases {
		t.Run(strings.Join(c.env, " "), func(t *testing.T) {
			env := map[string]string{}
			for _, kv := range c.env {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			prev := environ
			environ = func() []string { return c.env }
			defer func() { environ = prev }()
			_, err := Load(Env(func(k string) string { return env[k] }))
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.want)
		})
	}
}

// Every VETBENCH_* name the repository's code, scripts and documents use
// is known (or is a typo a test makes on purpose), and every name of
// otherVars is used: the list cannot go stale.
func TestKnownVariablesCoverTheRepository(t *testing.T) {
	root := "../../.."
	re := regexp.MustCompile(`VETBENCH_[A-Z0-9_]*[A-Z0-9]`)
	used := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "out" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		ext := filepath.Ext(path)
		if strings.HasPrefix(d.Name(), "environ") && strings.HasSuffix(path, filepath.Join("config", d.Name())) {
			return nil // the lists themselves
		}
		if d.IsDir() || !(ext == ".go" || ext == ".md" || ext == ".toml" || ext == ".yml" || d.Name() == "Makefile" || strings.Contains(path, "scripts/")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllString(string(data), -1) {
			used[m] = append(used[m], path)
		}
		return nil
	})
	require.NoError(t, err)
	known := KnownVars()
	// Names that are prefixes in prose (VETBENCH_TOKENS_* …) or typos on purpose.
	notVars := []string{"VETBENCH_TOKENS", "VETBENCH_MATRIX", "VETBENCH_STREAM", "VETBENCH_X", "VETBENCH_UNKNOWN",
		"VETBENCH_WARMUP", // a fake environment in cmd/vetbench/failures_test.go; warmup is -warmup and the run file only
		"VETBENCH_LEVEL", "VETBENCH_STUB_SLOWDWN", "VETBENCH_ENDPIONT", "VETBENCH_X_BASELINE", "VETBENCH_X_BASELINE_URL"}
	for name, where := range used {
		if !slices.Contains(known, name) && !slices.Contains(notVars, name) {
			t.Errorf("%s (used in %s) is not a known variable: add it to the settings or otherVars", name, where[0])
		}
	}
	for _, name := range otherVars {
		require.Contains(t, used, name, "otherVars lists %s, which nothing uses", name)
	}
}
