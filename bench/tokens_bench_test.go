package bench_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/audit"
	"github.com/vetbench/vetbench/bench/matrix"
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/bench/tokens"
	"github.com/vetbench/vetbench/fixtures/sets"
	"github.com/vetbench/vetbench/receipts"
	rmatrix "github.com/vetbench/vetbench/receipts/matrix"
	"github.com/vetbench/vetbench/receipts/speed"
	rtokens "github.com/vetbench/vetbench/receipts/tokens"
)

// BenchmarkTokens measures token throughput at every workload × level
// (VETBENCH_TOKENS_WORKLOADS × VETBENCH_TOKENS_LEVELS, see bench/config):
// C streamed requests at once, each for exactly VETBENCH_TOKENS_OUTPUT
// tokens, VETBENCH_TOKENS_REPEATS times after a warm-up. One op is one
// point; ns/op is hidden. Every request is verified; failures beyond
// VETBENCH_TOKENS_ACCEPT_FAILURES fail the benchmark. Each point's receipt
// goes to VETBENCH_OUT (tokens_<workload>_c<N>_<run>_<n>.json).
func BenchmarkTokens(b *testing.B) {
	s := getSuite(b)
	r := tokenRunner(b, s)
	dir := s.outDir()
	write := func(rec *rtokens.Receipt) (string, error) {
		p := rec.Point
		path := filepath.Join(dir, fmt.Sprintf("tokens_%s_c%d_%s_%d.json", p.Workload, p.Concurrency, r.RunID, seq.Add(1)))
		return path, writeNew(path, func(path string) error { return rtokens.WriteFile(path, rec) })
	}
	for _, w := range s.cfg.Tokens.Workloads {
		for _, c := range s.cfg.Tokens.Levels {
			b.Run(fmt.Sprintf("workload=%s/c=%d", w, c), func(b *testing.B) {
				ctx := s.context(b)
				p := tokens.PointFrom(s.cfg.Tokens, w, c)
				var recs []*rtokens.Receipt
				for b.Loop() {
					rec, err := r.Measure(ctx, p)
					if err != nil {
						if rec != nil {
							path, werr := write(rec)
							b.Fatalf("%v (receipt written to %s, %v)", err, path, werr)
						}
						b.Fatal(err)
					}
					for i, run := range rec.Runs {
						if ll := run.LittlesLaw; ll != nil && ll.RelError > audit.Tolerance {
							b.Errorf("repeat %d: Little's law does not hold: %v", i+1, ll.Problems)
						}
					}
					recs = append(recs, rec)
				}
				b.ReportMetric(0, "ns/op")
				// One receipt per point: the repeats of every pass b.Loop made.
				merged := mergeTokens(recs)
				if _, err := write(merged); err != nil {
					b.Fatal(err)
				}
				metrics.Report(b, tokens.Metrics(merged))
			})
		}
	}
}

// mergeTokens is one receipt holding the runs of several passes over one
// point, its figures summarised again.
func mergeTokens(recs []*rtokens.Receipt) *rtokens.Receipt {
	m := *recs[len(recs)-1]
	m.Started, m.Runs = recs[0].Started, nil
	for _, r := range recs {
		m.Runs = append(m.Runs, r.Runs...)
	}
	m.Point.Repeats = len(m.Runs)
	m.Summary = rtokens.Summarize(m.Point, m.Runs)
	m.Identity.Digest = m.IdentityDigest()
	return &m
}

// BenchmarkMatrix measures the speed matrix one cell per sub-benchmark
// (VETBENCH_MATRIX_CONTEXTS × VETBENCH_MATRIX_LEVELS, each for
// VETBENCH_MATRIX_DURATION of sustained decode). A skipped cell skips; a
// looped or failed one is an error; a Requests queued cell reports its
// figures with queued=1. The whole matrix goes to VETBENCH_OUT as JSON and
// CSV.
func BenchmarkMatrix(b *testing.B) {
	s := getSuite(b)
	r := matrixRunner(b, s)
	o := matrix.OptionsFrom(s.cfg.Matrix)
	m := &rmatrix.Matrix{Schema: rmatrix.Schema, Source: rmatrix.SourceVetbench, RunID: r.RunID,
		Target: r.Endpoint.Receipt(), Identity: r.Identity, DurationSeconds: o.Duration.Seconds(),
		MaxOutputTokens: o.OutputTokens, Prefill: []rmatrix.Prefill{}, Cells: []rmatrix.Cell{}, Warnings: slices.Clone(r.Notes)}
	for _, want := range o.Contexts {
		row, err := r.Row(s.context(b), o, want)
		if err != nil {
			b.Fatal(err)
		}
		if row == nil {
			continue
		}
		m.Warnings = append(m.Warnings, row.Warnings...)
		for _, c := range o.Levels {
			b.Run(fmt.Sprintf("ctx=%s/c=%d", row.Label, c), func(b *testing.B) {
				ctx := s.context(b)
				var cell rmatrix.Cell
				for b.Loop() {
					cell = row.Cell(ctx, c)
				}
				b.ReportMetric(0, "ns/op")
				m.Cells = slices.DeleteFunc(m.Cells, func(x rmatrix.Cell) bool { return x.Context == cell.Context && x.Concurrency == c })
				m.Cells = append(m.Cells, cell)
				switch cell.Status {
				case rmatrix.Skipped:
					b.Skip(cell.Reason)
				case rmatrix.Looped, rmatrix.Failed:
					b.Errorf("%s: %s", cell.Status.Label(), cell.Reason)
				}
				metrics.Report(b, matrix.Metrics(cell))
			})
		}
	}
	m.Sort()
	if len(m.Cells) == 0 {
		return
	}
	base := filepath.Join(s.outDir(), fmt.Sprintf("matrix_%s_%d", r.RunID, seq.Add(1)))
	if err := writeNew(base+".json", func(p string) error { return rmatrix.WriteFile(p, m) }); err != nil {
		b.Error(err)
	}
	if err := writeNew(base+".csv", func(p string) error { return rmatrix.WriteCSVFile(p, m) }); err != nil {
		b.Error(err)
	}
}

// seq numbers this process's token receipts and matrices: -count N keeps
// every pass's files, and nothing is written over.
var seq atomic.Int64

func writeNew(path string, write func(string) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return write(path)
}

var (
	tokenOnce, matrixOnce sync.Once
	tokenR                *tokens.Runner
	matrixR               *matrix.Runner
	tokenErr, matrixErr   error
)

func tokenRunner(tb testing.TB, s *suite) *tokens.Runner {
	tb.Helper()
	tokenOnce.Do(func() { tokenR, tokenErr = tokens.NewRunner(context.Background(), s.target.Endpoint, s.cfg) })
	if tokenErr != nil {
		tb.Fatalf("token runner: %v", tokenErr)
	}
	return tokenR
}

func matrixRunner(tb testing.TB, s *suite) *matrix.Runner {
	tb.Helper()
	matrixOnce.Do(func() { matrixR, matrixErr = matrix.NewRunner(context.Background(), s.target.Endpoint, s.cfg) })
	if matrixErr != nil {
		tb.Fatalf("matrix runner: %v", matrixErr)
	}
	return matrixR
}

// writeSuiteConfig prints the token units and this run's configuration
// lines (speed.ConfigLines): what was measured, so the speed gate can
// refuse to compare two outputs of different experiments. A target that
// cannot be opened prints nothing (each benchmark then fails on it).
func writeSuiteConfig(stdout, stderr io.Writer) {
	for _, u := range tokens.Units() {
		fmt.Fprintln(stdout, u.Line())
	}
	openSuite()
	if shared.err != nil {
		fmt.Fprintf(stderr, "no configuration lines: target: %v\n", shared.err)
		return
	}
	cfg, err := suiteConfig(context.Background(), &shared)
	if err != nil {
		fmt.Fprintf(stderr, "configuration lines incomplete: %v\n", err)
	}
	for _, l := range speed.ConfigLines(cfg) {
		fmt.Fprintln(stdout, l)
	}
}

// suiteConfig is what this run measures, keyed as receipts/speed names it.
func suiteConfig(ctx context.Context, s *suite) (map[string]string, error) {
	ep := s.target.Endpoint
	t := ep.Target
	cfg := map[string]string{
		speed.KeyHarness:     bench.HarnessVersion,
		speed.KeyScoring:     string(s.cfg.Mode),
		speed.KeyServerFlags: s.cfg.ServerFlags,
		speed.KeyTokens:      fmt.Sprintf("output=%d", s.cfg.Tokens.OutputTokens),
		speed.KeyMatrix:      fmt.Sprintf("duration=%s output=%d targeting=%s", s.cfg.Matrix.Duration, s.cfg.Matrix.OutputTokens, s.cfg.Matrix.Targeting),
	}
	if t.Kind == receipts.TargetLive {
		cfg[speed.KeyTarget] = "live"
	} else {
		cfg[speed.KeyTarget] = "twin"
		cfg[speed.KeyTwinProfile] = t.Profile
		cfg[speed.KeyTimeScale] = strconv.FormatFloat(max(t.TimeScale, 1), 'g', -1, 64)
		cfg[speed.KeySlowdown] = strconv.FormatFloat(s.cfg.Twin.Slowdown, 'g', -1, 64)
		cfg[speed.KeyTwinFaults] = strings.Join(s.cfg.Twin.Faults, ";")
	}
	info, err := probe.Server(ctx, http.DefaultClient, ep.BaseURL, func(r *http.Request) {
		if ep.APIKey != "" {
			r.Header.Set("Authorization", "Bearer "+ep.APIKey)
		}
	})
	if err != nil {
		return cfg, err
	}
	model := ep.Model
	if model == "" && len(info.Served) > 0 {
		model = info.Served[0].ID
	}
	cfg[speed.KeyModel] = model
	pins := receipts.Pins{Model: model}
	info.Pin(&pins)
	cfg[speed.KeyServedRoot] = receipts.Weights(pins)
	cfg[speed.KeyServerBuild] = info.Version
	var fix []string
	for _, name := range s.cfg.Sets {
		s.mu.Lock()
		set, ok := s.sets[name]
		s.mu.Unlock()
		if !ok {
			if set, err = sets.Open(ctx, name, s.cfg.Fixtures); err != nil {
				return cfg, err
			}
			s.mu.Lock()
			s.sets[name] = set
			s.mu.Unlock()
		}
		fix = append(fix, name+"="+set.SliceSHA256()[:12])
	}
	cfg[speed.KeyFixture] = strings.Join(fix, " ")
	return cfg, nil
}
