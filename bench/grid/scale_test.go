package grid_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
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

// published is the default matrix: the peer's grid and waits (8K…128K ×
// 1…128, 30 s, 4,096 tokens).
func published() grid.Options {
	return grid.Options{Contexts: []int{8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10}, Levels: []int{1, 2, 4, 8, 16, 32, 64, 128},
		Duration: 30 * time.Second, OutputTokens: 4096, LoopDetection: true}
}

// The default matrix on a twin of 8,192 tokens: the notice says, before a
// request is sent, that every context becomes one 3K row, and which grid
// will run.
func TestPlanSaysWhatWillRunBeforeMeasuring(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{MaxModelLen: 8192, GPUBlocks: 2100, BlockSize: 16})
	r := runner(t, srv)
	o := published()
	p, err := r.Plan(o)
	require.NoError(t, err)
	require.Empty(t, srv.Requests(), "planning sends nothing")
	require.Len(t, p.Rows, 1)
	require.Equal(t, grid.PlanRow{Asked: []int{8192, 16384, 32768, 65536, 131072}, Tokens: 4032, Label: "3K", Trimmed: true, Cells: 3}, p.Rows[0])
	require.Equal(t, []string{"contexts 8K,16K,32K,64K,128K are over max_model_len 8192 − output 4096 − 64 = 4032 tokens and trimmed to it: " +
		"8K,16K,32K,64K,128K → 3K (4032 tokens); the grid that will run is 3K × c=1,2,4,8,16,32,64,128 (8 cells, 5 of them skipped by the KV rule)"}, p.Notice)
	require.Equal(t, 3, p.Cells)

	// Asked as it fits: no notice.
	o.Contexts, o.OutputTokens = []int{1000, 2000}, 100
	p, err = r.Plan(o)
	require.NoError(t, err)
	require.Empty(t, p.Notice)
	require.Len(t, p.Rows, 2)
}

// The published grid, 9 contexts × 8 levels at 30 s, within a stated
// time: each cell's warm-up gets what its share leaves.
func TestBudgetFitsTheGridOrIsRefused(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{MaxModelLen: 1 << 21})
	r := runner(t, srv)
	o := published()
	o.Contexts = []int{8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10, 1019 << 10, 1020 << 10}
	p, err := r.Plan(o)
	require.NoError(t, err)
	require.Equal(t, 72, p.Cells)
	require.Equal(t, 72*35*time.Second, p.Least, "window 30 s + hold 3 s + pause 2 s")
	require.Equal(t, (3*8*(32+60)+8*(32+120)+5*8*(32+180))*time.Second, p.Most, "ready timeouts by context")

	o.Budget = time.Hour
	p, err = r.Plan(o)
	require.NoError(t, err)
	require.Equal(t, time.Hour/72-32*time.Second, p.CellWarmup)
	require.Equal(t, time.Hour, p.Most)
	require.Equal(t, "72 cells and 9 prefill rows: at least 42m0s, at most 1h0m0s within the budget of 1h0m0s (each cell's warm-up ≤ 18s), plus the prefill and scout requests",
		p.Estimate.Text(p.Cells, p.Prefill, 1))
	require.Contains(t, p.Estimate.Text(p.Cells, p.Prefill, 10), "at most 1h0m0s (6m0s wall at twin ×10)")

	o.Budget = 40 * time.Minute
	_, err = r.Plan(o)
	require.ErrorContains(t, err, "budget 40m0s cannot fit 72 cells: each needs at least 36s (window 30s + pause 2s + hold 3s + one reading 1s), 43m12s in all")
}

// Once the budget is spent, the cells left are Skipped, saying so: the
// wall clock jumps an hour after the first cell.
func TestBudgetSpentSkipsTheRest(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond})
	r := runner(t, srv)
	var jump atomic.Int64
	grid.SetWall(r, func() time.Time { return time.Now().Add(time.Duration(jump.Load())) })
	r.Log = writerFunc(func(line string) {
		if strings.Contains(line, " c=1: ") {
			jump.Store(int64(time.Hour))
		}
	})
	o := quick([]int{1000}, []int{1, 2, 4})
	o.Budget = 10 * time.Minute
	m, err := r.Run(t.Context(), o)
	require.NoError(t, err)
	require.Equal(t, matrix.Valid, m.Cell("1000", 1).Status, m.Cell("1000", 1).Reason)
	for _, c := range []int{2, 4} {
		require.Equal(t, matrix.Skipped, m.Cell("1000", c).Status)
		require.Contains(t, m.Cell("1000", c).Reason, "the matrix's budget of 10m0s is spent (1h0m")
	}
}

type writerFunc func(string)

func (f writerFunc) Write(p []byte) (int, error) { f(string(p)); return len(p), nil }

// One calibration per run, at a chunk: a 1M-token context costs two
// counts of at most 8,192 tokens, and the same context is never
// calibrated twice; exact targeting adds one /tokenize at full length.
func TestCalibrationIsChunkedAndCached(t *testing.T) {
	t.Parallel()
	var tokenizes atomic.Int32
	var biggest atomic.Int64
	srv := start(t, tokenstest.Config{TokenDelay: time.Millisecond, MaxModelLen: 1 << 21})
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		if q.URL.Path == "/tokenize" {
			tokenizes.Add(1)
		}
		if q.ContentLength > biggest.Load() && q.URL.Path == "/tokenize" {
			biggest.Store(q.ContentLength)
		}
		proxy(srv.URL).ServeHTTP(w, q)
	}))
	t.Cleanup(counting.Close)
	r, err := grid.NewRunner(t.Context(), bench.Endpoint{BaseURL: counting.URL, Target: receipts.Target{Kind: receipts.TargetLive}})
	require.NoError(t, err)

	o := quick([]int{1 << 20}, []int{1})
	o.OutputTokens = 2
	for range 2 {
		row, err := r.Row(t.Context(), o, 1<<20)
		require.NoError(t, err)
		require.Equal(t, "1024K", row.Label)
	}
	cal := 0
	for _, q := range srv.Requests() {
		require.Less(t, q.Prompt, 8192+128, "no request counts a 1M-token prompt")
		cal++
	}
	require.Equal(t, 2, cal, "a bare prompt and one 8K chunk, once")

	o.Targeting = grid.TargetingExact
	for range 2 {
		row, err := r.Row(t.Context(), o, 1<<20)
		require.NoError(t, err)
		require.Equal(t, "1024K", row.Label)
	}
	require.Equal(t, int32(3), tokenizes.Load(), "two to calibrate, one to check the full prompt, then cached")
	require.Greater(t, biggest.Load(), int64(4<<20), "the check was of the whole prompt")
}

func proxy(target string) *httputil.ReverseProxy {
	u, _ := url.Parse(target)
	return httputil.NewSingleHostReverseProxy(u)
}

// A reasoning model with speculative decoding: k tokens per chunk, all in
// delta.reasoning (or reasoning_content), counted from usage. The fake's
// stream is rewritten on the way: every k content chunks become one.
func TestReasoningAndMultiTokenChunksAreCountedFromUsage(t *testing.T) {
	t.Parallel()
	for _, field := range []string{"reasoning", "reasoning_content"} {
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			up := start(t, tokenstest.Config{TokenDelay: time.Millisecond, GPUBlocks: 100000, BlockSize: 16})
			srv := httptest.NewServer(rechunk(up.URL, 4, field, true))
			t.Cleanup(srv.Close)
			r, err := grid.NewRunner(t.Context(), bench.Endpoint{BaseURL: srv.URL, Target: receipts.Target{Kind: receipts.TargetLive}})
			require.NoError(t, err)
			o := quick([]int{1000}, []int{2})
			o.OutputTokens = 200
			m, err := r.Run(t.Context(), o)
			require.NoError(t, err)
			c := m.Cell("1000", 2)
			require.Equal(t, matrix.Valid, c.Status, c.Reason)
			require.Positive(t, *c.OutputTokens)
			require.NotNil(t, c.TimeBetweenTokensMs)
			require.Equal(t, matrix.Valid, m.Prefill[0].Status, m.Prefill[0].Reason)
		})
	}

	// Positive control: without usage the chunks (a quarter of the
	// tokens) are all there is, and every stream fails verification.
	up := start(t, tokenstest.Config{TokenDelay: time.Millisecond})
	srv := httptest.NewServer(rechunk(up.URL, 4, "reasoning", false))
	t.Cleanup(srv.Close)
	r, err := grid.NewRunner(t.Context(), bench.Endpoint{BaseURL: srv.URL, Target: receipts.Target{Kind: receipts.TargetLive}})
	require.NoError(t, err)
	o := quick([]int{1000}, []int{1})
	// A window longer than any stream: the first to end fails the cell.
	o.OutputTokens, o.Targeting, o.Duration = 50, grid.TargetingExact, time.Minute
	m, err := r.Run(t.Context(), o)
	require.NoError(t, err)
	require.Equal(t, matrix.Failed, m.Cell("1000", 1).Status)
	require.Contains(t, m.Cell("1000", 1).Reason, "no usage in the stream")
}

// rechunk proxies base, joining every k text chunks of a stream into one
// chunk whose text is in delta.<field>, with the usage of its last token;
// keepUsage false drops every usage member.
func rechunk(base string, k int, field string, keepUsage bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		if q.URL.Path != stream.Path {
			proxy(base).ServeHTTP(w, q)
			return
		}
		body, _ := io.ReadAll(q.Body)
		resp, err := http.Post(base+stream.Path, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		fl := w.(http.Flusher)
		emit := func(v map[string]any) {
			if !keepUsage {
				delete(v, "usage")
			}
			data, _ := json.Marshal(v)
			fmt.Fprintf(w, "data: %s\n\n", data)
			fl.Flush()
		}
		var text strings.Builder
		var last map[string]any
		n := 0
		flush := func(finish any) {
			if n == 0 {
				return
			}
			last["choices"] = []map[string]any{{"index": 0, "delta": map[string]any{field: text.String()}, "finish_reason": finish}}
			emit(last)
			text.Reset()
			n = 0
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if data == "[DONE]" {
				flush(nil)
				fmt.Fprint(w, "data: [DONE]\n\n")
				fl.Flush()
				return
			}
			var ch map[string]any
			if json.Unmarshal([]byte(data), &ch) != nil {
				continue
			}
			choices, _ := ch["choices"].([]any)
			if len(choices) == 0 {
				flush(nil)
				emit(ch) // the usage-only chunk
				continue
			}
			c0 := choices[0].(map[string]any)
			delta := c0["delta"].(map[string]any)
			s, _ := delta["content"].(string)
			if s == "" {
				emit(ch) // the role chunk
				continue
			}
			text.WriteString(s)
			last, n = ch, n+1
			if n == k || c0["finish_reason"] != nil {
				flush(c0["finish_reason"])
			}
		}
	})
}

// A twin at ×10: every wait is model time, and so is every figure — the
// fake's 2 ms between tokens is at least 20 ms between tokens.
func TestTimeScaleGivesModelTime(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond})
	ep := bench.Endpoint{BaseURL: srv.URL, Target: receipts.Target{Kind: receipts.TargetInProcess, Profile: "fake", TimeScale: 10}}
	r, err := grid.NewRunner(t.Context(), ep)
	require.NoError(t, err)
	require.Equal(t, 10.0, r.TimeScale)
	o := quick([]int{1000}, []int{1})
	o.Duration, o.Hold, o.ScrapeInterval = 1500*time.Millisecond, 300*time.Millisecond, 100*time.Millisecond
	m, err := r.Run(t.Context(), o)
	require.NoError(t, err)
	c := m.Cell("1000", 1)
	require.Equal(t, matrix.Valid, c.Status, c.Reason)
	require.GreaterOrEqual(t, *c.TimeBetweenTokensMs, 20.0, "2 ms of wall between tokens is 20 ms of model time")
	require.Contains(t, m.Description, "twin at ×10 time scale, every figure in model time")
	require.Equal(t, 10.0, m.Target.TimeScale)
}
