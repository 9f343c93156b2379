package stub

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/vetbench/vetbench/receipts/roofline"
)

// The two published results the decode profiles reproduce, copied into
// testdata from ../shared/reference/speed: the gemma-4-E2B-it H200 NVL
// speed matrix (llm-inference-bench pages) and the RTX 3090 token-throughput
// receipt.

// publishedCell is one row of the matrix CSV.
type publishedCell struct {
	Phase             string
	Context, C        int
	Status            string
	TotalTokS         float64
	PerRequestTokS    float64
	TTFT, ITL         float64 // seconds
	AvgActive         float64
	Completed, Output int
}

// contextTokens is a page's context label in prompt tokens: powers of two
// of 1024, and "123K" = 131072 − 4096 − 64 (lil-bench trims 128K to fit
// max_model_len with 4096 output tokens, method.md §3).
var contextTokens = map[string]int{"8K": 8192, "16K": 16384, "32K": 32768, "64K": 65536, "123K": 126912,
	"128K": 131008} // the 128K prefill row: min(131072, max_model_len − 64)

func loadE2BMatrix(t testing.TB) (decode map[[2]int]publishedCell, prefill map[int]publishedCell) {
	t.Helper()
	f, err := os.Open("testdata/speed-matrix-gemma-4-E2B-h200nvl.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	num := func(s string) float64 {
		s = strings.TrimSpace(strings.ReplaceAll(s, ",", ""))
		if s == "—" || s == "" {
			return math.NaN()
		}
		mult := 1.0
		switch {
		case strings.HasSuffix(s, " ms"):
			s, mult = strings.TrimSuffix(s, " ms"), 1e-3
		case strings.HasSuffix(s, " s"):
			s = strings.TrimSuffix(s, " s")
		case strings.HasSuffix(s, "K"):
			s, mult = strings.TrimSuffix(s, "K"), 1e3
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("matrix CSV: %q: %v", s, err)
		}
		return v * mult
	}
	decode, prefill = map[[2]int]publishedCell{}, map[int]publishedCell{}
	for _, row := range rows[1:] {
		ctx, ok := contextTokens[row[1]]
		if !ok {
			t.Fatalf("matrix CSV: context %q", row[1])
		}
		c := publishedCell{Phase: row[0], Context: ctx, C: int(num(row[2])), Status: row[3], TotalTokS: num(row[4]),
			PerRequestTokS: num(row[5]), TTFT: num(row[6]), ITL: num(row[7]), AvgActive: num(row[8])}
		if v := num(row[9]); !math.IsNaN(v) {
			c.Completed = int(v)
		}
		if v := num(row[10]); !math.IsNaN(v) {
			c.Output = int(v)
		}
		if c.Phase == "Prefill" {
			prefill[ctx] = c
		} else {
			decode[[2]int{ctx, c.C}] = c
		}
	}
	return decode, prefill
}

// rtx3090Receipt is the published token-throughput receipt.
type rtx3090Receipt struct {
	Profile struct {
		MaxModelLen          int     `json:"max_model_len"`
		MaxNumSeqs           int     `json:"max_num_seqs"`
		MaxNumBatchedTokens  int     `json:"max_num_batched_tokens"`
		GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
		PrefixCaching        bool    `json:"prefix_caching"`
	} `json:"profile"`
	Records []struct {
		Workload         string  `json:"workload"`
		Concurrency      int     `json:"concurrency"`
		Repeats          int     `json:"repeats"`
		OutputPerRequest int     `json:"output_tokens_per_request"`
		Verified         int     `json:"total_verified_output_tokens"`
		Aggregate        float64 `json:"aggregate_output_tok_s"`
		PerRequest       float64 `json:"per_request_output_tok_s"`
		MeanCompletion   float64 `json:"mean_completion_seconds"`
	} `json:"records"`
}

func loadRTX3090(t testing.TB) rtx3090Receipt {
	t.Helper()
	b, err := os.ReadFile("testdata/token-throughput-rtx3090.json")
	if err != nil {
		t.Fatal(err)
	}
	var r rtx3090Receipt
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("token-throughput-rtx3090.json: %v", err)
	}
	return r
}

// e2bConfig is gemma-4-E2B-it's config (receipts/roofline's testdata).
func e2bConfig(t testing.TB) *roofline.Config {
	t.Helper()
	c, err := roofline.ReadConfig("../receipts/roofline/testdata/gemma-4-e2b-it.json")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// e2bServe is the published run's vllm serve flags (the CSV's header):
// --max-model-len 131072 --gpu-memory-utilization 0.854015
// --limit-mm-per-prompt {"image":4,"audio":1}; the rest vLLM's defaults
// for a large GPU (max_num_batched_tokens 8192, max_num_seqs 1024).
var e2bServe = ServeFlags{MaxModelLen: 131072, GPUMemoryUtilization: 0.854015, MaxNumBatchedTokens: 8192, MaxNumSeqs: 1024, LimitImages: 4}

// e2bProfile is ProfileE2BH200NVL with other efficiency constants.
func e2bProfile(t testing.TB, eff Efficiency) Profile {
	t.Helper()
	hw, err := roofline.LookupGPU("h200-nvl")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ProfilePhysical("gemma-4-E2B-it", e2bConfig(t), roofline.Dtypes{}, hw, eff, e2bServe)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// e2bMatrixRun is the published method: contexts 8K–123K, levels 1–128,
// 4096 output tokens, 30 s windows, a 128K prefill-only context.
var e2bMatrixRun = matrixRun{
	Contexts:    []int{8192, 16384, 32768, 65536, 126912},
	Levels:      []int{1, 2, 4, 8, 16, 32, 64, 128},
	MaxTokens:   4096,
	Duration:    30,
	PrefillOnly: []int{131008},
}

// relErr is got/want − 1.
func relErr(got, want float64) float64 { return got/want - 1 }

func pct(x float64) string { return fmt.Sprintf("%+6.1f%%", 100*x) }
