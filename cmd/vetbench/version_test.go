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

// A release build's -ldflags "-X main.release=v0.3.0" names the version,
// beside the module's. Not parallel: it sets the package's release.
func TestVersionRelease(t *testing.T) {
	release = "v0.3.0"
	defer func() { release = "" }()
	bare := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/vetbench/vetbench", Version: "(devel)"}}
	require.True(t, strings.HasPrefix(versionText(bare, true), "vetbench v0.3.0 (module (devel))\n"))
}

// --version, -h and help <command> follow Go's and GNU's conventions: help
// asked for is printed on stdout and exits 0, for every command.
func TestHelpAndVersionFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"-version"}} {
		stdout, _, code := run(t, args...)
		require.Equal(t, exitPass, code)
		require.True(t, strings.HasPrefix(stdout, "vetbench "), stdout)
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		stdout, _, code := run(t, args...)
		require.Equal(t, exitPass, code)
		require.Contains(t, stdout, "usage: vetbench <command>")
	}
	for name := range commands() {
		for _, args := range [][]string{{name, "-h"}, {name, "--help"}, {"help", name}, {name, "-json", "-h"}} {
			stdout, stderr, code := run(t, args...)
			require.Equal(t, exitPass, code, "%v: %s", args, stderr)
			require.Contains(t, stdout, "usage: vetbench "+name, "%v", args)
			require.NotContains(t, stdout, "help requested")
		}
	}
	_, stderr, code := run(t, "help", "nosuch")
	require.Equal(t, exitNoVerdict, code)
	require.Contains(t, stderr, `unknown command "nosuch"`)
	_, _, code = run(t)
	require.Equal(t, exitNoVerdict, code, "no command is a usage error")
}
