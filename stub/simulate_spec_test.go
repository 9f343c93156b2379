package stub

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSimulationCountsEveryVerifiedToken: a verified step yields 1 +
// accepted drafts tokens, and the simulation counts each, as a client
// counts usage.completion_tokens: the token-throughput method verifies
// every output token, and the matrix's time between tokens is the
// step's over the tokens it yields (the mean acceptance length), not the
// step's. Counting a step as one token (the bug this guards) gave a
// DeepSeek-V4-Flash 8K c=1 cell 98.9 tok/s at 10.1 ms between tokens
// against the published 244.6 at 4.1.
func TestSimulationCountsEveryVerifiedToken(t *testing.T) {
	plain := ProfileE2BH200NVL()
	spec := ProfileE2BH200NVL()
	spec.SetSpeculative(Speculative{Method: "mtp", NumSpeculativeTokens: 3, Acceptance: []float64{0.8, 0.8, 0.8}})
	require.NoError(t, spec.Validate())

	run := TokensRun{PromptTokens: 32, Output: 128, Repeats: 2}
	g := SimulateTokens(spec, run, "text", 4)
	require.Equal(t, run.Repeats*4*run.Output, g.VerifiedTokens, "every verified token counted")

	m := MatrixRun{Contexts: []int{8192}, Levels: []int{1}, MaxTokens: 4096, Duration: 10}
	p, _ := SimulateMatrix(plain, m)
	s, _ := SimulateMatrix(spec, m)
	a, b := p[[2]int{8192, 1}], s[[2]int{8192, 1}]
	mal := spec.Speculative.MeanAcceptanceLength()
	t.Logf("8K c=1: plain %.1f tok/s, %.3f ms between tokens; 3 drafts at 0.8 (%.2f tokens a step) %.1f tok/s, %.3f ms",
		a.TotalTokS, 1e3*a.ITL, mal, b.TotalTokS, 1e3*b.ITL)
	// the step the model prices for a verify of 1 + 3 tokens (drafter's
	// passes included), at the window's mean context, over its yield
	verify := spec.Physical.model().seconds(&step{entries: []stepEntry{{from: 8192 + 2048, n: 4, drafts: 3}}})
	t.Logf("a verify step %.3f ms, over %.2f tokens %.3f ms", 1e3*verify, mal, 1e3*verify/mal)
	require.InEpsilon(t, verify/mal, b.ITL, 0.1, "time between tokens is the verify step's over its yield")
	require.InEpsilon(t, 1/b.ITL, b.TotalTokS, 0.1, "and the window counts every token")
	require.Greater(t, b.TotalTokS, 2*a.TotalTokS, "speculation at 0.8 more than doubles a c=1 stream")
}
