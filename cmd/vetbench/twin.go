package main

import (
	"context"
	"runtime/debug"

	"github.com/vetbench/vetbench/bench/sweep/target"
	"github.com/vetbench/vetbench/cmd/vllmstub/serve"
)

// runTwin is `vetbench twin [vllmstub's flags]`: the vLLM twin served in
// the foreground, as the vllmstub command serves it (the same library,
// package cmd/vllmstub/serve), until Ctrl-C or SIGTERM. It is what the
// container twin's image runs when the image holds this executable, so an
// installed vetbench needs no module to build one.
func runTwin(ctx context.Context, e *env, args []string) int {
	return serve.Main(ctx, "vetbench twin", args, e.stdout, e.stderr)
}

// mainPackage is this command's import path, as build info names the main
// package of a vetbench binary (a test binary's ends in .test).
const mainPackage = "github.com/vetbench/vetbench/cmd/vetbench"

// The vetbench binary serves the twin itself (runTwin), so its container
// twin's image is built from its own executable when that is static; a
// test binary of this package is no vetbench, and builds vllmstub instead.
func init() {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Path == mainPackage {
		target.OwnTwin = []string{"twin"}
	}
}
