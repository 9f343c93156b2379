package tokens

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeltaJSON: a relative change with no baseline is null (JSON has no
// NaN); the encoder would fail on the run's output otherwise.
func TestDeltaJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Delta{Base: 0, Cand: 2, Rel: math.NaN()})
	require.NoError(t, err)
	require.JSONEq(t, `{"baseline":0,"candidate":2,"relative":null}`, string(b))
	b, err = json.Marshal(delta(2, 3))
	require.NoError(t, err)
	require.JSONEq(t, `{"baseline":2,"candidate":3,"relative":0.5}`, string(b))
}

func TestComparisonJudgeAndMeasured(t *testing.T) {
	t.Parallel()
	recs, err := ReadBaseline("testdata/token-throughput-rtx3090.json")
	require.NoError(t, err)
	c, err := Compare(recs, recs[:1])
	require.NoError(t, err)
	require.Equal(t, CompareSchema, c.Schema)
	v := c.Judge(0.05)
	require.Equal(t, CouldNotCompare, v.Outcome, "baseline points without a candidate")
	require.Equal(t, &v, c.Judged)

	m := NewMeasured(nil, false)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.JSONEq(t, `{"schema":"vetbench.tokens-run/v1","passed":false,"receipts":[]}`, string(b))
}
