// Command twinfit runs the twin's fitting tools (package stub/fit): it
// fits a profile's constants to a published result on simulated time and
// prints them, with every figure the fit used (make fit):
//
//	twinfit -fit hopper|e2b|rtx3090|h100 [-restarts N] [-iterations N] [-margin F]
//	    [-matrix stub/testdata/speed-matrix-gemma-4-E2B-h200nvl.csv]
//	    [-receipt stub/testdata/token-throughput-rtx3090.json]
//	    [-receipts stub/testdata/typevet_throughput.json] [-set checks|faces|signatures]
//
// hopper fits stub.EfficiencyHopper on the E2B matrix's 8K and 16K rows
// (every other row is then a prediction: make predict), e2b
// stub.EfficiencyE2BH200NVL on every row, rtx3090 ProfileRTX3090's
// timings on the RTX 3090 receipt, h100 ProfileH100Gemma4's timings on
// the nine of typevet's H100 receipts it is fitted on (stub.TypevetFitted;
// the other nine are held out and named as such), simulating typevet's
// sweep over the checks generator's prompts and look-alike faces and
// signatures (-set: one set only). Minutes of CPU; the constants are
// pasted into stub by hand. Exit status 0 when the fit ran, 2 on bad
// input, 130 when interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/fit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- run(os.Args[1:], os.Stdout, os.Stderr) }()
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintln(os.Stderr, "twinfit:", err)
			os.Exit(2)
		}
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "twinfit: interrupted; nothing fitted")
		os.Exit(130)
	}
}

func run(args []string, out, progress io.Writer) error {
	fs := flag.NewFlagSet("twinfit", flag.ContinueOnError)
	which := fs.String("fit", "", "what to fit: hopper (EfficiencyHopper on the E2B 8K/16K rows), e2b (EfficiencyE2BH200NVL on every row), rtx3090 (ProfileRTX3090), h100 (ProfileH100Gemma4 on typevet's receipts)")
	var s fit.Search
	fs.IntVar(&s.Restarts, "restarts", 0, "Nelder–Mead restarts (0: the fit's default)")
	fs.IntVar(&s.Iterations, "iterations", 0, "Nelder–Mead steps per restart (0: the fit's default)")
	fs.Float64Var(&s.Margin, "margin", 0, "relative error past which the score's steep penalty starts (0: the fit's default)")
	matrix := fs.String("matrix", stub.E2BMatrixFile, "the published E2B speed matrix (CSV)")
	receipt := fs.String("receipt", stub.RTX3090File, "the published RTX 3090 token-throughput receipt (JSON)")
	receipts := fs.String("receipts", stub.TypevetReceiptsFile, "typevet's H100 receipts' throughput blocks (JSON)")
	set := fs.String("set", "", "h100: fit on one set's receipts only (checks, faces or signatures)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s.Progress = func(n int, best float64) {
		fmt.Fprintf(progress, "twinfit: %d evaluations, best score %.4f\n", n, best)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var r fit.Result
	switch *which {
	case "hopper", "e2b":
		dec, pre, err := stub.ReadE2BMatrix(*matrix)
		if err != nil {
			return err
		}
		start := stub.EfficiencyHopper
		if *which == "e2b" {
			start = stub.EfficiencyE2BH200NVL
		}
		if r, err = fit.Efficiency(fit.Rows(*which), start, dec, pre, s); err != nil {
			return err
		}
	case "rtx3090":
		rec, err := stub.ReadRTX3090(*receipt)
		if err != nil {
			return err
		}
		r = fit.RTX3090(rec, s)
	case "h100":
		var err error
		if r, err = fitH100(*receipts, *set, s); err != nil {
			return err
		}
	case "":
		return errors.New("-fit: name what to fit (hopper, e2b, rtx3090 or h100)")
	default:
		return fmt.Errorf("-fit %q: want hopper, e2b, rtx3090 or h100", *which)
	}
	_, err := fmt.Fprint(out, r)
	return err
}
