package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/answers"
	"github.com/vetbench/vetbench/receipts/typevet"
)

const compareUsage = `usage: vetbench compare [flags] BASELINE CANDIDATE
       vetbench compare [flags] -levels SWEEPDIR

Compares the candidate's answers with the baseline's, item by item and
question by question. BASELINE and CANDIDATE are receipts (vetbench or
typevet JSON) or two directories of receipts (sweeps, matched by set and
concurrency). -levels compares every level of one sweep with its c=1
receipt.

A moved verdict is a near tie when the baseline's top-1 minus top-2
probability is below -near-tie; near-tie moves are reported and fail only
under -policy strict. A confident move fails; so does a Noul whose P(true)
moved by more than -noul-tol, a missing or failed item, a stopped run.

Exit status: 0 pass, 1 the candidate failed, 2 could not compare.

flags:
`

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
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		io.WriteString(e.stderr, compareUsage)
		fs.PrintDefaults()
	}
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
		return exitNoVerdict
	}
	var p answers.Policy
	switch *policyName {
	case "default":
		p = answers.DefaultPolicy()
	case "strict":
		p = answers.StrictPolicy()
	default:
		fmt.Fprintf(e.stderr, "vetbench compare: unknown policy %q (want default or strict)\n", *policyName)
		return exitNoVerdict
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
		fmt.Fprintf(e.stderr, "vetbench compare: %v\n", err)
		return exitNoVerdict
	}
	if *levels {
		if len(pos) != 1 {
			fmt.Fprintln(e.stderr, "vetbench compare -levels: want one sweep directory")
			return exitNoVerdict
		}
		rs, err := typevet.ReadDir(pos[0])
		if err != nil {
			fmt.Fprintf(e.stderr, "vetbench compare: %v\n", err)
			return exitNoVerdict
		}
		rep, err := answers.CompareLevels(rs, p)
		return finishSweep(e, rep, err, *asJSON)
	}
	if len(pos) != 2 {
		fs.Usage()
		return exitNoVerdict
	}
	bdir, bok := isDir(pos[0])
	cdir, cok := isDir(pos[1])
	if bok && cok && bdir != cdir {
		fmt.Fprintln(e.stderr, "vetbench compare: BASELINE and CANDIDATE must both be receipts or both be directories")
		return exitNoVerdict
	}
	if bdir && cdir {
		base, err := typevet.ReadDir(pos[0])
		if err != nil {
			fmt.Fprintf(e.stderr, "vetbench compare: baseline: %v\n", err)
			return exitNoVerdict
		}
		cand, err := typevet.ReadDir(pos[1])
		if err != nil {
			fmt.Fprintf(e.stderr, "vetbench compare: candidate: %v\n", err)
			return exitNoVerdict
		}
		rep, err := answers.CompareSweep(base, cand, p)
		return finishSweep(e, rep, err, *asJSON)
	}
	base, err := typevet.ReadAny(pos[0])
	if err != nil {
		fmt.Fprintf(e.stderr, "vetbench compare: baseline: %v\n", err)
		return exitNoVerdict
	}
	cand, err := typevet.ReadAny(pos[1])
	if err != nil {
		fmt.Fprintf(e.stderr, "vetbench compare: candidate: %v\n", err)
		return exitNoVerdict
	}
	rep, err := answers.Compare(base, cand, p)
	if err != nil {
		var ie *receipts.IdentityError
		if errors.As(err, &ie) {
			fmt.Fprintln(e.stderr, "vetbench compare: identity mismatch: the receipts are not the same experiment:")
			for _, d := range ie.Differences {
				fmt.Fprintf(e.stderr, "  %s\n", d)
			}
			fmt.Fprintln(e.stderr, "use -allow-identity-drift to compare them anyway")
		} else {
			fmt.Fprintf(e.stderr, "vetbench compare: %v\n", err)
		}
		return exitNoVerdict
	}
	rep.Baseline.File, rep.Candidate.File = pos[0], pos[1]
	if *asJSON {
		if err := writeJSON(e.stdout, rep); err != nil {
			fmt.Fprintf(e.stderr, "vetbench compare: %v\n", err)
			return exitNoVerdict
		}
	} else if err := rep.WriteText(e.stdout); err != nil {
		fmt.Fprintf(e.stderr, "vetbench compare: %v\n", err)
		return exitNoVerdict
	}
	if rep.Failed() {
		return exitFail
	}
	return exitPass
}

func finishSweep(e *env, rep *answers.SweepReport, err error, asJSON bool) int {
	if err != nil {
		fmt.Fprintf(e.stderr, "vetbench compare: %v\n", err)
		return exitNoVerdict
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

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
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
