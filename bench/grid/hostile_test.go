package grid_test

import (
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

// A server whose cell streams never go quiet and never end (issue 24,
// item 4) fails the cell with the stream's class in its reason, the cell
// ending long before its 20 s ready timeout and its minute's window: the stall timeout (1 min)
// never fires; the deadline is 200 ms + 64 × 5 ms.
func TestHostileStreamsFailTheCell(t *testing.T) {
	t.Parallel()
	for mode, class := range map[string]string{"endless": "(long)", "ping": "(deadline)", "flood": "(long)"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			srv := start(t, tokenstest.Config{TokenDelay: time.Millisecond, GPUBlocks: 100000, BlockSize: 16,
				Hostile: func(q tokenstest.Request) string {
					if q.MaxTokens > 1 { // the cell's streams; calibration and scout are fine
						return mode
					}
					return ""
				}})
			r, err := grid.NewRunner(t.Context(), bench.Endpoint{BaseURL: srv.URL, Target: receipts.Target{Kind: receipts.TargetLive}},
				grid.WithStallTimeout(time.Minute), grid.WithBudget(stream.Budget{TTFT: 200 * time.Millisecond, TPOT: 5 * time.Millisecond}))
			require.NoError(t, err)
			o := quick([]int{1000}, []int{2})
			// "xxxx…" is a loop too; the bound under test is the stream's own.
			// A window of a minute: the failure, not the window, ends it.
			o.OutputTokens, o.NoPrefill, o.LoopDetection, o.Duration = 64, true, false, time.Minute
			m, err := r.Run(t.Context(), o)
			require.NoError(t, err)
			c := m.Cell("1000", 2)
			require.Equal(t, matrix.Failed, c.Status, c.Reason)
			require.Contains(t, c.Reason, class)
		})
	}
}

// TestHostileModelNameKeepsTheMatrix: a served model whose name holds a
// line break, a carriage return or a terminal escape (a hostile
// /v1/models) went raw into the matrix's one-line description, which the
// matrix's own check then refused at the end of the run: 'write matrix:
// description: holds a line break', exit 2, every cell measured lost.
// The description names the model escaped; the identity keeps it as
// served.
func TestHostileModelNameKeepsTheMatrix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, root, shown string }{
		{"line break", "org/evil\nfake line", `org/evil\nfake line`},
		{"carriage return and escape", "org/evil\r\x1b[31mRED\u202e", `org/evil\r\x1b[31mRED\u202e`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := start(t, tokenstest.Config{TokenDelay: 2 * time.Millisecond, GPUBlocks: 100000, BlockSize: 16, Root: tc.root})
			m, err := runner(t, srv).Run(t.Context(), quick([]int{1000}, []int{1}))
			require.NoError(t, err)
			require.Equal(t, tc.root, m.Identity.Model, "the identity is the server's own")
			require.Contains(t, m.Description, " on "+tc.shown+":")
			_, err = matrix.Marshal(m)
			require.NoError(t, err, "the matrix validates and can be written")
		})
	}
}
