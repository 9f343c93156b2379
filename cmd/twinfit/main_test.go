package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRun: a one-step RTX 3090 fit prints its constants and the figures
// it used; bad input is refused with a message that says what to give.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"-fit", "rtx3090", "-restarts", "1", "-iterations", "1", "-receipt", "../../stub/testdata/token-throughput-rtx3090.json"}, &out, io.Discard))
	require.Contains(t, out.String(), "fit rtx3090-vlm: score")
	require.Contains(t, out.String(), "StepBase: ")
	require.Contains(t, out.String(), "figures used to fit")
	require.Contains(t, out.String(), "one_image_per_request c=32")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "name what to fit"},
		{[]string{"-fit", "all"}, `want hopper, e2b, rtx3090 or h100`},
		{[]string{"-fit", "hopper", "-matrix", "missing.csv"}, "missing.csv"},
		{[]string{"-fit", "rtx3090", "extra"}, "unexpected arguments"},
	} {
		require.ErrorContains(t, run(tc.args, io.Discard, io.Discard), tc.want, tc.args)
	}
}

// TestRunH100: a one-step H100 fit on the signatures set runs typevet's
// sweep, prints the constants, the three signatures receipts it fitted
// figure by figure and the held-out one (c=4) as such; a bad -set is
// refused.
func TestRunH100(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"-fit", "h100", "-set", "signatures", "-restarts", "1", "-iterations", "1",
		"-receipts", "../../stub/testdata/typevet_throughput.json"}, &out, io.Discard))
	s := out.String()
	require.Contains(t, s, "fit h100-gemma4-31b: score")
	require.Contains(t, s, "FrontendTokenize: ")
	require.Contains(t, s, "NumGPUBlocks: ")
	used, held, ok := strings.Cut(s, "held out, not used to fit (predictions): ")
	require.True(t, ok, s)
	for _, k := range []string{"signatures_full_c16", "signatures_full_c32", "signatures_subset_c1 ", "signatures_subset_c16", "signatures_subset_c32"} {
		require.Contains(t, used, k)
	}
	require.NotContains(t, used, "signatures_subset_c4")
	require.NotContains(t, used, "faces_")
	require.Equal(t, "signatures_subset_c4\n", held)
	require.ErrorContains(t, run([]string{"-fit", "h100", "-set", "hands"}, io.Discard, io.Discard), "want checks, faces or signatures")
	require.ErrorContains(t, run([]string{"-fit", "h100", "-receipts", "missing.json"}, io.Discard, io.Discard), "missing.json")
}
