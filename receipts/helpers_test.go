package receipts_test

import (
	"bytes"
	"encoding/json"
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
	qSame    = judgments.NewNoul("same", "Same?", "yes", "no")
	qVerdict = judgments.NewChoice("verdict", "Pick one:", judgments.Option{Label: "a"}, judgments.Option{Label: "b"}, judgments.Option{Label: "c"})
	qQuality = judgments.NewScore("quality", "Rate:", "0", "1", "2", "3", "4")
)

func decide(t testing.TB, q judgments.Question, lps ...float64) judgments.Answer {
	t.Helper()
	a, err := judgments.Decide(q, lps)
	require.NoError(t, err)
	return a
}

// noul builds a Noul answer with P(true) = p exactly.
func noul(t testing.TB, p float64) judgments.Answer {
	return decide(t, qSame, math.Log(1-p), math.Log(p))
}

// choice builds a Choice answer with the given probabilities of a, b, c.
func choice(t testing.TB, pa, pb, pc float64) judgments.Answer {
	return decide(t, qVerdict, math.Log(pa), math.Log(pb), math.Log(pc))
}

func score(t testing.TB, ps ...float64) judgments.Answer {
	lps := make([]float64, len(ps))
	for i, p := range ps {
		lps[i] = math.Log(p)
	}
	return decide(t, qQuality, lps...)
}

// sample is a valid vetbench receipt of four items.
func sample(t testing.TB) *receipts.Receipt {
	t.Helper()
	start := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	spec := judgments.Spec{Name: "toy", Questions: []judgments.Question{qSame, qVerdict, qQuality}}
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
		{noul(t, 0.98), choice(t, 0.9, 0.07, 0.03), score(t, 0.01, 0.01, 0.03, 0.15, 0.8)},
		// i1: the Choice is a near tie (margin 0.04).
		{noul(t, 0.2), choice(t, 0.49, 0.45, 0.06), score(t, 0.05, 0.05, 0.6, 0.2, 0.1)},
		// i2: Noul just above one half.
		{noul(t, 0.6), choice(t, 0.1, 0.1, 0.8), score(t, 0.2, 0.2, 0.2, 0.2, 0.2)},
		{noul(t, 0.01), choice(t, 0.05, 0.9, 0.05), score(t, 0.7, 0.1, 0.1, 0.05, 0.05)},
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

// encode writes r with Write and returns the bytes.
func encode(t testing.TB, r *receipts.Receipt) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, receipts.Write(&b, r))
	return b.Bytes()
}

// tree turns receipt bytes into a generic map to break on purpose.
func tree(t testing.TB, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

func untree(t testing.TB, m map[string]any) []byte {
	t.Helper()
	data, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	return data
}

// at walks a generic tree by keys and indexes.
func at(m any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m = m.(map[string]any)[k]
		case int:
			m = m.([]any)[k]
		}
	}
	return m
}
