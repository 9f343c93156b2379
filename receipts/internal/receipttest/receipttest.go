// Package receipttest builds the small, valid receipt the tests of
// receipts and the packages below it share, through the real judgments
// code path, so each package does not keep its own copy.
package receipttest

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// The test set: a Noul, a three-way Choice and a five-level Score, asked
// through the real judgments code path (Decide) so answers are shaped as
// the runner makes them.
var (
	QSame    = judgments.NewNoul("same", "Same?", "yes", "no")
	QVerdict = judgments.NewChoice("verdict", "Pick one:", judgments.Option{Label: "a"}, judgments.Option{Label: "b"}, judgments.Option{Label: "c"})
	QQuality = judgments.NewScore("quality", "Rate:", "0", "1", "2", "3", "4")
)

// Decide answers q from its candidates' logprobs, as the runner does.
func Decide(t testing.TB, q judgments.Question, lps ...float64) judgments.Answer {
	t.Helper()
	a, err := judgments.Decide(q, lps)
	require.NoError(t, err)
	return a
}

// Noul builds a Noul answer with P(true) = p exactly.
func Noul(t testing.TB, p float64) judgments.Answer {
	return Decide(t, QSame, math.Log(1-p), math.Log(p))
}

// Choice builds a Choice answer with the given probabilities of a, b, c.
func Choice(t testing.TB, pa, pb, pc float64) judgments.Answer {
	return Decide(t, QVerdict, math.Log(pa), math.Log(pb), math.Log(pc))
}

// Score builds a Score answer with the given probabilities of levels 0–4.
func Score(t testing.TB, ps ...float64) judgments.Answer {
	lps := make([]float64, len(ps))
	for i, p := range ps {
		lps[i] = math.Log(p)
	}
	return Decide(t, QQuality, lps...)
}

// Sample is a valid vetbench receipt of four items.
func Sample(t testing.TB) *receipts.Receipt {
	t.Helper()
	start := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	spec := judgments.Spec{Name: "toy", Questions: []judgments.Question{QSame, QVerdict, QQuality}}
	r := &receipts.Receipt{
		Schema:   receipts.Schema,
		Source:   receipts.SourceVetbench,
		Set:      "toy",
		RunID:    "run-1",
		Started:  start,
		Finished: start.Add(10 * time.Second),
		Target:   receipts.Target{Kind: receipts.TargetInProcess, Endpoint: "http://127.0.0.1:4321", Profile: "h100"},
		Pins: receipts.Pins{
			Model:       "google/gemma-4-31B-it",
			Served:      []receipts.ServedModel{{ID: "google/gemma-4-31B-it", Root: "google/gemma-4-31B-it", MaxModelLen: 8192}},
			ServerBuild: "0.30.0",
			ScoringMode: string(judgments.ModeTokenIDs),
			Controls:    map[string]int{"0": 236771, "1": 236770, "2": 236769, "3": 236768, "4": 236767},
			Concurrency: 4,
			Fixture:     receipts.FixturePins{Dataset: "toy", Source: "synthetic", Seed: 7, Items: 4, SliceSHA256: strings.Repeat("ab", 32)},
		},
		Identity: receipts.Identity{
			PromptDigests:  spec.PromptDigests(),
			FixtureDigests: map[string]string{"i0": strings.Repeat("01", 32), "i1": strings.Repeat("02", 32), "i2": strings.Repeat("03", 32), "i3": strings.Repeat("04", 32)},
			HarnessVersion: "vetbench/test",
		},
		Throughput: receipts.Throughput{
			Concurrency: 4, WallSeconds: 10, Judgments: 4, Images: 4, Requests: 12,
			JudgmentsPerSecond: 0.4, ImagesPerSecond: 0.4, PromptTokens: 4000,
			Latency: receipts.Latency{N: 4, Mean: 1.5, P50: 1.4, P95: 2.0, P99: 2.0},
		},
		Server: &receipts.Server{Status: "ok", Counters: map[string]float64{"request_success": 12}},
	}
	answers := [][]judgments.Answer{
		// i0: confident everywhere.
		{Noul(t, 0.98), Choice(t, 0.9, 0.07, 0.03), Score(t, 0.01, 0.01, 0.03, 0.15, 0.8)},
		// i1: the Choice is a near tie (margin 0.04).
		{Noul(t, 0.2), Choice(t, 0.49, 0.45, 0.06), Score(t, 0.05, 0.05, 0.6, 0.2, 0.1)},
		// i2: Noul just above one half.
		{Noul(t, 0.6), Choice(t, 0.1, 0.1, 0.8), Score(t, 0.2, 0.2, 0.2, 0.2, 0.2)},
		{Noul(t, 0.01), Choice(t, 0.05, 0.9, 0.05), Score(t, 0.7, 0.1, 0.1, 0.05, 0.05)},
	}
	for i, as := range answers {
		id := "i" + string(rune('0'+i))
		r.Items = append(r.Items, receipts.Item{
			ID: id, Group: "g", Gold: map[string][]string{"verdict": {"a"}},
			Answers: as, LatencySeconds: 1 + float64(i)/4, InputTokens: 1000,
		})
	}
	require.NoError(t, r.Validate())
	return r
}
