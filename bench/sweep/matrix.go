package sweep

import (
	"fmt"

	"github.com/vetbench/vetbench/bench/grid"
	"github.com/vetbench/vetbench/receipts/matrix"
)

// Matrix file names in a run directory's receipts/ (pass k's in
// receipts/pass<k> when an earlier pass wrote its own).
const (
	MatrixJSON = "matrix.json"
	MatrixCSV  = "matrix.csv"
)

// MatrixPoint is a cell's sub-benchmark name, as BenchmarkMatrix and
// bench.txt name it: ctx=<label>/c=<C>.
func MatrixPoint(context string, c int) string { return fmt.Sprintf("ctx=%s/c=%d", context, c) }

// WriteMatrix writes a measured matrix into the run directory (JSON and
// the published CSV layout, each atomically) and returns the JSON's path.
func (r *Run) WriteMatrix(m *matrix.Matrix) (string, error) {
	if r.Dir == nil {
		return "", fmt.Errorf("no run directory: the matrix is written only when recorded")
	}
	var first string
	for _, f := range []struct {
		name  string
		write func(string, *matrix.Matrix) error
	}{{MatrixJSON, matrix.WriteFile}, {MatrixCSV, matrix.WriteCSVFile}} {
		path, _, err := r.Dir.NextReceipt(f.name)
		if err == nil {
			err = r.write(func() error { return f.write(path, m) })
		}
		if err != nil {
			return "", fmt.Errorf("write matrix: %w", err)
		}
		if first == "" {
			first = path
		}
	}
	return first, nil
}

// MatrixLines writes a bench.txt line for each measured cell (Valid or
// Requests queued; grid.Metrics), as BenchmarkMatrix reports them, so
// that vetbench gate compares two matrix runs as it compares make tokens
// runs.
func (r *Run) MatrixLines(m *matrix.Matrix) error {
	for _, c := range m.Cells {
		if c.Status != matrix.Valid && c.Status != matrix.RequestsQueued {
			continue
		}
		if err := r.Line("Matrix", MatrixPoint(c.Context, c.Concurrency), 1, grid.Metrics(c)); err != nil {
			return err
		}
	}
	return nil
}
