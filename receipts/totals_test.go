package receipts_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

// TestTotalsMustCountTheItems: failed=5 or judgments=999 over clean items
// compared PASS on the items while the figures said otherwise. Such a
// receipt is refused, naming the field; the control (the clean receipt,
// and one whose failed item is counted) is accepted.
func TestTotalsMustCountTheItems(t *testing.T) {
	t.Parallel()
	require.NoError(t, sample(t).Validate(), "control")
	counted := sample(t)
	counted.Items[0].Answers, counted.Items[0].Error = nil, "HTTP 500"
	counted.Throughput.Judgments--
	counted.Throughput.Failed++
	require.NoError(t, counted.Validate(), "control: a failed item, counted")
	for name, c := range map[string]struct {
		mutate func(*receipts.Receipt)
		field  string
	}{
		"failed=5":          {func(r *receipts.Receipt) { r.Throughput.Failed = 5 }, "throughput.failed"},
		"judgments=999":     {func(r *receipts.Receipt) { r.Throughput.Judgments = 999 }, "throughput.judgments"},
		"uncounted failure": {func(r *receipts.Receipt) { r.Items[0].Answers, r.Items[0].Error = nil, "HTTP 500" }, "throughput.failed"},
	} {
		t.Run(name, func(t *testing.T) {
			r := sample(t)
			c.mutate(r)
			require.ErrorContains(t, r.Validate(), c.field+": ")
		})
	}
}
