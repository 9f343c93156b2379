package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// release is the version a release build states, with
//
//	go build -ldflags "-X main.release=v0.3.0" ./cmd/vetbench
//
// (make vetbench sets it from git describe). Unset, the version is the
// module's from build info: a tag for `go install …@v0.3.0`, (devel) for a
// build from a clone.
var release string

// runVersion prints what this binary was built from: the module and its
// version, the VCS revision, time and whether the tree was modified, and
// the Go release. A receipt's harness version says which vetbench wrote
// it; this says which build is running.
func runVersion(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(e.stderr, "usage: vetbench version")
		return exitNoVerdict
	}
	bi, ok := debug.ReadBuildInfo()
	io.WriteString(e.stdout, versionText(bi, ok))
	return exitPass
}

// versionText renders build info; ok false (a binary built without module
// support) still names what is known.
func versionText(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "vetbench: no build information in this binary\n"
	}
	var b strings.Builder
	version := bi.Main.Version
	if version == "" {
		version = "(unknown)"
	}
	if release != "" && release != version {
		version = release + " (module " + version + ")"
	}
	path := bi.Main.Path
	if path == "" {
		path = bi.Path
	}
	fmt.Fprintf(&b, "vetbench %s\n", version)
	fmt.Fprintf(&b, "module:   %s\n", path)
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if vcs := settings["vcs"]; vcs != "" {
		rev := settings["vcs.revision"]
		if rev == "" {
			rev = "(unknown)"
		}
		modified := settings["vcs.modified"]
		if modified == "" {
			modified = "(unknown)"
		}
		fmt.Fprintf(&b, "vcs:      %s\n", vcs)
		fmt.Fprintf(&b, "revision: %s\n", rev)
		if t := settings["vcs.time"]; t != "" {
			fmt.Fprintf(&b, "time:     %s\n", t)
		}
		fmt.Fprintf(&b, "modified: %s\n", modified)
	} else {
		// go run and go test build without VCS stamping.
		b.WriteString("vcs:      not stamped (go test, -buildvcs=false, a git worktree or no repository)\n")
	}
	fmt.Fprintf(&b, "go:       %s\n", bi.GoVersion)
	return b.String()
}
