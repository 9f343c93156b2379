package config

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// EnvPrefix starts every vetbench variable.
const EnvPrefix = "VETBENCH_"

// EnvExtraPrefix starts variables of the user's own (scripts, CI) that
// vetbench never reads and never checks: VETBENCH_X_BASELINE_URL.
const EnvExtraPrefix = "VETBENCH_X_"

// otherVars are read outside the settings table: opt-in checks of the
// test suite and of the twin's contract tests. They are known, so not
// typos, though no run reads them.
var otherVars = []string{
	"VETBENCH_BROWSER_CHECK_OUT",
	"VETBENCH_GATE_CHECK", "VETBENCH_GATE_CHECK_OUT", "VETBENCH_GATE_CHECK_TRIALS",
	"VETBENCH_DOCS_CHECK", "VETBENCH_DEEPSEEK_GRID",
	"VETBENCH_DATA_PARALLEL", "VETBENCH_DEV_MODE", "VETBENCH_EXCLUSIVE", "VETBENCH_IMAGE_LIMIT",
	"VETBENCH_MAX_LOGPROBS", "VETBENCH_PROMPT_TOKENS_DETAILS",
}

// KnownVars lists every VETBENCH_* variable vetbench knows, sorted.
func KnownVars() []string {
	names := slices.Clone(otherVars)
	for _, s := range settings() {
		if s.env != "" {
			names = append(names, s.env)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// unknownVars is an error naming each set VETBENCH_* variable of environ
// (NAME=value pairs, os.Environ's form) that vetbench does not know, with
// the nearest known name: VETBENCH_LEVEL=4 once ran all four levels
// without a word. A name is only counted when getenv (the source's view
// of the environment) also sees it set, so a test's fake environment is
// not judged by the real one. VETBENCH_X_* names are the user's own.
func unknownVars(environ []string, getenv func(string) string) error {
	known := KnownVars()
	var bad []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || strings.HasPrefix(name, EnvExtraPrefix) ||
			slices.Contains(known, name) || isBlank(getenv(name)) {
			continue
		}
		bad = append(bad, fmt.Sprintf("%s is not a vetbench variable (did you mean %s? a variable of your own: %s…)",
			name, nearest(name, known), EnvExtraPrefix))
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return fmt.Errorf("%s", strings.Join(bad, "; "))
}

// environ is os.Environ; tests replace it.
var environ = os.Environ

// nearest is the name of names closest to name in edit distance (the
// first of equals, names being sorted).
func nearest(name string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		if d := editDistance(name, n); bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is Levenshtein's distance between a and b (bytes: the
// names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
