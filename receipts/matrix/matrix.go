// Package matrix holds the speed test matrix: context length (rows) ×
// simultaneous requests (columns) of fixed-duration sustained decode, with
// one prefill row per context, as a versioned JSON document
// (vetbench.matrix/v1). It writes and reads the JSON atomically and
// validated, writes and reads the CSV layout the published matrices use
// (speed-matrix-*.csv), and renders the matrix as text the way the seed
// pages show it.
package matrix

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// Schema names the matrix format; a reader refuses any other value.
const Schema = "vetbench.matrix/v1"

// Sources of a matrix.
const (
	SourceVetbench = "vetbench"
	// SourcePublished marks a matrix read from a published CSV.
	SourcePublished = "published"
)

// Status is a cell's verdict.
type Status string

// Statuses. A cell that is not Valid says why in Reason (a published CSV
// has no reasons).
const (
	Valid Status = "valid"
	// RequestsQueued: the server could not run all requests at once
	// (waiting > 0, or average running below 0.95·C, in the window).
	RequestsQueued Status = "requests_queued"
	// Looped: an exact periodic tail in the output; figures discarded.
	Looped Status = "looped"
	// Failed: requests failed; figures discarded or partial.
	Failed Status = "failed"
	// Skipped: not run — the cell's KV (context + C × output with the
	// prompt cached once, C × (context + output) without a prefix cache)
	// exceeds the server's KV capacity, or the run's budget was spent (the
	// reason says which).
	Skipped Status = "skipped"
)

var labels = map[Status]string{
	Valid:          "Valid",
	RequestsQueued: "Requests queued",
	Looped:         "Looped",
	Failed:         "Failed",
	Skipped:        "Skipped",
}

// Label is the status as the published pages spell it.
func (s Status) Label() string {
	if l, ok := labels[s]; ok {
		return l
	}
	return string(s)
}

// Known reports a status of the list above.
func (s Status) Known() bool { _, ok := labels[s]; return ok }

// ParseLabel reads a published status label.
func ParseLabel(label string) (Status, bool) {
	for s, l := range labels {
		if l == label {
			return s, true
		}
	}
	return "", false
}

// Matrix is one speed test matrix run.
type Matrix struct {
	Schema   string          `json:"schema"`
	Source   string          `json:"source"`
	RunID    string          `json:"run_id,omitempty"`
	Started  time.Time       `json:"started_utc,omitzero"`
	Finished time.Time       `json:"finished_utc,omitzero"`
	Target   receipts.Target `json:"target"`
	Identity Identity        `json:"identity"`
	// Description is one line about the run (the published CSV's comment
	// line, without "# ").
	Description string `json:"description,omitempty"`
	// DurationSeconds is the asked measurement window of a cell and
	// MaxOutputTokens the max_tokens of each stream; 0 when unrecorded.
	DurationSeconds float64   `json:"duration_seconds,omitempty"`
	MaxOutputTokens int       `json:"max_output_tokens,omitempty"`
	Prefill         []Prefill `json:"prefill"`
	Cells           []Cell    `json:"cells"`
	// Stopped is nil when every cell ran (or was skipped by rule).
	Stopped  *Stopped `json:"stopped"`
	Warnings []string `json:"warnings,omitempty"`
}

// Identity is what must be equal for two matrices to be comparable. An
// empty field is unrecorded.
type Identity struct {
	Model       string `json:"model,omitempty"`
	ServerBuild string `json:"server_build,omitempty"`
	ServerFlags string `json:"server_flags,omitempty"`
	GPU         string `json:"gpu,omitempty"`
	// Tool is the harness that measured ("vetbench", "llm-inference-bench
	// v0.4.29").
	Tool string `json:"tool,omitempty"`
	// CacheConfig are the labels of vllm:cache_config_info.
	CacheConfig    map[string]string `json:"cache_config,omitempty"`
	HarnessVersion string            `json:"harness_version,omitempty"`
	Digest         string            `json:"digest"`
}

// Prefill is one context's prefill figure: prompt tokens ÷ time to first
// token of a cold request.
type Prefill struct {
	// Context is the row label ("8K": floor(tokens ÷ 1024) K).
	Context string `json:"context"`
	// ContextTokens is the asked context length; 0 when unrecorded (a
	// published label does not say it exactly: "123K" is 126,912).
	ContextTokens int    `json:"context_tokens,omitempty"`
	Requests      int    `json:"requests_at_once"`
	Status        Status `json:"status"`
	Reason        string `json:"reason,omitempty"`
	// PromptTokens is usage.prompt_tokens of the measured request.
	PromptTokens *int     `json:"prompt_tokens"`
	TTFTMs       *float64 `json:"ttft_ms"`
	TokS         *float64 `json:"tok_s"`
	// Samples is the number of measured requests (the published
	// completed_requests column).
	Samples int `json:"samples"`
}

// Cell is one (context, concurrency) cell of sustained decode.
type Cell struct {
	Context       string `json:"context"`
	ContextTokens int    `json:"context_tokens,omitempty"`
	Concurrency   int    `json:"requests_at_once"`
	Status        Status `json:"status"`
	Reason        string `json:"reason,omitempty"`
	// TotalTokS is output tokens counted in the window ÷ the window.
	TotalTokS      *float64 `json:"total_tok_s"`
	PerRequestTokS *float64 `json:"per_request_tok_s"`
	TTFTMs         *float64 `json:"ttft_ms"`
	// TimeBetweenTokensMs is the per-request (last − first) ÷ (n − 1).
	TimeBetweenTokensMs *float64 `json:"time_between_tokens_ms"`
	// AverageActive is the mean of vllm:num_requests_running in the window.
	AverageActive     *float64 `json:"average_active_requests"`
	CompletedRequests int      `json:"completed_requests"`
	OutputTokens      *int     `json:"output_tokens"`
	// MeasuredSeconds is the usage window: start to the last update.
	MeasuredSeconds *float64 `json:"measured_seconds"`
	// Serve is the cell's figures as `vllm bench serve` computes them
	// (tokens.ServeFigures) over the cell's completed requests; nil when
	// none completed, in older files and in a published CSV (which has no
	// such columns).
	Serve *tokens.Serve `json:"vllm_bench_serve,omitempty"`
	// Warnings are what a reader of the cell's figures must know: a twin
	// that fell behind its model in the window.
	Warnings []string `json:"warnings,omitempty"`
}

// Stopped says why a matrix ended before its last cell.
type Stopped struct {
	Reason  string `json:"reason"` // error | canceled | timeout
	Message string `json:"message"`
}

// StoppedBy is the stopped block of a matrix that err ended early (nil
// for none): canceled (Ctrl-C, SIGTERM), timeout, or error.
func StoppedBy(err error) *Stopped {
	if err == nil {
		return nil
	}
	reason := "error"
	switch {
	case errors.Is(err, context.Canceled):
		reason = "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		reason = "timeout"
	}
	return &Stopped{Reason: reason, Message: err.Error()}
}

// ContextLabel names a context length as the pages do: floor(tokens ÷
// 1024) followed by K, or the bare number below 1024.
func ContextLabel(tokens int) string {
	if tokens < 1024 {
		return strconv.Itoa(tokens)
	}
	return strconv.Itoa(tokens/1024) + "K"
}

// ContextSize reads a label back as a size for ordering (K = 1024,
// M = 1024²); false when it is not a label.
func ContextSize(label string) (int, bool) {
	mult := 1
	num := label
	switch {
	case strings.HasSuffix(label, "K"):
		mult, num = 1024, strings.TrimSuffix(label, "K")
	case strings.HasSuffix(label, "M"):
		mult, num = 1024*1024, strings.TrimSuffix(label, "M")
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || strconv.Itoa(n) != num {
		return 0, false
	}
	return n * mult, true
}

func contextOrder(a, b string) int {
	x, _ := ContextSize(a)
	y, _ := ContextSize(b)
	return cmp.Or(cmp.Compare(x, y), cmp.Compare(a, b))
}

// Sort orders prefill rows by context and cells by context, then
// concurrency, as the pages list them.
func (m *Matrix) Sort() {
	slices.SortStableFunc(m.Prefill, func(a, b Prefill) int { return contextOrder(a.Context, b.Context) })
	slices.SortStableFunc(m.Cells, func(a, b Cell) int {
		return cmp.Or(contextOrder(a.Context, b.Context), cmp.Compare(a.Concurrency, b.Concurrency))
	})
}

// Contexts lists the sustained decode rows in order.
func (m *Matrix) Contexts() []string {
	var out []string
	for _, c := range m.Cells {
		if !slices.Contains(out, c.Context) {
			out = append(out, c.Context)
		}
	}
	slices.SortStableFunc(out, contextOrder)
	return out
}

// Concurrencies lists the sustained decode columns in order.
func (m *Matrix) Concurrencies() []int {
	var out []int
	for _, c := range m.Cells {
		if !slices.Contains(out, c.Concurrency) {
			out = append(out, c.Concurrency)
		}
	}
	slices.Sort(out)
	return out
}

// Cell returns the cell at (context, concurrency), nil when absent.
func (m *Matrix) Cell(context string, concurrency int) *Cell {
	for i := range m.Cells {
		if m.Cells[i].Context == context && m.Cells[i].Concurrency == concurrency {
			return &m.Cells[i]
		}
	}
	return nil
}

// Counts tallies cells per status.
func (m *Matrix) Counts() map[Status]int {
	out := map[Status]int{}
	for _, c := range m.Cells {
		out[c.Status]++
	}
	return out
}

func (k cellKey) String() string { return fmt.Sprintf("%s c=%d", k.context, k.concurrency) }

type cellKey struct {
	context     string
	concurrency int
}
