package stub

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// fixedTime is the _created time of simulated metrics.
var fixedTime = time.Date(2026, 9, 30, 19, 0, 0, 0, time.UTC)

// typevetThroughput is one receipt's throughput block (the fields the
// calibration reads).
type typevetThroughput struct {
	Concurrency        int     `json:"concurrency"`
	WallSeconds        float64 `json:"wall_seconds"`
	Judgments          int     `json:"judgments"`
	JudgmentsPerSecond float64 `json:"judgments_per_second"`
	Latency            struct {
		P50 float64 `json:"p50"`
		P95 float64 `json:"p95"`
	} `json:"latency_seconds"`
	Server struct {
		Queue   struct{ Count, Sum float64 } `json:"queue"`
		Prefill struct{ Count, Sum float64 } `json:"prefill"`
		E2E     struct{ Count, Sum float64 } `json:"e2e"`
		HitRate float64                      `json:"prefix_cache_hit_rate"`
		Counter map[string]float64           `json:"counters"`
	} `json:"server"`
}

// typevetReceipt names one receipt's file and set.
type typevetReceipt struct {
	File       string            `json:"file"`
	Set        string            `json:"set"`
	Throughput typevetThroughput `json:"throughput"`
}

// loadTypevetThroughput reads testdata/typevet_throughput.json (copied from
// typevet's receipts).
func loadTypevetThroughput(t testing.TB) map[string]typevetReceipt {
	t.Helper()
	data, err := os.ReadFile("testdata/typevet_throughput.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Receipts map[string]typevetReceipt `json:"receipts"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("testdata/typevet_throughput.json: %v", err)
	}
	return doc.Receipts
}
