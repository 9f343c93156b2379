package grid_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/decode/tokenstest"
	"github.com/vetbench/vetbench/bench/grid"
	"github.com/vetbench/vetbench/bench/stream"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/matrix"
)

// These tests run real streams against a fake on the wall clock, but
// assert only on what the fake makes certain (statuses, counts, prompts),
// never on a duration or a rate: the machine is shared and slow.

func start(t *testing.T, cfg tokenstest.Config) *tokenstest.Server {
	t.Helper()
	s := tokenstest.Start(cfg)
	t.Cleanup(s.Close)
	return s
}

func runner(t *testing.T, srv *tokenstest.Server) *grid.Runner {
	t.Helper()
	r, err := grid.NewRunner(t.Context(), bench.Endpoint{BaseURL: srv.URL, Target: receipts.Target{Kind: receipts.TargetLive}})
	require.NoError(t, err)
	return r
}

// quick is a matrix small enough for a test: short waits, no pauses.
func quick(contexts, levels []int) grid.Options {
	return grid.Options{Contexts: contexts, Levels: levels, Duration: 150 * time.Millisecond, OutputTokens: 100000,
		LoopDetection: true, ScrapeInterval: 10 * time.Millisecond, Hold: 30 * time.Millisecond,
		ReadyTimeout: 20 * time.Second, DrainTimeout: 20 * time.Second, Pause: -1}
}

func TestValidCellsAndPrefill(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond, GPUBlocks: 100000, BlockSize: 16})
	r := runner(t, srv)
	m, err := r.Run(t.Context(), quick([]int{1000, 2000}, []int{1, 2}))
	require.NoError(t, err)
	require.Nil(t, m.Stopped)
	require.Len(t, m.Cells, 4)
	for _, c := range m.Cells {
		require.Equal(t, matrix.Valid, c.Status, "%s c=%d: %s", c.Context, c.Concurrency, c.Reason)
		require.NotNil(t, c.TotalTokS)
		require.Positive(t, *c.TotalTokS)
		require.Positive(t, *c.OutputTokens)
		require.Equal(t, *c.TotalTokS/float64(c.Concurrency), *c.PerRequestTokS)
		require.Equal(t, float64(c.Concurrency), *c.AverageActive, "no stream ends inside the window, so all C run")
		require.Zero(t, c.CompletedRequests)
		require.NotNil(t, c.TTFTMs)
		require.NotNil(t, c.TimeBetweenTokensMs)
	}
	require.Len(t, m.Prefill, 2)
	for i, want := range []int{1000, 2000} {
		p := m.Prefill[i]
		require.Equal(t, matrix.Valid, p.Status, p.Reason)
		require.InDelta(t, want, *p.PromptTokens, float64(want)/20, "calibrated within 5 %% of the target")
		require.Positive(t, *p.TokS)
	}
	_, err = matrix.Marshal(m)
	require.NoError(t, err, "the matrix validates")
	require.Equal(t, "org/fake", m.Identity.Model)
	require.Equal(t, "100000", m.Identity.CacheConfig["num_gpu_blocks"])

	// Prompts: every one starts with a tag; a cell's C streams and its
	// scout send one prompt, and no two cells or prefills share a tag.
	byTag := map[string][]tokenstest.Request{}
	for _, q := range srv.Requests() {
		require.True(t, strings.HasPrefix(q.Text, "[vb-"+r.RunID+"-"), q.Text[:40])
		tag := q.Text[:strings.Index(q.Text, "]")+1]
		byTag[tag] = append(byTag[tag], q)
	}
	for tag, qs := range byTag {
		switch {
		case strings.Contains(tag, "-cell-"):
			require.Equal(t, 1, qs[0].MaxTokens, "%s: the scout goes first", tag)
			for _, q := range qs[1:] {
				require.Equal(t, qs[0].Text, q.Text)
				require.Equal(t, 100000, q.MaxTokens)
				require.True(t, q.IgnoreEOS)
			}
		case strings.Contains(tag, "-prefill-"):
			require.Len(t, qs, 1, "a cold request of its own")
		}
	}
	require.Len(t, byTag, 1+2+4, "one calibration, two prefills, four cells")
	require.Contains(t, matrix.Text(m), "Sustained decode")
}

func TestRequestsQueued(t *testing.T) {
	t.Parallel()
	// Two decode slots for four streams: two wait, so the cell is never
	// ready; it is measured anyway at the timeout and flagged.
	srv := start(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond, MaxRunning: 2})
	o := quick([]int{1000}, []int{4})
	o.ReadyTimeout = 200 * time.Millisecond
	o.NoPrefill = true
	m, err := runner(t, srv).Run(t.Context(), o)
	require.NoError(t, err)
	c := m.Cell("1000", 4)
	require.Equal(t, matrix.RequestsQueued, c.Status)
	require.Contains(t, c.Reason, "never ready")
	require.Contains(t, c.Reason, "requests waited")
	require.NotNil(t, c.TotalTokS, "a queued cell keeps its figures")
	require.Equal(t, 2.0, *c.AverageActive)
	require.Contains(t, matrix.Text(m), "Requests queued")
	_, err = matrix.Marshal(m)
	require.NoError(t, err)

	// Positive control: two streams fit the two slots.
	o = quick([]int{1000}, []int{2})
	o.NoPrefill = true
	m, err = runner(t, srv).Run(t.Context(), o)
	require.NoError(t, err)
	require.Equal(t, matrix.Valid, m.Cell("1000", 2).Status, m.Cell("1000", 2).Reason)
}

func TestLoopedCellIsCancelled(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{Loop: func(q tokenstest.Request) bool { return q.MaxTokens > 1 }})
	o := quick([]int{1000}, []int{2})
	o.NoPrefill = true
	o.Duration = time.Minute // the loop ends the cell long before
	m, err := runner(t, srv).Run(t.Context(), o)
	require.NoError(t, err)
	c := m.Cell("1000", 2)
	require.Equal(t, matrix.Looped, c.Status)
	require.Contains(t, c.Reason, "loop detected in content: a 4-character cycle")
	require.Nil(t, c.TotalTokS, "a looped cell's figures are discarded")
	require.Contains(t, matrix.Text(m), "Looped")

	// Opted out, the same fake gives a cell with figures.
	o.LoopDetection = false
	o.Duration = 150 * time.Millisecond
	o.OutputTokens = 3000
	srv2 := start(t, tokenstest.Config{Loop: func(q tokenstest.Request) bool { return q.MaxTokens > 1 }, TokenDelay: time.Millisecond})
	m, err = runner(t, srv2).Run(t.Context(), o)
	require.NoError(t, err)
	require.NotEqual(t, matrix.Looped, m.Cell("1000", 2).Status)
}

// At -output 256 a looping request carries 1,024 characters: too few for
// the peer's per-request confirmation (4,096), so a cell of them was
// Valid. The cell's requests, all of one prompt, end in the same cycle:
// confirmed across them.
func TestLoopAtOutput256IsCaught(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{Loop: func(q tokenstest.Request) bool { return q.MaxTokens > 1 }, TokenDelay: 100 * time.Microsecond})
	o := quick([]int{1000}, []int{1, 4})
	o.NoPrefill, o.OutputTokens, o.Duration = true, 256, time.Minute
	m, err := runner(t, srv).Run(t.Context(), o)
	require.NoError(t, err)
	for _, c := range m.Cells {
		require.Equal(t, matrix.Looped, c.Status, "c=%d: %s", c.Concurrency, c.Reason)
		require.Contains(t, c.Reason, "loop detected in content: the same 4-character cycle ends 4 requests of one prompt")
	}

	// Positive control: text that does not loop, at the same length.
	o.Duration = 300 * time.Millisecond
	m, err = runner(t, start(t, tokenstest.Config{TokenDelay: 100 * time.Microsecond})).Run(t.Context(), o)
	require.NoError(t, err)
	for _, c := range m.Cells {
		require.NotEqual(t, matrix.Looped, c.Status, "c=%d: %s", c.Concurrency, c.Reason)
	}
}

func TestFailedCells(t *testing.T) {
	t.Parallel()
	cases := map[string]tokenstest.Config{
		"error_mid_stream": {TokenDelay: time.Millisecond, Fail: func(q tokenstest.Request) int {
			if q.MaxTokens > 1 {
				return -1
			}
			return 0
		}},
		"http_500": {TokenDelay: time.Millisecond, Fail: func(q tokenstest.Request) int {
			if q.MaxTokens > 1 {
				return 500
			}
			return 0
		}},
		"short_stream": {TokenDelay: time.Millisecond, Tokens: func(q tokenstest.Request) int {
			if q.MaxTokens > 1 {
				return 20
			}
			return 1
		}},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := start(t, cfg)
			o := quick([]int{1000}, []int{2})
			o.NoPrefill = true
			o.Duration = 2 * time.Second
			m, err := runner(t, srv).Run(t.Context(), o)
			require.NoError(t, err)
			c := m.Cell("1000", 2)
			require.Equal(t, matrix.Failed, c.Status, c.Reason)
			require.Contains(t, c.Reason, "request(s) failed")
			_, err = matrix.Marshal(m)
			require.NoError(t, err)
		})
	}
}

func TestSkippedOverKVCapacity(t *testing.T) {
	t.Parallel()
	// 100 blocks × 16 = 1600 tokens of KV: c=1 × (1000 + 400) fits,
	// c=2 does not even with the prompt shared (1000 + 2 × 400).
	srv := start(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond, GPUBlocks: 100, BlockSize: 16})
	o := quick([]int{1000}, []int{1, 2})
	o.OutputTokens = 400
	m, err := runner(t, srv).Run(t.Context(), o)
	require.NoError(t, err)
	require.Equal(t, matrix.Valid, m.Cell("1000", 1).Status, m.Cell("1000", 1).Reason)
	c := m.Cell("1000", 2)
	require.Equal(t, matrix.Skipped, c.Status)
	require.Equal(t, "context + C × output = 1000 + 2 × 400 = 1800 tokens (the prompt's cached blocks shared by the streams) exceeds the KV cache of 1600 tokens (vllm:cache_config_info num_gpu_blocks × block_size)", c.Reason)
	for _, q := range srv.Requests() {
		require.NotContains(t, q.Text, "-cell-ctx1000-c2]", "a skipped cell sends nothing")
	}
}

func TestContextsTrimmedToMaxModelLen(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond, MaxModelLen: 3000})
	o := quick([]int{1000, 8192}, []int{1})
	o.OutputTokens = 500
	m, err := runner(t, srv).Run(t.Context(), o)
	require.NoError(t, err)
	require.Equal(t, []string{"1000", "2K"}, m.Contexts(), "8K trimmed to 3000 − 500 − 64 = 2436 tokens")
	require.Equal(t, 2436, m.Cell("2K", 1).ContextTokens)
	require.Equal(t, matrix.Valid, m.Cell("2K", 1).Status, m.Cell("2K", 1).Reason)
	require.Contains(t, strings.Join(m.Warnings, "\n"), "context 8K is over max_model_len 3000 − output 500 − 64 = 2436 tokens and trimmed to it: 8K → 2K (2436 tokens); the grid that will run is 1000,2K × c=1 (2 cells)")
}

// A context trimmed for its output keeps a prefill row at the length
// asked, when one prompt token needs no room for output (max_model_len −
// 64 at most), labelled as asked: the published DeepSeek matrix's 1024K
// prefill beside its 1019K decode row.
func TestAskedContextKeepsItsPrefillRow(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond, MaxModelLen: 4160})
	o := quick([]int{4096}, []int{1})
	o.OutputTokens = 500
	r := runner(t, srv)
	plan, err := r.Plan(o)
	require.NoError(t, err)
	require.Equal(t, 2, plan.Prefill, "the decode row's and the asked context's")
	m, err := r.Run(t.Context(), o)
	require.NoError(t, err)
	require.Equal(t, []string{"3K"}, m.Contexts(), "decode trimmed to 4160 − 500 − 64 = 3596 tokens")
	require.Len(t, m.Prefill, 2)
	labels := map[string]int{}
	for _, p := range m.Prefill {
		require.Equal(t, matrix.Valid, p.Status, "%s: %s", p.Context, p.Reason)
		labels[p.Context] = p.ContextTokens
	}
	require.Equal(t, map[string]int{"3K": 3596, "4K": 4096}, labels)
	require.NoError(t, m.Validate(), "labels and contexts agree")

	// At most the 64-token room off the asked context: 4160 − 64 = 4096
	// tokens of prompt under the asked 4160's label.
	o.Contexts = []int{4160}
	m, err = r.Run(t.Context(), o)
	require.NoError(t, err)
	require.NoError(t, m.Validate())
	require.Equal(t, "4K", m.Prefill[1].Context)

	// Not trimmed: one prefill row.
	o.Contexts = []int{3000}
	plan, err = r.Plan(o)
	require.NoError(t, err)
	require.Equal(t, 1, plan.Prefill)
}

// Under the default budget a row's first-token budget lasts as long as
// its cells may (a million-token prefill takes two minutes, past the
// default 120 s: the DeepSeek grid on the twin measures its 1019K and
// 1024K prefills of 132 s, cut at 120 s before); a budget the caller set
// stays as set.
func TestRowBudgetFitsItsCells(t *testing.T) {
	t.Parallel()
	o := grid.Options{Duration: 30 * time.Second}
	b := grid.RowBudget(stream.DefaultBudget, 1<<20, o)
	require.Equal(t, 210*time.Second, b.TTFT, "180 s warm-up above 64K + the 30 s window")
	require.Equal(t, stream.DefaultSlowestTPOT, b.TPOT)
	require.Equal(t, stream.DefaultBudget, grid.RowBudget(stream.DefaultBudget, 8192, grid.Options{}), "8K: its 60 s warm-up is inside the default")
	set := stream.Budget{TTFT: 200 * time.Millisecond, TPOT: 5 * time.Millisecond}
	require.Equal(t, set, grid.RowBudget(set, 1<<20, o))
	require.Equal(t, stream.Budget{}, grid.RowBudget(stream.Budget{}, 1<<20, o), "none stays none")
}

func TestExactTargetingWithTokenize(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond})
	o := quick([]int{20000}, []int{1})
	o.Targeting = grid.TargetingExact
	o.Duration = 50 * time.Millisecond
	m, err := runner(t, srv).Run(t.Context(), o)
	require.NoError(t, err)
	require.InDelta(t, 20000, *m.Prefill[0].PromptTokens, 100, "within max(64, 0.5 %%)")
	for _, q := range srv.Requests() {
		require.NotContains(t, q.Text, "-cal-", "exact targeting asks /tokenize, not the model")
	}

	// Without /tokenize, exact targeting fails the run and says why.
	srv2 := start(t, tokenstest.Config{NoTokenize: true})
	m, err = runner(t, srv2).Run(t.Context(), o)
	require.ErrorIs(t, err, grid.ErrStopped)
	require.Contains(t, m.Stopped.Message, "calibrate")
}

func TestWithoutMetricsReadinessIsTheClientsOnly(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond, NoMetrics: true})
	r := runner(t, srv)
	require.Contains(t, strings.Join(r.Notes, "\n"), "no /metrics")
	o := quick([]int{1000}, []int{2})
	o.NoPrefill = true
	m, err := r.Run(t.Context(), o)
	require.NoError(t, err)
	c := m.Cell("1000", 2)
	require.Equal(t, matrix.Valid, c.Status, c.Reason)
	require.Nil(t, c.AverageActive, "no gauges, no average")
}

func TestCancelKeepsWhatWasMeasured(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	srv := start(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond, Tokens: func(q tokenstest.Request) int {
		if strings.Contains(q.Text, "-cell-ctx1000-c2]") && q.MaxTokens > 1 {
			cancel() // Ctrl-C while the second cell streams
		}
		return q.MaxTokens
	}})
	o := quick([]int{1000}, []int{1, 2, 4})
	o.NoPrefill = true
	m, err := runner(t, srv).Run(ctx, o)
	require.ErrorIs(t, err, grid.ErrStopped)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, "canceled", m.Stopped.Reason)
	require.Equal(t, matrix.Valid, m.Cell("1000", 1).Status)
	require.Equal(t, matrix.Failed, m.Cell("1000", 2).Status)
	require.Contains(t, m.Cell("1000", 2).Reason, "canceled")
	require.Nil(t, m.Cell("1000", 4), "nothing after the interrupt")
	_, err = matrix.Marshal(m)
	require.NoError(t, err, "what was measured is a valid matrix")
}

func TestOptionsValidation(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{})
	_, err := runner(t, srv).Run(t.Context(), grid.Options{Targeting: "guess"})
	for _, want := range []string{"contexts", "levels", "duration", "output tokens", "targeting"} {
		require.ErrorContains(t, err, want)
	}
	require.False(t, errors.Is(err, grid.ErrStopped))
}

func TestContextsThatDoNotFit(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond, MaxModelLen: 600})
	o := quick([]int{8192, 16384}, []int{1})
	o.OutputTokens = 600
	m, err := runner(t, srv).Run(t.Context(), o)
	require.NoError(t, err)
	require.Empty(t, m.Cells)
	require.Contains(t, strings.Join(m.Warnings, "\n"), "context 8K does not fit max_model_len 600 with output 600: left out")

	// Two contexts trimmed to the same length are measured once.
	srv2 := start(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond, MaxModelLen: 2000})
	o.OutputTokens = 500
	o.NoPrefill = true
	m, err = runner(t, srv2).Run(t.Context(), o)
	require.NoError(t, err)
	require.Len(t, m.Cells, 1)
	require.Contains(t, strings.Join(m.Warnings, "\n"), "8K,16K → 1K (1436 tokens); the grid that will run is 1K × c=1 (1 cell)", "measured once")
}

// A cell measured while the twin fell behind keeps the warning; a
// Requests queued one also says its queue may be the machine's, a Valid
// one's reason is left alone.
func TestFellBehindCell(t *testing.T) {
	const w = "the twin fell behind its model: …"
	queued := matrix.Cell{Status: matrix.RequestsQueued, Reason: "27.10 of 32 requests running on average (below 0.95·C)"}
	grid.FellBehind(&queued, w)
	require.Equal(t, []string{w}, queued.Warnings)
	require.Equal(t, "27.10 of 32 requests running on average (below 0.95·C); "+grid.BehindQueued, queued.Reason)
	valid := matrix.Cell{Status: matrix.Valid}
	grid.FellBehind(&valid, w)
	require.Equal(t, []string{w}, valid.Warnings)
	require.Empty(t, valid.Reason)
}
