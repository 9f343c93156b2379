package tokens

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

// slower is a twin-like candidate of a published point: every run takes
// factor times as long, with request samples.
func slower(t *testing.T, base *Receipt, factor float64) *Receipt {
	t.Helper()
	pt := base.Point
	var runs []Run
	for _, br := range base.Runs {
		wall := br.WallSeconds * factor
		var reqs []Request
		for i := range pt.Concurrency {
			reqs = append(reqs, Request{
				ID: fmt.Sprintf("r%d", i), PromptTokens: 30, OutputTokens: pt.OutputTokens,
				FirstTextSeconds: f64(0.05), TimeBetweenTokensSeconds: f64((wall - 0.05) / float64(pt.OutputTokens-1)), E2ESeconds: wall,
				TTFTSeconds: f64(0.05), ITLSeconds: gaps(pt.OutputTokens-1, (wall-0.05)/float64(pt.OutputTokens-1)), LatencySeconds: wall,
			})
		}
		runs = append(runs, NewRun(pt, wall, reqs))
	}
	r := &Receipt{
		Schema: Schema, Source: SourceVetbench,
		Target:   receipts.Target{Kind: receipts.TargetInProcess, Profile: "rtx3090"},
		Identity: Identity{ServerBuild: "vetbench-twin", GPU: base.Identity.GPU, Sampling: "temperature=0 ignore_eos=true"},
		Point:    pt, Runs: runs, Summary: Summarize(pt, runs),
	}
	require.NoError(t, r.Validate())
	return r
}

func TestComparePublishedWithACandidate(t *testing.T) {
	t.Parallel()
	base, err := ReadPublishedFile(publishedPath)
	require.NoError(t, err)
	var cand []*Receipt
	for _, b := range base[:len(base)-1] { // the candidate lacks the last point
		cand = append(cand, slower(t, b, 1.25))
	}
	c, err := Compare(base, cand)
	require.NoError(t, err)
	require.Len(t, c.Points, 9)
	require.Equal(t, []Key{base[9].Key()}, c.OnlyBase)
	require.Empty(t, c.OnlyCand)
	for _, p := range c.Points {
		agg, _ := p.Figure("aggregate_output_tok_s")
		require.InDelta(t, 1/1.25-1, agg.Delta.Rel, 1e-9, "%s", p.Key)
		per, _ := p.Figure("per_request_output_tok_s")
		require.InDelta(t, 1/1.25-1, per.Delta.Rel, 1e-9)
		batch, _ := p.Figure("mean_batch_ms_per_token")
		require.InDelta(t, 0.25, batch.Delta.Rel, 1e-9)
		_, has := p.Figure("median_ttft_ms")
		require.False(t, has, "the published format has no vllm bench serve figures: none compared")
		require.Equal(t, []string{DefinitionsReceipt}, p.BaseDefinitions)
		require.Equal(t, []string{"target: live → twin", "server_build: " + base[0].Identity.ServerBuild + " → vetbench-twin"}, p.IdentityDiff)
		require.Contains(t, p.Unverified, "profile")
		require.Contains(t, p.Unverified, "sampling")
	}
	text := c.Text()
	first := fmt.Sprintf("%.2f → %.2f (-20.0%%)", base[0].Summary.AggregateOutputTokS, base[0].Summary.AggregateOutputTokS/1.25)
	require.Contains(t, text, first)
	require.Contains(t, text, "identity differs: target: live → twin\n", "shared notes are printed once")
	require.Contains(t, text, "only in baseline: workload=one_image/c=32/output=128")
	lines := strings.Split(strings.TrimSpace(text), "\n")
	require.True(t, strings.HasPrefix(lines[0], "point"))
	require.True(t, strings.HasPrefix(lines[1], "workload=one_image/c=1/"), "points sorted by workload, then c: %q", lines[1])
	v := c.Verdict(0.05)
	require.Equal(t, CouldNotCompare, v.Outcome, "a missing point and a differing identity: no verdict")
}

func TestComparePointFlagsProblemsAndRefusesOtherPoints(t *testing.T) {
	t.Parallel()
	a, b := sample(), sample()
	b.Runs[0].WallSeconds *= 2
	b.Runs[0] = NewRun(b.Point, b.Runs[0].WallSeconds, b.Runs[0].Requests)
	b.Summary = Summarize(b.Point, b.Runs)
	pc, err := ComparePoint(a, b)
	require.NoError(t, err)
	agg, _ := pc.Figure("aggregate_output_tok_s")
	require.Less(t, agg.Delta.Rel, 0.0)
	_, has := pc.Figure("median_ttft_ms")
	require.True(t, has, "both sides hold vllm bench serve figures")
	require.Contains(t, pc.Problems, "baseline: 1 of 4 requests failed, 0 short")
	require.Empty(t, pc.IdentityDiff)

	// A receipt written by someone else is quoted escaped: its ESC and CR
	// would redraw the terminal compare prints to.
	b.Stopped = &Stopped{Reason: "error", Message: "boom\x1b[2J\rPASS", Runs: 1}
	pc, err = ComparePoint(a, b)
	require.NoError(t, err)
	require.Contains(t, pc.Problems, `candidate: stopped after 1 of 2 repeats (error: boom\x1b[2J\rPASS)`)

	other := sample()
	other.Point.Concurrency = 4
	_, err = ComparePoint(a, other)
	require.ErrorContains(t, err, "different points")
	_, err = Compare([]*Receipt{a, sample()}, nil)
	require.ErrorContains(t, err, "twice")
}

// Reading the published receipt and comparing it with a run is one call
// each.
func ExampleCompare() {
	base, err := ReadPublishedFile("testdata/token-throughput-rtx3090.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	// A candidate: here the baseline's first point itself.
	c, err := Compare(base, base[:1])
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = c.WriteText(os.Stdout)
	// Output:
	// point                         figure                    definitions                         baseline → candidate
	// workload=text/c=1/output=128  aggregate_output_tok_s    published token-throughput receipt  156.58 → 156.58 (+0.0%)
	// workload=text/c=1/output=128  per_request_output_tok_s  published token-throughput receipt  156.58 → 156.58 (+0.0%)
	// workload=text/c=1/output=128  mean_batch_ms_per_token   published token-throughput receipt  6.39 → 6.39 (+0.0%)
	// only in baseline: workload=one_image/c=1/output=128
	// only in baseline: workload=one_image/c=4/output=128
	// only in baseline: workload=one_image/c=8/output=128
	// only in baseline: workload=one_image/c=16/output=128
	// only in baseline: workload=one_image/c=32/output=128
	// only in baseline: workload=text/c=4/output=128
	// only in baseline: workload=text/c=8/output=128
	// only in baseline: workload=text/c=16/output=128
	// only in baseline: workload=text/c=32/output=128
}

// TestCompareSaysTwinFellBehind: a side whose twin fell behind its model
// is named on the point and, when the verdict is worse, in its reasons;
// the outcome is the figures'. Other warnings stay out; without the
// warning no such reason (the control).
func TestCompareSaysTwinFellBehind(t *testing.T) {
	t.Parallel()
	pub, err := ReadPublishedFile(publishedPath)
	require.NoError(t, err)
	base := slower(t, pub[0], 1)
	slow := func(warnings ...string) *Receipt {
		r := slower(t, pub[0], 1.25)
		r.Warnings = warnings
		return r
	}
	behind := receipts.TwinBehind + ": responses' first tokens left it 6.5 ms (model time) late on average"
	c, err := Compare([]*Receipt{base}, []*Receipt{slow("repeat 1: Little's law: idle", behind)})
	require.NoError(t, err)
	require.Equal(t, []string{"candidate: " + behind}, c.Points[0].FellBehind)
	v := c.Judge(0.05)
	require.Equal(t, Worse, v.Outcome)
	require.Contains(t, v.Reasons[len(v.Reasons)-1], "the candidate's twin fell behind its model: part of the difference may be the machine")
	require.Contains(t, c.Text(), "warning ("+c.Points[0].Key.String()+"): candidate: "+behind)

	c, err = Compare([]*Receipt{base}, []*Receipt{slow("repeat 1: Little's law: idle")})
	require.NoError(t, err)
	require.Empty(t, c.Points[0].FellBehind)
	v = c.Judge(0.05)
	require.Equal(t, Worse, v.Outcome)
	for _, r := range v.Reasons {
		require.NotContains(t, r, "fell behind")
	}
}

// TestComparePointWithAPointStoppedBeforeARun: a point interrupted before
// its first repeat (Ctrl-C in the warm-up) has a receipt with no runs and
// so no mean_batch_ms_per_token; compared with a whole point it is a
// problem of its side, never a panic on the figure it lacks.
func TestComparePointWithAPointStoppedBeforeARun(t *testing.T) {
	t.Parallel()
	whole := func() *Receipt {
		r := sample()
		r.Runs[1] = NewRun(r.Point, 2.0, []Request{ok("r2-0", 0.3, 0.2, 1.0, 4), ok("r2-1", 0.3, 0.2, 1.0, 4)})
		r.Summary = Summarize(r.Point, r.Runs)
		return r
	}
	stopped := func() *Receipt {
		r := sample()
		r.Runs, r.Summary = nil, Summarize(r.Point, nil)
		r.Stopped = &Stopped{Reason: "canceled", Message: "warm-up 1: run of 2: context canceled"}
		return r
	}
	for _, tc := range []struct {
		name         string
		base, cand   *Receipt
		want, reason string
	}{
		{"candidate stopped", whole(), stopped(), Worse, "candidate: no mean_batch_ms_per_token"},
		{"baseline stopped", stopped(), whole(), CouldNotCompare, "baseline: stopped after 0 of 2 repeats"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compare([]*Receipt{tc.base}, []*Receipt{tc.cand})
			require.NoError(t, err)
			v := c.Verdict(0.05)
			require.Equal(t, tc.want, v.Outcome, "%v", v.Reasons)
			require.Contains(t, strings.Join(v.Reasons, "\n"), tc.reason)
		})
	}
}
