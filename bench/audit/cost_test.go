package audit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

func TestCostOf(t *testing.T) {
	// typevet's CEDAR c16 run: 60 judgments in 13.363 s. 1,000 judgments
	// take 222.7167 s; at $2.49/h that is 2.49 × 222.7167 / 3600 = $0.15404.
	c, err := CostOf(2.49, receipts.Throughput{Judgments: 60, WallSeconds: 13.363})
	require.NoError(t, err)
	require.Equal(t, 2.49, c.GPUHourlyUSD)
	require.InDelta(t, 222.71667, c.SecondsPer1000, 1e-5)
	require.InDelta(t, 0.154046, c.USDPer1000, 1e-6)

	for _, tt := range []struct {
		name   string
		hourly float64
		tp     receipts.Throughput
		err    string
	}{
		{"no judgments", 2.49, receipts.Throughput{WallSeconds: 10}, "0 judgments in 10s: nothing to price"},
		{"no wall", 2.49, receipts.Throughput{Judgments: 5}, "nothing to price"},
		{"zero price", 0, receipts.Throughput{Judgments: 5, WallSeconds: 1}, "hourly price 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CostOf(tt.hourly, tt.tp)
			require.ErrorContains(t, err, tt.err)
		})
	}
}
