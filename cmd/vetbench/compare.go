package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/answers"
)

// parseInterleaved parses flags that may come before or after the
// positional arguments (vetbench compare A B -json).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// runCompare is vetbench compare: answers.ComparePaths (or, with -levels,
// answers.CompareLevelsDir) under the policy the flags state, printed.
func runCompare(_ context.Context, e *env, args []string) int {
	fs := e.flagSet("compare")
	asJSON := fs.Bool("json", false, "print the report as JSON (schema vetbench.compare/v1)")
	policy := comparePolicy(fs)
	levels := fs.Bool("levels", false, "compare each level of one sweep directory with its c=1 receipt")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitNoVerdict
		}
		return failure(e, "compare", wantsJSON(args), exitNoVerdict, err.Error())
	}
	fail := func(err error) int { return failure(e, "compare", *asJSON, exitNoVerdict, err.Error()) }
	p, err := policy()
	if err != nil {
		return fail(err)
	}
	var rep answers.Judged
	switch {
	case *levels && len(pos) != 1:
		return failure(e, "compare -levels", *asJSON, exitNoVerdict, "want one sweep directory")
	case *levels:
		rep, err = answers.CompareLevelsDir(receiptsArg(pos[0]), p)
	case len(pos) != 2:
		fs.Usage()
		return fail(fmt.Errorf("want BASELINE and CANDIDATE, got %d argument(s)", len(pos)))
	default:
		base, cand := receiptsArg(pos[0]), receiptsArg(pos[1])
		if w := sameRun(base, cand); w != "" {
			fmt.Fprintf(e.stderr, "vetbench compare: %s\n", w)
		}
		rep, err = answers.ComparePaths(base, cand, p)
	}
	if ie := (*receipts.IdentityError)(nil); errors.As(err, &ie) {
		details := append(slices.Clone(ie.Differences), "use -allow-identity-drift to compare them anyway")
		return failure(e, "compare", *asJSON, exitNoVerdict, "identity mismatch: the receipts are not the same experiment:", details...)
	}
	if err == nil {
		err = printReport(e, *asJSON, rep, rep.WriteText)
	}
	if err != nil {
		return fail(err)
	}
	if s, ok := rep.(*answers.SweepReport); ok && s.Incomparable() {
		return exitNoVerdict
	}
	if rep.Failed() {
		return exitFail
	}
	return exitPass
}

// comparePolicy defines the policy flags on fs; the policy they state is
// read after parsing: the named base, the tolerances given over it.
func comparePolicy(fs *flag.FlagSet) func() (answers.Policy, error) {
	def := answers.DefaultPolicy()
	name := fs.String("policy", "default", "`name` of the base policy: default, or strict (near-tie moves fail too)")
	noulTol := fs.Float64("noul-tol", def.NoulTolerance, "largest |ΔP(true)| of a Noul that passes")
	nearTie := fs.Float64("near-tie", def.NearTieMargin, "baseline top-1 minus top-2 `margin` below which a moved verdict is a near tie")
	allowDrift := fs.Bool("allow-identity-drift", false, "compare receipts of different setups (model, server, prompts…) and list what differs")
	return func() (answers.Policy, error) {
		p, err := answers.PolicyNamed(*name)
		if err != nil {
			return p, err
		}
		if isSet(fs, "noul-tol") {
			p.NoulTolerance = *noulTol
		}
		if isSet(fs, "near-tie") {
			p.NearTieMargin = *nearTie
		}
		p.AllowIdentityDrift = *allowDrift
		return p, p.Validate()
	}
}
