package matrix

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// A matrix wrong in many fields at once: every problem is named, in
// document order (the run's fields, then prefill rows, then cells).
func TestMatrixValidationEveryProblemInOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(m *Matrix)
		want []string
	}{
		{"run", func(m *Matrix) {
			m.Schema, m.Source = "vetbench.matrix/v0", "guess"
			m.Finished = m.Started.Add(-time.Second)
			m.Target = receipts.Target{Kind: "cloud", Endpoint: "http://u:p@h:1/"}
			m.Description, m.DurationSeconds, m.MaxOutputTokens = "a\rb", -1, -2
			m.Identity.Digest = "0123456789abcdef"
			m.Stopped = &Stopped{Reason: "tired"}
			m.Prefill[0].Samples = -1
		}, []string{
			`schema: "vetbench.matrix/v0" is not "vetbench.matrix/v1"`,
			`source: unknown source "guess" (want vetbench or published)`,
			"finished_utc: 2026-03-01 09:59:59 +0000 UTC is before started_utc 2026-03-01 10:00:00 +0000 UTC",
			`target.kind: unknown target kind "cloud"`,
			"target.endpoint: not a URL without credentials or query",
			"description: holds a line break; it is one line",
			"duration_seconds: -1 is not a finite number >= 0",
			"max_output_tokens: negative (-2)",
			"identity.digest: 0123456789ab does not match the identity fields (computed 1ccd2d23b907): the matrix was edited",
			`stopped.reason: unknown reason "tired" (want error, canceled or timeout)`,
			"prefill[0].samples: negative (-1)",
		}},
		{"prefill", func(m *Matrix) {
			m.Prefill = append(m.Prefill, Prefill{Context: "8K", ContextTokens: -1, Requests: 0, Status: "odd", Samples: -1, PromptTokens: i(-3), TTFTMs: f(-1), TokS: f(-2)},
				Prefill{Context: "9Q", Requests: 1, Status: Valid}, Prefill{Context: "4K", ContextTokens: 8192, Requests: 1, Status: Looped, TTFTMs: f(1), TokS: f(1)})
			m.Cells[0].Reason = "a valid cell may say why"
		}, []string{
			"prefill[1].context_tokens: negative (-1)",
			"prefill[1].context: 8K again (also prefill[0])",
			"prefill[1].requests_at_once: 0 is below 1",
			`prefill[1].status: unknown status "odd"`,
			"prefill[1].samples: negative (-1)",
			"prefill[1].prompt_tokens: negative (-3)",
			"prefill[1].ttft_ms: -1 is not a finite number >= 0",
			"prefill[1].tok_s: -2 is not a finite number >= 0",
			`prefill[2].context: "9Q" is not a context label such as 8K`,
			"prefill[2].tok_s: missing",
			"prefill[2].ttft_ms: missing",
			`prefill[3].context: "4K", but context_tokens 8192 is labelled 8K`,
			"prefill[3].reason: empty: a Looped cell says why",
		}},
		{"cells", func(m *Matrix) {
			m.Cells[0].Concurrency, m.Cells[0].CompletedRequests, m.Cells[0].OutputTokens = 0, -1, i(-1)
			m.Cells[0].TotalTokS, m.Cells[0].MeasuredSeconds, m.Cells[0].AverageActive = nil, nil, f(-1)
			m.Cells[1].Status, m.Cells[1].Reason, m.Cells[1].ContextTokens = Looped, "", 4096
			m.Cells[2].Serve = &tokens.Serve{Definitions: "mine", Completed: 0, Failed: -1, Duration: -1, P99ITLMs: -2}
			m.Cells = append(m.Cells, m.Cells[3])
		}, []string{
			"cells[0].requests_at_once: 0 is below 1",
			"cells[0].completed_requests: negative (-1)",
			"cells[0].output_tokens: negative (-1)",
			"cells[0].average_active_requests: -1 is not a finite number >= 0",
			"cells[0].total_tok_s: missing",
			"cells[0].measured_seconds: missing",
			`cells[1].context: "8K", but context_tokens 4096 is labelled 4K`,
			"cells[1].reason: empty: a Looped cell says why",
			`cells[2].vllm_bench_serve.definitions: "mine" is not "vllm bench serve calculate_metrics"`,
			"cells[2].vllm_bench_serve: completed 0, failed -1: a block needs a completed request",
			"cells[2].vllm_bench_serve.duration: -1 is not a finite number >= 0",
			"cells[2].vllm_bench_serve.p99_itl_ms: -2 is not a finite number >= 0",
			"cells[4]: cell 123K c=128 again (also cells[3])",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := vetbenchMatrix()
			tc.edit(m)
			var msgs []string
			for _, e := range m.Validate().(interface{ Unwrap() []error }).Unwrap() {
				var se *receipts.SchemaError
				require.True(t, errors.As(e, &se))
				msgs = append(msgs, se.Path+": "+se.Msg)
			}
			require.Equal(t, tc.want, msgs)
		})
	}
}
