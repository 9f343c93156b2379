package utilisation_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/matrix"
	"github.com/vetbench/vetbench/receipts/roofline"
	"github.com/vetbench/vetbench/receipts/utilisation"
)

const (
	publishedTokens = "../tokens/testdata/token-throughput-rtx3090.json"
	publishedMatrix = "../matrix/testdata/speed-matrix-gemma-4-E2B-h200nvl.csv"
)

func TestReadPublishedTokens(t *testing.T) {
	t.Parallel()
	run, err := utilisation.Read(publishedTokens, 0, false)
	require.NoError(t, err)
	require.Equal(t, "token throughput (published format)", run.Kind)
	require.NotEmpty(t, run.Points)
	for _, p := range run.Points {
		require.Equal(t, roofline.PhaseDecode, p.Phase)
		require.Positive(t, p.TokS)
		// No prompt recorded: taken as 0, and said so.
		require.Equal(t, []string{"prompt length unrecorded: taken as 0 (give -context)"}, p.Notes)
	}
	// -context stands for the prompt when given: the context grows by it.
	given, err := utilisation.Read(publishedTokens, 40, true)
	require.NoError(t, err)
	require.Equal(t, run.Points[0].Context+40, given.Points[0].Context)
	require.Contains(t, given.Points[0].Notes[0], "-context 40 taken for it")
}

func TestReadPublishedMatrix(t *testing.T) {
	t.Parallel()
	run, err := utilisation.Read(publishedMatrix, 0, false)
	require.NoError(t, err)
	require.Equal(t, "speed matrix (published CSV)", run.Kind)
	phases := map[roofline.Phase]int{}
	for _, p := range run.Points {
		phases[p.Phase]++
	}
	require.Positive(t, phases[roofline.PhasePrefill])
	require.Positive(t, phases[roofline.PhaseDecode])

	// The same matrix as vetbench's JSON reads to the same points.
	m, err := matrix.ReadCSVFile(publishedMatrix)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "m.json")
	require.NoError(t, matrix.WriteFile(path, m))
	fromJSON, err := utilisation.Read(path, 0, false)
	require.NoError(t, err)
	require.Equal(t, "speed matrix ("+matrix.Schema+")", fromJSON.Kind)
	require.Equal(t, run.Points, fromJSON.Points)
}

func TestReadRefuses(t *testing.T) {
	t.Parallel()
	_, err := utilisation.Read("testdata/nope.json", 0, false)
	require.ErrorIs(t, err, os.ErrNotExist)

	m, err := matrix.ReadCSVFile(publishedMatrix)
	require.NoError(t, err)
	for i := range m.Cells {
		m.Cells[i].TotalTokS = nil
	}
	for i := range m.Prefill {
		m.Prefill[i].TokS = nil
	}
	_, err = utilisation.MatrixPoints(m)
	require.ErrorContains(t, err, "no measured point")

	empty := t.TempDir()
	_, err = utilisation.Read(empty, 0, false)
	require.ErrorContains(t, err, "no vetbench.tokens/v2 receipt")
}
