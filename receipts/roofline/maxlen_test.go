package roofline

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The context vLLM serves a config at without --max-model-len, and
// whether the checkpoint takes images: by vLLM's rule on the configs
// held (YaRN scales the original length, llama3 scaling counts its
// factor already), and on hand-made ones for the other branches.
func TestMaxPositionsAndVision(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file   string
		max    int
		vision bool
	}{
		{"qwen3-8b.json", 40960, false},
		{"llama-3.3-70b-instruct.json", 131072, false},     // llama3: no ×8
		{"deepseek-v2-lite.json", 163840, false},           // yarn: 4096 × 40
		{"deepseek-v4-flash.json", 1048576, false},         // yarn: 65536 × 16
		{"gemma-4-e2b-it.json", 131072, true},              // per-layer-type rope map: no factor
		{"qwen3-vl-235b-a22b-thinking.json", 262144, true}, // text_config's length
	} {
		cfg, err := ReadConfig(filepath.Join("testdata", c.file))
		require.NoError(t, err, c.file)
		require.Equal(t, c.max, cfg.MaxPositions, c.file)
		require.Equal(t, c.vision, cfg.Vision, c.file)
	}
	for _, c := range []struct {
		name, fields string
		max          int
	}{
		{"none stated", ``, 0},
		{"smallest key wins", `"max_position_embeddings": 4096, "seq_length": 2048, `, 2048},
		{"linear scaling multiplies", `"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 2.0}, `, 8192},
		{"yarn scales the original", `"max_position_embeddings": 32768, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}, `, 16384},
		{"longrope counts it already", `"max_position_embeddings": 131072, "rope_scaling": {"type": "longrope", "factor": 32.0}, `, 131072},
	} {
		cfg, err := ParseConfig([]byte(`{"model_type": "llama", "intermediate_size": 128, ` + c.fields + base + `}`))
		require.NoError(t, err, c.name)
		require.Equal(t, c.max, cfg.MaxPositions, c.name)
		require.False(t, cfg.Vision, c.name)
	}
}
