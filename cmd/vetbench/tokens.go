package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/speed"
	"github.com/vetbench/vetbench/receipts/tokens"
)

const tokensUsage = `usage: vetbench tokens [flags]

Measures token throughput on the target the environment names
(VETBENCH_ENDPOINT for a live vLLM, else the twin): for each workload and
level C, C streamed requests at once (a closed batch, the published
receipts' mode) or, with -num-prompts N, N requests through C refilled
slots as vllm bench serve --max-concurrency C --num-prompts N sends them
(-request-rate, -burstiness as its own), each for exactly -output tokens
(ignore_eos, temperature 0), -repeats times after a warm-up. Every prompt
starts with a tag of its own, so no request shares a prefix with another.
Prints one line per point — aggregate tok/s (output tokens ÷ end-to-end
run time), per-request tok/s, batch ms per token (the published
"mean_tpot_ms"), then vllm bench serve's median TTFT, TPOT and ITL by its
definitions, verified tokens — and writes, in a run directory of its own
(a new out/runs/<time>-<id>, or the -out named, refused when it holds
results unless -force): receipts/ (one vetbench.tokens/v2 receipt per
point), bench.txt (benchmark lines with the run's configuration, for
vetbench gate and benchstat) and settings.toml. -save-result FILE also
writes the points as vllm bench serve --save-result --save-detailed does
(one JSON object per point, a line each).

-baseline FILE compares with a baseline, point by point: a receipt, a
directory of receipts, the published token-throughput format, or a vllm
bench serve --save-result file. Only figures of one definition are
compared (the published receipt's, vllm bench serve's); a baseline and a
candidate with none in common are refused. With -candidate DIR|FILE
nothing is measured: those receipts are compared. A comparison gates:
exit 1 when a candidate figure is worse than the baseline's by more than
-margin or the candidate had failures, 2 when a baseline point has no
candidate, an identity field differs or the baseline is not clean.
-pitfall measures each point twice, with prompts that repeat from point
to point and with unique ones, and prints how much the repeating ladder
inflates throughput (the cache pitfall).

Exit status: 0 every point ran and verified (and the comparison passed),
1 a point failed (requests failed or came back short beyond -max-failed)
or stopped early, or the candidate is worse, 2 bad configuration or input
(a malformed baseline names the field), the target could not be reached,
or the comparison could not compare.

flags:
`

func runTokens(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("tokens", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		io.WriteString(e.stderr, tokensUsage)
		fs.PrintDefaults()
	}
	flags := config.ScopeFlags(fs, config.ScopeTokens)
	baseline := fs.String("baseline", "", "baseline `file` or directory to compare with")
	candidate := fs.String("candidate", "", "compare these receipts (`file` or directory) with -baseline instead of measuring")
	pitfall := fs.Bool("pitfall", false, "measure every point with repeating and with unique prompts; print the inflation")
	margin := fs.Float64("margin", speed.DefaultMargin, "comparison: relative `change` in the bad direction that fails (0.05 = 5%)")
	saveResult := fs.String("save-result", "", "also write the points as vllm bench serve --save-result does, to this new `file`")
	asJSON := fs.Bool("json", false, "print the receipts (or the comparison) as JSON")
	if err := fs.Parse(args); err != nil {
		return exitNoVerdict
	}
	fail := func(code int, err error) int { return failure(e, "tokens", *asJSON, code, err.Error()) }
	if fs.NArg() > 0 {
		return fail(exitNoVerdict, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *candidate != "" && *baseline == "" && *saveResult == "" {
		return fail(exitNoVerdict, errors.New("-candidate needs -baseline (or -save-result)"))
	}
	if math.IsNaN(*margin) || *margin < 0 {
		return fail(exitNoVerdict, errors.New("-margin must be >= 0"))
	}
	out := tokenOutputs{saveResult: *saveResult, margin: *margin}
	var base []*tokens.Receipt
	if *baseline != "" {
		var err error
		if base, err = readTokenReceipts(*baseline); err != nil {
			return fail(exitNoVerdict, fmt.Errorf("baseline: %w", err))
		}
	}
	if *candidate != "" {
		cand, err := readTokenReceipts(*candidate)
		if err != nil {
			return fail(exitNoVerdict, fmt.Errorf("candidate: %w", err))
		}
		if err := saveServeResult(out.saveResult, cand); err != nil {
			return fail(exitNoVerdict, err)
		}
		if base == nil {
			return exitPass
		}
		return compareTokens(e, base, cand, *asJSON, exitPass, out.margin)
	}

	cfg, err := config.Load(config.Env(e.lookup), flags)
	if err != nil {
		return fail(exitNoVerdict, err)
	}
	if *pitfall {
		return runPitfall(ctx, e, cfg, *asJSON)
	}
	return tokenRun(ctx, e, cfg, base, *asJSON, out)
}

// tokenOutputs are what a run writes and judges besides its receipts: a
// vllm bench serve result file, and the comparison's margin.
type tokenOutputs struct {
	saveResult string
	margin     float64
}

// tokenRun measures the configured token points into a run directory of
// their own and, with a baseline, compares them with it.
func tokenRun(ctx context.Context, e *env, cfg config.Config, base []*tokens.Receipt, asJSON bool, out tokenOutputs) int {
	fail := func(code int, err error) int { return failure(e, "tokens", asJSON, code, err.Error()) }
	run, err := sweep.Open(ctx, cfg, nil, e.runOptions("tokens", nil, nil, sweep.Tokens))
	if err != nil {
		return fail(exitNoVerdict, err)
	}
	code := exitPass
	// bench.txt ends as go test ends its output: PASS, or FAIL.
	defer func() {
		if err := run.Close(code == exitPass); err != nil {
			fmt.Fprintf(e.stderr, "vetbench tokens: %v\n", err)
		}
	}()
	tr, err := run.TokenRunner(ctx)
	if err != nil {
		code = fail(exitNoVerdict, err)
		return code
	}
	dir, err := openRunDir(e, cfg)
	if err == nil {
		defer dir.Close()
		err = run.Record(ctx, dir)
	}
	if err != nil {
		code = fail(exitNoVerdict, err)
		return code
	}
	fmt.Fprintf(e.stderr, "vetbench tokens: target %s, model %s; results in %s\n", run.Describe(), tr.Model, dir.Path)
	var recs []*tokens.Receipt
	if code, recs = measureTokens(ctx, e, run, tr, asJSON); code == exitNoVerdict {
		return code
	}
	if err := saveServeResult(out.saveResult, recs); err != nil {
		code = fail(exitNoVerdict, err)
		return code
	}
	if base != nil {
		code = compareTokens(e, base, recs, asJSON, code, out.margin)
		return code
	}
	if asJSON {
		if err := writeJSON(e.stdout, recs); err != nil {
			code = fail(exitNoVerdict, err)
			return code
		}
	}
	return code
}

// measureTokens measures every token point of run, a line each on stdout
// (unless asJSON), and returns the status and the receipts.
func measureTokens(ctx context.Context, e *env, run *sweep.Run, tr *decode.Runner, asJSON bool) (int, []*tokens.Receipt) {
	code := exitPass
	var recs []*tokens.Receipt
	for _, st := range run.TokenSteps() {
		if ctx.Err() != nil {
			fmt.Fprintln(e.stderr, "vetbench tokens: interrupted")
			return exitFail, recs
		}
		o, err := run.MeasureTokens(ctx, tr, st)
		if err != nil {
			return failure(e, "tokens", asJSON, exitNoVerdict, err.Error()), recs
		}
		if o.Receipt != nil {
			recs = append(recs, o.Receipt)
			if !asJSON {
				fmt.Fprintln(e.stdout, sweep.TokenLine(o.Receipt, run.Scale()))
			}
		}
		if o.Err != nil {
			fmt.Fprintf(e.stderr, "vetbench tokens: %s c=%d: %v\n", st.Workload, st.Concurrency, o.Err)
			if o.Receipt == nil {
				return failure(e, "tokens", asJSON, exitNoVerdict, o.Err.Error()), recs
			}
			code = exitFail
		}
	}
	return code, recs
}

// compareTokens prints the comparison and its verdict and returns the
// exit status: could not compare (2) over worse (1) over the measuring
// status code.
func compareTokens(e *env, base, cand []*tokens.Receipt, asJSON bool, code int, margin float64) int {
	cmp, err := tokens.Compare(base, cand)
	if err != nil {
		return failure(e, "tokens", asJSON, exitNoVerdict, err.Error())
	}
	v := cmp.Verdict(margin)
	cmp.Judged = &v
	if asJSON {
		err = writeJSON(e.stdout, cmp)
	} else {
		err = cmp.WriteText(e.stdout)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "vetbench tokens: %v\n", err)
		return exitNoVerdict
	}
	switch v.Outcome {
	case tokens.CouldNotCompare:
		return exitNoVerdict
	case tokens.Worse:
		return exitFail
	}
	return code
}

// saveServeResult writes the receipts as a vllm bench serve --save-result
// file at path (nothing when path is empty), never over an existing file.
func saveServeResult(path string, recs []*tokens.Receipt) error {
	if path == "" {
		return nil
	}
	if err := tokens.WriteServeResult(path, recs); err != nil {
		return fmt.Errorf("-save-result: %w", err)
	}
	return nil
}

// readTokenReceipts reads a baseline or candidate: a file (a receipt or
// the published format) or a directory of receipts (*.json of schema
// vetbench.tokens/v2; a v1 receipt is refused with why, other files are
// left alone, a malformed receipt is an error).
func readTokenReceipts(path string) ([]*tokens.Receipt, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return tokens.ReadBaseline(path)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []*tokens.Receipt
	var total int64
	for _, en := range entries {
		if en.IsDir() || filepath.Ext(en.Name()) != ".json" {
			continue
		}
		file := filepath.Join(path, en.Name())
		data, err := receipts.ReadLimited(file) // regular files, under the cap
		if err != nil {
			return nil, err
		}
		if total += int64(len(data)); total > receipts.MaxDirBytes {
			return nil, fmt.Errorf("%s: receipts of more than %d bytes together (%d MiB, the cap on one directory)", path, receipts.MaxDirBytes, receipts.MaxDirBytes>>20)
		}
		var probe struct {
			Schema string `json:"schema"`
		}
		if json.Unmarshal(data, &probe) == nil && probe.Schema == tokens.SchemaV1 {
			// Never skipped in silence: ReadBaseline says why it is refused.
			return tokens.ReadBaseline(file)
		}
		if json.Unmarshal(data, &probe) != nil || probe.Schema != tokens.Schema {
			continue
		}
		r, err := tokens.Decode(data, file)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no %s receipt in the directory", path, tokens.Schema)
	}
	slices.SortFunc(out, func(a, b *tokens.Receipt) int { return strings.Compare(a.Key().String(), b.Key().String()) })
	return out, nil
}

// runPitfall measures the configured ladder with repeating prompts and
// with unique ones and prints the inflation, per workload.
func runPitfall(ctx context.Context, e *env, cfg config.Config, asJSON bool) int {
	run, err := sweep.Open(ctx, cfg, nil, e.runOptions("tokens", nil, nil, sweep.Tokens))
	if err != nil {
		fmt.Fprintf(e.stderr, "vetbench tokens: %v\n", err)
		return exitNoVerdict
	}
	defer run.Close(true)
	unique, err := run.TokenRunner(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "vetbench tokens: %v\n", err)
		return exitNoVerdict
	}
	shared, err := run.TokenRunner(ctx, decode.WithSharedPrompts())
	if err != nil {
		fmt.Fprintf(e.stderr, "vetbench tokens: %v\n", err)
		return exitNoVerdict
	}
	type ladder struct {
		Workload string         `json:"workload"`
		Levels   []pitfallLevel `json:"levels"`
	}
	var out []ladder
	for _, w := range cfg.Tokens.Workloads {
		base := sweep.TokenPoint(cfg, w, 1)
		base.SLO = nil // the inflation is throughput's; no target to miss
		ins, err := decode.CachePitfall(ctx, shared, unique, base, cfg.Tokens.Levels)
		if err != nil {
			fmt.Fprintf(e.stderr, "vetbench tokens: pitfall %s: %v\n", w, err)
			return exitFail
		}
		l := ladder{Workload: w}
		for _, in := range ins {
			l.Levels = append(l.Levels, pitfallLevel{in.Concurrency, in.Shared.Summary.AggregateOutputTokS,
				in.Unique.Summary.AggregateOutputTokS, in.Rel, in.TTFTRel})
		}
		out = append(out, l)
		if !asJSON {
			fmt.Fprintf(e.stdout, "workload %s: repeating prompts (a warm ladder) against unique prompts\n", w)
			if err := decode.WriteInflation(e.stdout, ins); err != nil {
				return exitNoVerdict
			}
			fmt.Fprintln(e.stdout)
		}
	}
	if asJSON {
		_ = writeJSON(e.stdout, out)
	}
	return exitPass
}

// pitfallLevel is one level of -pitfall -json.
type pitfallLevel struct {
	Concurrency int     `json:"concurrency"`
	SharedTokS  float64 `json:"shared_tok_s"`
	UniqueTokS  float64 `json:"unique_tok_s"`
	// Inflation is shared ÷ unique − 1; TTFTRelative the same for TTFT p50.
	Inflation    float64 `json:"inflation"`
	TTFTRelative float64 `json:"ttft_relative"`
}
