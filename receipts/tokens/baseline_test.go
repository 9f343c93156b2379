package tokens

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBaselineCheckLoadSave(t *testing.T) {
	t.Parallel()
	const published = "testdata/token-throughput-rtx3090.json"
	require.NoError(t, (&Baseline{}).Check())
	require.EqualError(t, (&Baseline{Candidate: published}).Check(), "-candidate needs -baseline (or -save-result)")
	require.NoError(t, (&Baseline{Candidate: published, SaveResult: "x.json"}).Check())
	require.EqualError(t, (&Baseline{Margin: -0.1}).Check(), "-margin must be >= 0")
	require.EqualError(t, (&Baseline{Margin: math.NaN()}).Check(), "-margin must be >= 0")

	base, cand, err := (&Baseline{}).Load()
	require.NoError(t, err)
	require.Nil(t, base)
	require.Nil(t, cand)
	b := &Baseline{Path: published, Candidate: published, Margin: 0.05}
	base, cand, err = b.Load()
	require.NoError(t, err)
	require.NotEmpty(t, base)
	require.Len(t, cand, len(base))
	_, v, err := b.Judge(base, cand)
	require.NoError(t, err)
	require.Equal(t, Pass, v.Outcome, "a receipt against itself")
	_, _, err = (&Baseline{Path: "testdata/nope.json"}).Load()
	require.ErrorContains(t, err, "baseline: ")
	_, _, err = (&Baseline{Candidate: "testdata/nope.json"}).Load()
	require.ErrorContains(t, err, "candidate: ")

	require.NoError(t, (&Baseline{}).Save(cand), "no file asked for")
	path := filepath.Join(t.TempDir(), "serve.json")
	b.SaveResult = path
	require.ErrorContains(t, b.Save(cand[:1]), "-save-result: ", "a published point has no request samples")
	require.NoError(t, b.Save([]*Receipt{sample()}))
	require.ErrorContains(t, b.Save([]*Receipt{sample()}), "-save-result: ", "never over an existing file")
	back, err := ReadBaseline(path)
	require.NoError(t, err)
	require.Len(t, back, 1)
}
