package stub_test

import (
	"net/http"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/grid"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/matrix"
	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// The speed matrix measured on the twin on fake time: the grid runner and
// the twin in one synctest bubble over the in-memory transport, so the
// figures are the model's, whatever the machine is doing.

// gridOn runs the matrix o on a twin of p that wants apiKey ("": none).
func gridOn(t *testing.T, p stub.Profile, o grid.Options, apiKey string) *matrix.Matrix {
	t.Helper()
	s, err := stub.New(stub.Config{Profile: p, DevMode: true, APIKeys: []string{apiKey}})
	require.NoError(t, err)
	defer s.Close()
	ep := bench.Endpoint{BaseURL: twinURL, APIKey: apiKey, Target: receipts.Target{Kind: receipts.TargetInProcess, Profile: p.Name}}
	r, err := grid.NewRunner(t.Context(), ep, grid.WithHTTPClient(&http.Client{Transport: twintest.StreamTransport(s)}))
	require.NoError(t, err)
	r.RunID = "fixed" // the same prompts every run
	if testing.Verbose() {
		r.Log = os.Stderr // a line per row and cell as it ends
	}
	m, err := r.Run(t.Context(), o)
	require.NoError(t, err)
	return m
}

func smallGrid(contexts, levels []int) grid.Options {
	return grid.Options{Contexts: contexts, Levels: levels, Duration: 2 * time.Second, OutputTokens: 2000,
		LoopDetection: true, ScrapeInterval: 250 * time.Millisecond, Hold: time.Second, Pause: -1}
}

// Looped cells come from the model's loop property and the published
// detector, not from a fault: a loop model certain from 2500 tokens of
// context and all but impossible at 1000 ((2/5)^24 ≈ 3e-10 a draw) makes
// the long row Looped and leaves the short one Valid, cell for cell, in
// one run; with speculative decoding and reasoning output on, the Valid
// cells' tokens are counted (several per chunk, most of them reasoning).
func TestMatrixLoopsFromTheModel(t *testing.T) {
	p := stub.ProfileFast()
	p.Speculative = &stub.Speculative{Method: "mtp", NumSpeculativeTokens: 3}
	p.Reasoning = &stub.Reasoning{Parser: "deepseek_v4", ThinkByDefault: true}
	p.Looping = &stub.Looping{Base: 1, BaseContext: 2500, ContextExponent: 24, MinPeriod: 30, MaxPeriod: 90, MinOnset: 50, MaxOnset: 200}
	synctest.Test(t, func(t *testing.T) {
		m := gridOn(t, p, smallGrid([]int{1000, 3000}, []int{1, 4}), "")
		require.Len(t, m.Cells, 4)
		for _, c := range m.Cells {
			want := map[string]matrix.Status{"1000": matrix.Valid, "2K": matrix.Looped}[c.Context]
			require.Equal(t, want, c.Status, "%s c=%d: %s", c.Context, c.Concurrency, c.Reason)
			if c.Status == matrix.Valid {
				require.Positive(t, *c.OutputTokens)
				require.Positive(t, *c.TotalTokS)
			}
		}
	})
}
