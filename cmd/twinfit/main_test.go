package main

import (
	"bytes"
	"io"
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
		{[]string{"-fit", "all"}, `want hopper, e2b or rtx3090`},
		{[]string{"-fit", "hopper", "-matrix", "missing.csv"}, "missing.csv"},
		{[]string{"-fit", "rtx3090", "extra"}, "unexpected arguments"},
	} {
		require.ErrorContains(t, run(tc.args, io.Discard, io.Discard), tc.want, tc.args)
	}
}
