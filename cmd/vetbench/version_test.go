package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := run(t, "version")
	require.Equal(t, exitPass, code, stderr)
	// A test binary carries build info for its module but no VCS stamp.
	require.True(t, strings.HasPrefix(stdout, "vetbench "), stdout)
	require.Contains(t, stdout, "module:   github.com/vetbench/vetbench\n")
	require.Contains(t, stdout, "go:       "+runtime.Version()+"\n")
	_, stderr, code = run(t, "version", "extra")
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, "usage: vetbench version")
}

func TestVersionText(t *testing.T) {
	t.Parallel()
	stamped := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Path:      "github.com/vetbench/vetbench/cmd/vetbench",
		Main:      debug.Module{Path: "github.com/vetbench/vetbench", Version: "v0.2.0"},
		Settings: []debug.BuildSetting{
			{Key: "-buildmode", Value: "exe"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "2d49c5e80b492742da7d81aa0475ea748b950d42"},
			{Key: "vcs.time", Value: "2026-12-01T11:30:11Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	require.Equal(t, `vetbench v0.2.0
module:   github.com/vetbench/vetbench
vcs:      git
revision: 2d49c5e80b492742da7d81aa0475ea748b950d42
time:     2026-12-01T11:30:11Z
modified: true
go:       go1.26.8
`, versionText(stamped, true))

	bare := &debug.BuildInfo{GoVersion: "go1.26.8", Path: "github.com/vetbench/vetbench/cmd/vetbench", Main: debug.Module{Path: "github.com/vetbench/vetbench", Version: "(devel)"}}
	require.Equal(t, `vetbench (devel)
module:   github.com/vetbench/vetbench
vcs:      not stamped (go test, -buildvcs=false, a git worktree or no repository)
go:       go1.26.8
`, versionText(bare, true))
	require.Equal(t, "vetbench: no build information in this binary\n", versionText(nil, false))
}
