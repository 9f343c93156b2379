package stub

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/fixtures/checks"
	"github.com/vetbench/vetbench/judgments"
)

// calibrationTimeScale is how much faster than real time the calibration
// runs the H100 profile. Client latencies are measured in wall seconds and
// multiplied by it (rates divided); the server's histograms are already in
// model seconds.
const calibrationTimeScale = 10

// calibrationTolerance is the profile's promise: every figure within ±15%
// of the receipt it was fitted to.
const calibrationTolerance = 0.15

// figures are the five throughput figures the profile is calibrated on.
type figures struct {
	JPS, P50, P95, HitRate, QueueMean float64
}

func receiptFigures(tp typevetThroughput) figures {
	return figures{tp.JudgmentsPerSecond, tp.Latency.P50, tp.Latency.P95, tp.Server.HitRate, tp.Server.Queue.Sum / tp.Server.Queue.Count}
}

// compareFigures prints got next to want and returns the figures outside
// the tolerance.
func compareFigures(t *testing.T, label string, got, want figures) []string {
	t.Helper()
	rows := []struct {
		name      string
		got, want float64
	}{
		{"judgments/s", got.JPS, want.JPS},
		{"p50 latency s", got.P50, want.P50},
		{"p95 latency s", got.P95, want.P95},
		{"prefix hit rate", got.HitRate, want.HitRate},
		{"queue time s", got.QueueMean, want.QueueMean},
	}
	var bad []string
	for _, r := range rows {
		rel := (r.got - r.want) / r.want
		mark := ""
		if math.Abs(rel) > calibrationTolerance || math.IsNaN(rel) {
			mark = "  <-- outside ±15%"
			bad = append(bad, fmt.Sprintf("%s %s: twin %.4g, receipt %.4g (%+.1f%%)", label, r.name, r.got, r.want, 100*rel))
		}
		t.Logf("%-14s %-16s twin %10.4g  receipt %10.4g  %+6.1f%%%s", label, r.name, r.got, r.want, 100*rel, mark)
	}
	return bad
}

// TestCalibrationChecksHTTP runs the H100 profile, time-scaled, on the
// full checks set with typevet's client behaviour (closed loop, per
// judgment tokenize calls, questions one after another) at c=16 then c=32
// on one server, after an unmeasured run of typevet's 63-case subset (its
// sweep ran that first, warming the multimodal cache), and compares the
// five figures with the receipts check_match_vllm_throughput_full_c16/c32.
func TestCalibrationChecksHTTP(t *testing.T) {
	set := compactChecks(t)
	rec := loadTypevetThroughput(t)
	ctx := t.Context()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	allowance := measureLoopback(t, hc, 16)
	rs, err := Start(WithProfile(ProfileH100Gemma4()), WithTimeScale(calibrationTimeScale), WithTransportAllowance(allowance))
	require.NoError(t, err)
	defer rs.Close()
	cl := judgments.NewClient(rs.URL(), judgments.WithModel(rs.Model()), judgments.WithHTTPClient(hc))

	warmFirstQuestion(ctx, t, cl, set.Cases[:63], set.Spec)
	var bad []string
	for _, c := range []int{16, 32} {
		before := scrapeMetrics(ctx, t, rs.URL())
		res := closedLoop(ctx, t, cl, set, c, true)
		after := scrapeMetrics(ctx, t, rs.URL())
		got := httpFigures(res, before, after, calibrationTimeScale)
		want := receiptFigures(rec[fmt.Sprintf("checks_full_c%d", c)].Throughput)
		t.Logf("checks c=%d: %.2fs wall at time scale %d", c, res.Wall, calibrationTimeScale)
		bad = append(bad, compareFigures(t, fmt.Sprintf("checks c=%d", c), got, want)...)
	}
	require.Empty(t, bad, "the h100 profile no longer reproduces typevet's checks receipts")
}

// compactChecks is fixtures/checks' set (its cases, questions and state
// text, so the prompts are the generator's, token for token) with each
// rendered check replaced by a distinct compact PNG of the same 1000×440
// size. The twin reads only an image's size and digest, and on two cores
// JSON-encoding the rendered 87 KB checks would make the client, not the
// profile, set the pace of a time-scaled run.
func compactChecks(t testing.TB) fixtures.Set {
	t.Helper()
	cases, err := checks.Cases(0, checks.DefaultRows)
	require.NoError(t, err)
	set := fixtures.Set{Name: "checks", Spec: checks.Spec(), Verdict: checks.Verdict, CannotTell: checks.CannotTell}
	for i, c := range cases {
		set.Cases = append(set.Cases, fixtures.Case{Group: string(c.Variant), Item: judgments.Item{
			ID: c.ID(), State: fmt.Sprintf(checks.State, c.Row.Text()), Images: []judgments.Image{pngImage(t, 1000, 440, i)},
		}})
	}
	return set
}

// measureLoopback is what the transport adds to every request, measured
// with as many workers as the run will have.
func measureLoopback(t *testing.T, hc *http.Client, workers int) time.Duration {
	t.Helper()
	d, err := MeasureTransport(t.Context(), hc, 20*workers, workers)
	require.NoError(t, err)
	t.Logf("loopback transport with %d workers: %s per request (taken out of the modelled round trip)", workers, d)
	return d
}

// warmFirstQuestion asks the first question of each case, 32 at a time:
// the cheap stand-in for typevet's subset sweep that ran before its
// full-set receipts (it leaves the multimodal cache holding the subset's
// images). The simulator's warm does the same.
func warmFirstQuestion(ctx context.Context, t *testing.T, cl *judgments.Client, cases []fixtures.Case, spec judgments.Spec) {
	t.Helper()
	first := judgments.Spec{Name: spec.Name, Questions: spec.Questions[:1]}
	set := fixtures.Set{Spec: first, Cases: cases}
	closedLoop(ctx, t, cl, set, 32, false)
}

// httpFigures converts a wall-clock run of a time-scaled twin into model
// figures: rates divided by the scale, latencies multiplied; the server's
// own figures come from /metrics deltas (already model seconds).
func httpFigures(res loopResult, before, after scrape, scale float64) figures {
	d := func(name string) float64 { return after.value(name) - before.value(name) }
	qc1, qs1 := before.hist("vllm:request_queue_time_seconds")
	qc2, qs2 := after.hist("vllm:request_queue_time_seconds")
	return figures{
		JPS:       float64(len(res.Latencies)) / (res.Wall * scale),
		P50:       nearestRank(res.Latencies, 0.50) * scale,
		P95:       nearestRank(res.Latencies, 0.95) * scale,
		HitRate:   d("vllm:prefix_cache_hits_total") / d("vllm:prefix_cache_queries_total"),
		QueueMean: (qs2 - qs1) / (qc2 - qc1),
	}
}
