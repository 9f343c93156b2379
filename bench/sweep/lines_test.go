package sweep

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/tokens"
)

// TestTokenLineWarnings: a token point's warnings reach the console, one
// per line under the point, as a judgments point's do; none, no extra line.
func TestTokenLineWarnings(t *testing.T) {
	rec := &tokens.Receipt{Point: tokens.Point{Workload: tokens.WorkloadText, Concurrency: 4, OutputTokens: 16}}
	require.NotContains(t, TokenLine(rec, Scale{Factor: 1}), "\n")
	rec.Warnings = []string{"the twin fell behind its model: …", "repeat 1: Little's law: …"}
	lines := strings.Split(TokenLine(rec, Scale{Factor: 1}), "\n")
	require.Equal(t, []string{"    warning: the twin fell behind its model: …", "    warning: repeat 1: Little's law: …"}, lines[1:])
}
