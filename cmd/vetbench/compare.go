package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/answers"
	"github.com/vetbench/vetbench/receipts/typevet"
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

func runCompare(ctx context.Context, e *env, args []string) int {
	fs := e.flagSet("compare")
	def := answers.DefaultPolicy()
	asJSON := fs.Bool("json", false, "print the report as JSON (schema vetbench.compare/v1)")
	policyName := fs.String("policy", "default", "`name` of the base policy: default, or strict (near-tie moves fail too)")
	noulTol := fs.Float64("noul-tol", def.NoulTolerance, "largest |ΔP(true)| of a Noul that passes")
	nearTie := fs.Float64("near-tie", def.NearTieMargin, "baseline top-1 minus top-2 `margin` below which a moved verdict is a near tie")
	allowDrift := fs.Bool("allow-identity-drift", false, "compare receipts of different setups (model, server, prompts…) and list what differs")
	levels := fs.Bool("levels", false, "compare each level of one sweep directory with its c=1 receipt")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitNoVerdict
		}
		return failure(e, "compare", wantsJSON(args), exitNoVerdict, err.Error())
	}
	fail := func(format string, a ...any) int {
		return failure(e, "compare", *asJSON, exitNoVerdict, fmt.Sprintf(format, a...))
	}
	var p answers.Policy
	switch *policyName {
	case "default":
		p = answers.DefaultPolicy()
	case "strict":
		p = answers.StrictPolicy()
	default:
		return fail("unknown policy %q (want default or strict)", *policyName)
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "noul-tol":
			p.NoulTolerance = *noulTol
		case "near-tie":
			p.NearTieMargin = *nearTie
		}
	})
	p.AllowIdentityDrift = *allowDrift
	if err := p.Validate(); err != nil {
		return fail("%v", err)
	}
	if *levels {
		if len(pos) != 1 {
			return failure(e, "compare -levels", *asJSON, exitNoVerdict, "want one sweep directory")
		}
		rs, err := typevet.ReadDir(pos[0])
		if err != nil {
			return fail("%v", err)
		}
		rep, err := answers.CompareLevels(rs, p)
		return finishSweep(e, rep, err, *asJSON)
	}
	if len(pos) != 2 {
		fs.Usage()
		return failure(e, "compare", *asJSON, exitNoVerdict, fmt.Sprintf("want BASELINE and CANDIDATE, got %d argument(s)", len(pos)))
	}
	bdir, bok := isDir(pos[0])
	cdir, cok := isDir(pos[1])
	if bok && cok && bdir != cdir {
		return fail("BASELINE and CANDIDATE must both be receipts or both be directories")
	}
	if bdir && cdir {
		base, err := typevet.ReadDir(pos[0])
		if err != nil {
			return fail("baseline: %v", err)
		}
		cand, err := typevet.ReadDir(pos[1])
		if err != nil {
			return fail("candidate: %v", err)
		}
		rep, err := answers.CompareSweep(base, cand, p)
		return finishSweep(e, rep, err, *asJSON)
	}
	base, err := typevet.ReadAny(pos[0])
	if err != nil {
		return fail("baseline: %v", err)
	}
	cand, err := typevet.ReadAny(pos[1])
	if err != nil {
		return fail("candidate: %v", err)
	}
	rep, err := answers.Compare(base, cand, p)
	if err != nil {
		var ie *receipts.IdentityError
		if errors.As(err, &ie) {
			details := append(slices.Clone(ie.Differences), "use -allow-identity-drift to compare them anyway")
			return failure(e, "compare", *asJSON, exitNoVerdict, "identity mismatch: the receipts are not the same experiment:", details...)
		}
		return fail("%v", err)
	}
	rep.Baseline.File, rep.Candidate.File = pos[0], pos[1]
	if *asJSON {
		err = writeJSON(e.stdout, rep)
	} else {
		err = rep.WriteText(e.stdout)
	}
	if err != nil {
		return fail("%v", err)
	}
	if rep.Failed() {
		return exitFail
	}
	return exitPass
}

func finishSweep(e *env, rep *answers.SweepReport, err error, asJSON bool) int {
	if err != nil {
		return failure(e, "compare", asJSON, exitNoVerdict, err.Error())
	}
	if asJSON {
		err = writeJSON(e.stdout, rep)
	} else {
		err = rep.WriteText(e.stdout)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "vetbench compare: %v\n", err)
		return exitNoVerdict
	}
	switch {
	case rep.Incomparable():
		return exitNoVerdict
	case rep.Failed():
		return exitFail
	}
	return exitPass
}

// isDir says whether path is a directory (ok false when it cannot be
// stat'ed; the reader then reports why).
func isDir(path string) (dir, ok bool) {
	st, err := os.Stat(path)
	if err != nil {
		return false, false
	}
	return st.IsDir(), true
}
