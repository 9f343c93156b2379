package tokens

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

const publishedPath = "testdata/token-throughput-rtx3090.json"

func publishedDoc(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(publishedPath)
	require.NoError(t, err)
	var doc map[string]any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	require.NoError(t, d.Decode(&doc))
	return doc
}

func num(t *testing.T, v any) float64 {
	t.Helper()
	f, err := v.(json.Number).Float64()
	require.NoError(t, err)
	return f
}

func TestPublishedMapsEveryField(t *testing.T) {
	t.Parallel()
	rs, err := ReadPublishedFile(publishedPath)
	require.NoError(t, err)
	doc := publishedDoc(t)
	records := doc["records"].([]any)
	require.Len(t, rs, len(records))
	require.Len(t, rs, 10)
	for i, raw := range records {
		rec := raw.(map[string]any)
		r := rs[i]
		require.Equal(t, SourcePublished, r.Source)
		require.Equal(t, doc["runtime"], r.Identity.ServerBuild)
		require.Equal(t, doc["gpu"], r.Identity.GPU)
		require.Equal(t, doc["method"], r.Method)
		require.Equal(t, publishedWorkloads[rec["workload"].(string)], r.Point.Workload)
		require.Equal(t, num(t, rec["concurrency"]), float64(r.Point.Concurrency))
		require.Equal(t, num(t, rec["repeats"]), float64(r.Point.Repeats))
		require.Equal(t, num(t, rec["output_tokens_per_request"]), float64(r.Point.OutputTokens))
		s := r.Summary
		require.Equal(t, num(t, rec["total_verified_output_tokens"]), float64(s.TotalVerifiedOutputTokens))
		require.Equal(t, num(t, rec["aggregate_output_tok_s"]), s.AggregateOutputTokS)
		require.Equal(t, num(t, rec["per_request_output_tok_s"]), s.PerRequestOutputTokS)
		require.Equal(t, num(t, rec["mean_completion_seconds"]), s.MeanCompletionSeconds)
		require.Equal(t, num(t, rec["mean_tpot_ms"]), s.MeanBatchMsPerToken)
		require.Equal(t, num(t, rec["peak_observed_gpu_memory_mib"]), *s.PeakGPUMemoryMiB)
		runs := rec["runs"].([]any)
		require.Len(t, r.Runs, len(runs))
		for j, rr := range runs {
			run := rr.(map[string]any)
			require.Equal(t, num(t, run["generated_tokens"]), float64(r.Runs[j].GeneratedTokens))
			require.Equal(t, num(t, run["wall_seconds"]), r.Runs[j].WallSeconds)
			require.Equal(t, num(t, run["output_tok_s"]), r.Runs[j].OutputTokS)
			require.Equal(t, num(t, run["gpu_memory_mib_after"]), *r.Runs[j].GPUMemoryMiBAfter)
		}
	}
	require.Equal(t, map[string]string{
		"max_model_len": "1024", "max_num_seqs": "32", "max_num_batched_tokens": "8192",
		"gpu_memory_utilization": "0.96", "cuda_graphs": "true", "prefix_caching": "false",
		"limit_mm_per_prompt.image": "1", "limit_mm_per_prompt.video": "0",
	}, rs[0].Identity.Profile)
	require.Equal(t, Key{Workload: WorkloadOneImage, Concurrency: 32, OutputTokens: 128}, rs[9].Key())
}

func TestPublishedRoundTripsThroughTheReceipt(t *testing.T) {
	t.Parallel()
	rs, err := ReadPublishedFile(publishedPath)
	require.NoError(t, err)
	dir := t.TempDir()
	for _, r := range rs {
		path := filepath.Join(dir, r.Key().Workload+"-"+strings.ReplaceAll(r.Key().String(), "/", "_")+".json")
		require.NoError(t, WriteFile(path, r))
		got, err := ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, r, got)
		back, err := ReadBaseline(path)
		require.NoError(t, err)
		require.Equal(t, []*Receipt{r}, back)
	}
	again, err := ReadBaseline(publishedPath)
	require.NoError(t, err)
	require.Equal(t, rs, again, "ReadBaseline recognises the published format")
}

// mutate edits a decoded copy of the published file and writes it out.
func mutate(t *testing.T, edit func(doc map[string]any)) []byte {
	t.Helper()
	doc := publishedDoc(t)
	edit(doc)
	data, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	return data
}

func record(doc map[string]any, i int) map[string]any {
	return doc["records"].([]any)[i].(map[string]any)
}

func run(doc map[string]any, i, j int) map[string]any {
	return record(doc, i)["runs"].([]any)[j].(map[string]any)
}

func TestMalformedPublishedNamesTheField(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(publishedPath)
	require.NoError(t, err)
	tests := []struct {
		name string
		data []byte
		path string
		msg  string
	}{
		{"edited_aggregate", mutate(t, func(d map[string]any) { record(d, 3)["aggregate_output_tok_s"] = 300.0 }),
			"records[3].aggregate_output_tok_s", "Σ generated_tokens ÷ Σ wall_seconds"},
		{"edited_wall", mutate(t, func(d map[string]any) { run(d, 2, 1)["wall_seconds"] = 2.0 }),
			"records[2].runs[1].output_tok_s", "generated_tokens ÷ wall_seconds"},
		{"wall_as_string", mutate(t, func(d map[string]any) { run(d, 0, 1)["wall_seconds"] = "0.8" }),
			"records[0].runs[1].wall_seconds", "want a number"},
		{"missing_field", mutate(t, func(d map[string]any) { delete(record(d, 2), "total_verified_output_tokens") }),
			"records[2].total_verified_output_tokens", "missing"},
		{"unknown_field", mutate(t, func(d map[string]any) { record(d, 0)["tok_s"] = 1 }),
			"records[0].tok_s", "unknown field"},
		{"fractional_concurrency", mutate(t, func(d map[string]any) { record(d, 5)["concurrency"] = 8.5 }),
			"records[5].concurrency", "want an integer"},
		{"unknown_workload", mutate(t, func(d map[string]any) { record(d, 1)["workload"] = "two_images" }),
			"records[1].workload", "unknown workload"},
		{"short_run", mutate(t, func(d map[string]any) { run(d, 0, 0)["generated_tokens"] = 127 }),
			"records[0].runs[0].generated_tokens", "1 requests of 128 tokens make 128"},
		{"missing_run", mutate(t, func(d map[string]any) {
			rec := record(d, 4)
			rec["runs"] = rec["runs"].([]any)[:2]
		}), "records[4].runs", "2 runs for 3 repeats"},
		{"negative_memory", mutate(t, func(d map[string]any) { run(d, 6, 2)["gpu_memory_mib_after"] = -1 }),
			"records[6].runs[2].gpu_memory_mib_after", "not a finite number >= 0"},
		{"duplicate_point", mutate(t, func(d map[string]any) {
			d["records"] = append(d["records"].([]any), record(d, 0))
		}), "records[10]", "the same point as records[0]"},
		{"profile_array", mutate(t, func(d map[string]any) { d["profile"].(map[string]any)["limit_mm_per_prompt"] = []any{1} }),
			"profile.limit_mm_per_prompt", "want a number, string, boolean or object"},
		{"records_not_array", mutate(t, func(d map[string]any) { d["records"] = map[string]any{} }),
			"records", "want an array"},
		{"truncated", raw[:len(raw)/2], "records[4].runs[1]", "unexpected end of document"},
		{"deep", []byte(`{"records": ` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`), "", "nested too deeply"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodePublished(tc.data, "rtx3090.json")
			require.Error(t, err)
			var se *receipts.SchemaError
			require.True(t, errors.As(err, &se), "%T: %v", err, err)
			require.Equal(t, "rtx3090.json", se.File)
			require.Equal(t, tc.path, se.Path, "%v", err)
			require.Contains(t, err.Error(), tc.msg)
			require.Contains(t, err.Error(), "rtx3090.json")
		})
	}
	// Positive control: the untouched copy reads.
	_, err = DecodePublished(mutate(t, func(map[string]any) {}), "rtx3090.json")
	require.NoError(t, err)
}

func TestReadBaselineRefusesOtherFiles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"hello": 1}`), 0o644))
	_, err := ReadBaseline(path)
	var se *receipts.SchemaError
	require.ErrorAs(t, err, &se)
	require.Contains(t, err.Error(), "neither")
	_, err = ReadBaseline(filepath.Join(t.TempDir(), "missing.json"))
	require.Error(t, err)
}
