package bench_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/fixtures/sets"
	"github.com/vetbench/vetbench/receipts/answers"
	"github.com/vetbench/vetbench/receipts/replay"
	"github.com/vetbench/vetbench/receipts/typevet"
	"github.com/vetbench/vetbench/stub"
)

// A twin replaying typevet's H100 receipt, asked about the synthetic
// stand-ins that carry typevet's item ids, gives back typevet's answers: the
// comparison against typevet's own receipt moves nothing. Only the server
// build differs (the twin's), so identity drift is allowed.
func TestReplayTypevetAnswers(t *testing.T) {
	for _, tc := range []struct{ set, receipt string }{
		{sets.Faces, "face_match_vllm_throughput_full_c16.json"},
		{sets.Signatures, "signature_match_vllm_throughput_full_c16.json"},
		{sets.Checks, "check_match_vllm_throughput_full_c16.json"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			base, err := typevet.ReadFile("../receipts/typevet/testdata/" + tc.receipt)
			require.NoError(t, err)
			recorded, err := replay.FromReceipt(base)
			require.NoError(t, err)
			rp, err := stub.NewReplay(recorded.Source, recorded.Answers)
			require.NoError(t, err)
			set, err := sets.Open(context.Background(), tc.set, sets.Options{TypevetIDs: true})
			require.NoError(t, err)
			sess := inProcess(t, set, testConfig(), stub.Config{Replay: &rp})
			rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 16})
			require.NoError(t, err)

			p := answers.DefaultPolicy()
			p.AllowIdentityDrift = true
			rep, err := answers.Compare(base, rec, p)
			require.NoError(t, err)
			require.Equal(t, len(base.Items), rep.ItemsCompared)
			require.Zero(t, rep.VerdictsMoved.Total(), rep.Failures())
			require.Zero(t, rep.NoulBeyondTolerance)
			require.Less(t, rep.MaxNoulDelta, 1e-9)
			require.True(t, rep.Passed, rep.Failures())
			// The experiment differs in what a twin replaying images it never
			// saw must differ in (target, server build, and for checks the
			// renderer's images), never in model, prompts or scoring.
			require.Contains(t, rep.Identity.Differences, "server_build: 0.30.0 → "+stub.Version)
			for _, d := range rep.Identity.Differences {
				require.Regexp(t, `^(target|server_build|fixture\.slice_sha256|fixture_digests):`, d)
			}
		})
	}
}
