package stub

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/receipts/roofline"
)

// The two published results the decode profiles reproduce, copied into
// stub/testdata from ../shared/reference/speed: the gemma-4-E2B-it H200 NVL
// speed matrix (llm-inference-bench pages) and the RTX 3090 token-throughput
// receipt. The twin's tests and cmd/twinfit read them.

// E2BMatrixFile and RTX3090File are the published results' paths from the
// module root.
const (
	E2BMatrixFile = "stub/testdata/speed-matrix-gemma-4-E2B-h200nvl.csv"
	RTX3090File   = "stub/testdata/token-throughput-rtx3090.json"
)

// PublishedCell is one row of the E2B matrix CSV.
type PublishedCell struct {
	Phase             string
	Context, C        int
	Status            string
	TotalTokS         float64
	PerRequestTokS    float64
	TTFT, ITL         float64 // seconds
	AvgActive         float64
	Completed, Output int
}

// ContextTokens is a page's context label in prompt tokens: powers of two
// of 1024, and "123K" = 131072 − 4096 − 64 (lil-bench trims 128K to fit
// max_model_len with 4096 output tokens, method.md §3).
var ContextTokens = map[string]int{"8K": 8192, "16K": 16384, "32K": 32768, "64K": 65536, "123K": 126912,
	"128K": 131008} // the 128K prefill row: min(131072, max_model_len − 64)

// ReadE2BMatrix reads the published E2B matrix: decode cells by
// (context, concurrency), prefill rows by context.
func ReadE2BMatrix(path string) (decode map[[2]int]PublishedCell, prefill map[int]PublishedCell, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	rows, err := r.ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var bad error
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
		if err != nil && bad == nil {
			bad = fmt.Errorf("%s: %q: %w", path, s, err)
		}
		return v * mult
	}
	decode, prefill = map[[2]int]PublishedCell{}, map[int]PublishedCell{}
	for _, row := range rows[1:] {
		if len(row) < 11 {
			return nil, nil, fmt.Errorf("%s: a row of %d fields, want 11", path, len(row))
		}
		ctx, ok := ContextTokens[row[1]]
		if !ok {
			return nil, nil, fmt.Errorf("%s: context %q", path, row[1])
		}
		c := PublishedCell{Phase: row[0], Context: ctx, C: int(num(row[2])), Status: row[3], TotalTokS: num(row[4]),
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
	return decode, prefill, bad
}

// RTX3090Receipt is the published token-throughput receipt.
type RTX3090Receipt struct {
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

// ReadRTX3090 reads the published token-throughput receipt.
func ReadRTX3090(path string) (RTX3090Receipt, error) {
	var r RTX3090Receipt
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// e2bServe is the published run's vllm serve flags (the CSV's header):
// --max-model-len 131072 --gpu-memory-utilization 0.854015
// --limit-mm-per-prompt {"image":4,"audio":1}; the rest vLLM's defaults
// for a large GPU (max_num_batched_tokens 8192, max_num_seqs 1024).
var e2bServe = ServeFlags{MaxModelLen: 131072, GPUMemoryUtilization: 0.854015, MaxNumBatchedTokens: 8192, MaxNumSeqs: 1024, LimitImages: 4}

// ProfileE2B is the published E2B run (ProfileE2BH200NVL's model, GPU and
// flags) on other efficiency constants.
func ProfileE2B(eff Efficiency) (Profile, error) {
	cfg, err := roofline.ParseConfig(gemma4E2BConfig)
	if err != nil {
		return Profile{}, err
	}
	hw, err := roofline.LookupGPU("h200-nvl")
	if err != nil {
		return Profile{}, err
	}
	return ProfilePhysical("gemma-4-E2B-it", cfg, roofline.Dtypes{}, hw, eff, e2bServe)
}

// E2BMatrixRun is the published method: contexts 8K–123K, levels 1–128,
// 4096 output tokens, 30 s windows, a 128K prefill-only context.
var E2BMatrixRun = MatrixRun{
	Contexts:    []int{8192, 16384, 32768, 65536, 126912},
	Levels:      []int{1, 2, 4, 8, 16, 32, 64, 128},
	MaxTokens:   4096,
	Duration:    30,
	PrefillOnly: []int{131008},
}

// relErr is got/want − 1.
func relErr(got, want float64) float64 { return got/want - 1 }

// pct is a signed relative error in percent.
func pct(x float64) string { return fmt.Sprintf("%+6.1f%%", 100*x) }
