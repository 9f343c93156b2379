// Command vetbench decides whether a candidate (model, vLLM pin, server
// flags) may ship: it compares the candidate's answers and speed with a
// baseline's and exits non-zero when the candidate is worse.
//
// Usage:
//
//	vetbench run [flags]                          measure, write receipts
//	vetbench compare [flags] BASELINE CANDIDATE   answers, item by item
//	vetbench gate [flags] BASELINE CANDIDATE      speed, with statistics
//
// BASELINE and CANDIDATE of compare are receipts (vetbench or typevet
// format, told apart by their keys) or directories of receipts (a sweep:
// set by set, level by level); compare -levels DIR checks every level of
// one sweep against its c=1 receipt. Those of gate are files of `go test
// -bench` output, or with -run endpoints to benchmark.
//
// Exit status, for every command: 0 the candidate passed; 1 the gate
// failed (the candidate is worse, or a run's point failed); 2 the inputs
// could not be compared (unreadable, identity mismatch not allowed, too few
// samples, usage, an unreachable target); 130 interrupted (Ctrl-C,
// SIGTERM). With -json, a command that fails writes a JSON error object
// (schema vetbench.error/v1) on stdout instead of its report.
package main

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vetbench/vetbench/bench/sweep/interrupt"
)

// Exit codes.
const (
	exitPass        = 0
	exitFail        = 1
	exitNoVerdict   = 2
	exitInterrupted = interrupt.ExitCode
)

// command is one subcommand. run gets the arguments after its name.
type command struct {
	summary string
	run     func(ctx context.Context, env *env, args []string) int
}

// env is what a subcommand may touch; tests fill it with buffers and
// fakes.
type env struct {
	stdout, stderr io.Writer
	// exec runs a program (go test, go tool benchstat) and writes its
	// standard output to stdout.
	exec execFunc
	// getenv reads the environment (os.Getenv when nil).
	getenv func(string) string
	// clock is time.Now when nil (run ids of new run directories).
	clock func() time.Time
	// signals holds back a second Ctrl-C while a result is written (see
	// sweep; nil: no signal handling, as in tests).
	signals *interrupt.Handler
}

func (e *env) now() time.Time {
	if e.clock == nil {
		return time.Now()
	}
	return e.clock()
}

func (e *env) lookup(k string) string {
	if e.getenv == nil {
		return os.Getenv(k)
	}
	return e.getenv(k)
}

// usageText holds each command's usage, usage/<command>.txt: what its -h
// prints before its flags.
//
//go:embed usage
var usageText embed.FS

// flagSet is the flag set of command name: errors on stderr, and on -h its
// usage text then its flags.
func (e *env) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		text, _ := usageText.ReadFile("usage/" + name + ".txt")
		e.stderr.Write(text)
		fs.PrintDefaults()
	}
	return fs
}

// isSet says whether the flag of that name was given.
func isSet(fs *flag.FlagSet, name string) (set bool) {
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// commands is the command table; a new subcommand is one more entry and
// one more file.
func commands() map[string]command {
	return map[string]command{
		"compare":  {"compare answers of a candidate receipt (or sweep) with a baseline's", runCompare},
		"gate":     {"compare speed of a candidate with a baseline (go test -bench output)", runGate},
		"report":   {"write an HTML report and CSV tables of a run, or of a baseline and a candidate run", runReport},
		"roofline": {"say which ceiling (bandwidth, compute) a model's decode steps are against on a GPU", runRoofline},
		"run":      {"measure sets at concurrency levels on the configured target; write receipts", runRun},
		"twin":     {"serve the vLLM twin in the foreground, with vllmstub's flags (docs/twin.md)", runTwin},
		"tokens":   {"measure token throughput (streamed, fixed-length outputs) on the configured target", runTokens},
		"matrix":   {"measure the speed matrix (context × concurrency, sustained decode) on the configured target", runMatrix},
		"version":  {"print the module version, VCS revision and Go version of this build", runVersion},
	}
}

func main() {
	// The first Ctrl-C cancels ctx: the command stops, writes what it has
	// and says so; the second exits at once, never in a write.
	ctx, signals := interrupt.Notify(context.Background())
	who := commandName(os.Args[1:])
	signals.OnSecond = func() { fmt.Fprintf(os.Stderr, "%s: interrupted again: exiting now\n", who) }
	code := vetbench(ctx, &env{stdout: os.Stdout, stderr: os.Stderr, exec: osExec, signals: signals}, os.Args[1:])
	signals.Stop()
	if ctx.Err() != nil && code != exitInterrupted {
		fmt.Fprintf(os.Stderr, "%s: interrupted\n", who)
		code = exitInterrupted
	}
	os.Exit(code)
}

// commandName is "vetbench <command>" for a command line that names one,
// "vetbench" otherwise: what an interruption is said of (a container's
// `vetbench twin` told to stop says it of itself, in the run's twin.log).
func commandName(args []string) string {
	if len(args) > 0 {
		if _, ok := commands()[args[0]]; ok {
			return "vetbench " + args[0]
		}
	}
	return "vetbench"
}

// vetbench runs one command line and returns the exit status.
func vetbench(ctx context.Context, e *env, args []string) int {
	cmds := commands()
	if len(args) == 0 {
		usage(e.stderr, cmds)
		return exitNoVerdict
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(e.stdout, cmds)
		return exitPass
	case "-version", "--version":
		return runVersion(ctx, e, args[1:])
	case "help":
		return help(ctx, e, cmds, args[1:])
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "vetbench: unknown command %q\n", args[0])
		usage(e.stderr, cmds)
		return exitNoVerdict
	}
	if helpAsked(args[1:]) {
		return commandHelp(ctx, e, args[0], c)
	}
	return c.run(ctx, e, args[1:])
}

// helpAsked says whether a command's arguments ask for its help (-h,
// -help, --help among its flags, before a "--").
func helpAsked(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help", "-h=true", "--help=true", "-help=true":
			return true
		}
	}
	return false
}

// help is `vetbench help [command]`: the general usage, or one command's.
func help(ctx context.Context, e *env, cmds map[string]command, args []string) int {
	if len(args) == 0 {
		usage(e.stdout, cmds)
		return exitPass
	}
	c, ok := cmds[args[0]]
	if !ok || len(args) > 1 {
		fmt.Fprintf(e.stderr, "vetbench help: unknown command %q\n", strings.Join(args, " "))
		usage(e.stderr, cmds)
		return exitNoVerdict
	}
	return commandHelp(ctx, e, args[0], c)
}

// commandHelp prints a command's usage on stdout (help asked for is
// output, not an error) and exits 0, as the flag package's -h does: the
// command's flag set prints it when parsing -h, and the "help requested"
// note it then reports is no failure.
func commandHelp(ctx context.Context, e *env, name string, c command) int {
	var b strings.Builder
	he := *e
	he.stdout, he.stderr = io.Discard, &b
	c.run(ctx, &he, []string{"-h"})
	text := b.String()
	for _, note := range []string{"vetbench " + name + ": flag: help requested\n", "flag: help requested\n"} {
		text = strings.ReplaceAll(text, note, "")
	}
	io.WriteString(e.stdout, text)
	return exitPass
}

func usage(w io.Writer, cmds map[string]command) {
	var b strings.Builder
	b.WriteString("usage: vetbench <command> [flags] ...\n\ncommands:\n")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %-8s %s\n", n, cmds[n].summary)
	}
	b.WriteString("\n`vetbench help <command>` (or <command> -h) for its flags; --version for this build.\n")
	b.WriteString("\nexit status: 0 pass, 1 the candidate is worse, 2 could not compare, 130 interrupted\n")
	io.WriteString(w, b.String())
}
