package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// rl names a config shipped with receipts/roofline.
func rl(name string) string { return "../../receipts/roofline/testdata/" + name }

// TestRooflineGolden compares vetbench roofline's output with
// testdata/roofline_*.stdout and .stderr (go test -update rewrites them).
func TestRooflineGolden(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"roofline_deepseek", []string{"roofline", "-config", rl("deepseek-v2-lite.json"), "-gpu", "h100-sxm"}, exitPass},
		{"roofline_llama_json", []string{"roofline", "-config", rl("llama-3.3-70b-instruct.json"), "-gpu", "h200-sxm", "-batch", "1,64,512", "-context", "1024", "-json"}, exitPass},
		{"roofline_fp8_measured", []string{"roofline", "-config", rl("llama-3.3-70b-instruct.json"), "-gpu", "h200-nvl", "-weight-dtype", "fp8", "-kv-dtype", "fp8", "-bandwidth", "4.1e12", "-batch", "1,32"}, exitPass},
		{"roofline_gemma_sliding", []string{"roofline", "-config", rl("gemma-3-270m-it.json"), "-gpu", "rtx3090", "-batch", "1,64", "-context", "32768"}, exitPass},
		{"roofline_qwen3vl_json", []string{"roofline", "-config", rl("qwen3-vl-235b-a22b-thinking.json"), "-bandwidth", "8e12", "-flops", "2e15", "-batch", "1,16", "-json"}, exitPass},
		{"roofline_missing_file", []string{"roofline", "-config", "testdata/roofline/nope.json", "-gpu", "h100-sxm"}, exitNoVerdict},
		{"roofline_malformed", []string{"roofline", "-config", "testdata/roofline/truncated.json", "-gpu", "h100-sxm"}, exitNoVerdict},
		{"roofline_unknown_arch", []string{"roofline", "-config", "testdata/roofline/gpt2.json", "-gpu", "h100-sxm"}, exitNoVerdict},
		{"roofline_unmodelled_field", []string{"roofline", "-config", "testdata/roofline/gemma4-shared-kv.json", "-gpu", "h100-sxm"}, exitNoVerdict},
		{"roofline_unknown_gpu", []string{"roofline", "-config", rl("qwen3-0.6b.json"), "-gpu", "a100"}, exitNoVerdict},
		{"roofline_no_gpu", []string{"roofline", "-config", rl("qwen3-0.6b.json"), "-bandwidth", "1e12"}, exitNoVerdict},
		{"roofline_no_config", []string{"roofline", "-gpu", "h100-sxm"}, exitNoVerdict},
		{"roofline_bad_dtype", []string{"roofline", "-config", rl("qwen3-0.6b.json"), "-gpu", "h100-sxm", "-weight-dtype", "int3"}, exitNoVerdict},
		{"roofline_bad_kv_dtype", []string{"roofline", "-config", rl("qwen3-0.6b.json"), "-gpu", "h100-sxm", "-kv-dtype", "mxfp4"}, exitNoVerdict},
		{"roofline_deepseek_v4_tp4", []string{"roofline", "-config", rl("deepseek-v4-flash.json"), "-gpu", "h200-sxm", "-tp", "4", "-kv-dtype", "fp8", "-batch", "1,8,32,128", "-context", "8192", "-spec-tokens", "3", "-spec-acceptance", "0.7"}, exitPass},
		{"roofline_deepseek_v4_json", []string{"roofline", "-config", rl("deepseek-v4-flash.json"), "-gpu", "h200-sxm", "-tp", "4", "-kv-dtype", "fp8", "-batch", "1,128", "-context", "65536", "-spec-tokens", "3", "-spec-acceptance", "0.7", "-json"}, exitPass},
		{"roofline_deepseek_v4_one_gpu", []string{"roofline", "-config", rl("deepseek-v4-flash.json"), "-gpu", "h200-sxm", "-kv-dtype", "fp8", "-batch", "1,64"}, exitPass},
		{"roofline_bad_tp", []string{"roofline", "-config", rl("deepseek-v4-flash.json"), "-gpu", "h200-sxm", "-tp", "3"}, exitNoVerdict},
		{"roofline_spec_no_acceptance", []string{"roofline", "-config", rl("deepseek-v4-flash.json"), "-gpu", "h200-sxm", "-spec-tokens", "3"}, exitNoVerdict},
		{"roofline_tp_no_link", []string{"roofline", "-config", rl("qwen3-0.6b.json"), "-bandwidth", "1e12", "-flops", "1e14", "-tp", "2"}, exitNoVerdict},
		{"roofline_bad_batch", []string{"roofline", "-config", rl("qwen3-0.6b.json"), "-gpu", "h100-sxm", "-batch", "1,0"}, exitNoVerdict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := run(t, c.args...)
			require.Equal(t, c.code, code, "stderr: %s", stderr)
			checkGolden(t, filepath.Join("testdata", c.name+".stdout"), stdout)
			checkGolden(t, filepath.Join("testdata", c.name+".stderr"), stderr)
		})
	}
}

// TestRooflineJSONContract holds the fields docs/roofline.md promises,
// whatever else the report grows: a golden alone would let one be renamed
// with -update.
func TestRooflineJSONContract(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		config string
		moe    bool
	}{{"deepseek-v2-lite.json", true}, {"llama-3.3-70b-instruct.json", false}} {
		stdout, stderr, code := run(t, "roofline", "-config", rl(c.config), "-gpu", "h100-sxm", "-batch", "1,8", "-json")
		require.Equal(t, exitPass, code, stderr)
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(stdout), &r))
		require.Equal(t, "vetbench.roofline/v1", r["schema"])
		for _, k := range []string{"params", "active_params", "weight_bytes", "kv_bytes_per_token", "ridge_flop_per_byte", "weight_dtype", "kv_dtype", "gpu", "points"} {
			require.Contains(t, r, k, c.config)
		}
		gpu := r["gpu"].(map[string]any)
		for _, k := range []string{"name", "bandwidth_bytes_per_s", "bandwidth_source", "flop_per_s", "flops_source"} {
			require.Contains(t, gpu, k)
		}
		points := r["points"].([]any)
		require.Len(t, points, 2)
		for _, p := range points {
			p := p.(map[string]any)
			for _, k := range []string{"batch", "context", "bytes_per_step", "ceiling_tok_s", "bound", "intensity_flop_per_byte", "step_ms"} {
				require.Contains(t, p, k)
			}
			_, has := p["experts_read"]
			require.Equal(t, c.moe, has, "experts_read is for MoE only")
			require.Contains(t, []any{"bandwidth", "compute"}, p["bound"])
		}
		if c.moe {
			require.Contains(t, r, "moe")
		}
	}
}

// TestRooflineDeploymentJSONContract holds the tensor-parallel and
// speculative fields docs/roofline.md promises.
func TestRooflineDeploymentJSONContract(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := run(t, "roofline", "-config", rl("deepseek-v4-flash.json"), "-gpu", "h200-sxm", "-tp", "4",
		"-batch", "1", "-spec-tokens", "2", "-spec-acceptance", "0.5", "-json")
	require.Equal(t, exitPass, code, stderr)
	var r map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	for _, k := range []string{"tensor_parallel", "link", "weight_bytes_per_gpu", "speculative"} {
		require.Contains(t, r, k)
	}
	require.InDelta(t, 1.75, r["speculative"].(map[string]any)["tokens_per_step"], 1e-9)
	p := r["points"].([]any)[0].(map[string]any)
	for _, k := range []string{"bytes_per_step", "flop_per_step", "ceiling_tok_s"} {
		require.Contains(t, p, k, "totals")
	}
	g := p["per_gpu"].(map[string]any)
	for _, k := range []string{"bytes_per_step", "weight_bytes_read", "kv_bytes_read", "flop_per_step", "collectives", "comm_ms", "memory_bytes"} {
		require.Contains(t, g, k)
	}
	sp := p["speculative"].(map[string]any)
	for _, k := range []string{"tokens_per_step", "verify_bytes_per_gpu", "draft_bytes_per_gpu", "ceiling_tok_s", "step_ms", "speedup_over_plain"} {
		require.Contains(t, sp, k)
	}
	plain, _, code := run(t, "roofline", "-config", rl("deepseek-v4-flash.json"), "-gpu", "h200-sxm", "-batch", "1", "-json")
	require.Equal(t, exitPass, code)
	require.NotContains(t, plain, "per_gpu", "one GPU: no per-GPU share")
	require.NotContains(t, plain, "speculative")
}

// TestRooflineUtilisationJSONContract holds the fields docs/roofline.md
// promises for -receipt -json (vetbench.utilisation/v1), and the error
// object of a -receipt that cannot be read.
func TestRooflineUtilisationJSONContract(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := run(t, "roofline", "-config", rl("gemma-3-270m-it.json"), "-gpu", "h200-nvl", "-receipt", publishedMatrix, "-json")
	require.Equal(t, exitPass, code, stderr)
	checkGolden(t, filepath.Join("testdata", "roofline_receipt_matrix_json.stdout"), stdout)
	var r map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	require.Equal(t, "vetbench.utilisation/v1", r["schema"])
	require.ElementsMatch(t, []string{"schema", "config", "gpu", "points", "above_ceiling"}, keys(r))
	points := r["points"].([]any)
	require.NotEmpty(t, points)
	for _, p := range points {
		p := p.(map[string]any)
		for _, k := range []string{"label", "phase", "batch", "context", "measured_tok_s", "ceiling_tok_s", "bound", "share",
			"ceiling_step_ms", "measured_step_ms", "residual_ms", "above_ceiling"} {
			require.Contains(t, p, k)
		}
	}
	stdout, _, code = run(t, "roofline", "-config", rl("qwen3-0.6b.json"), "-gpu", "rtx3090", "-receipt", "testdata/nope.json", "-json")
	require.Equal(t, exitNoVerdict, code)
	r = nil
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	require.Equal(t, "vetbench.error/v1", r["schema"])
	require.ElementsMatch(t, []string{"schema", "command", "error", "exit"}, keys(r))
	require.Equal(t, "roofline", r["command"])
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
