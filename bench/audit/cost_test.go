package audit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts"
)

func env(v string) func(string) string {
	return func(k string) string {
		if k == GPUHourlyEnv {
			return v
		}
		return ""
	}
}

func TestGPUHourly(t *testing.T) {
	tests := []struct {
		value string
		usd   float64
		ok    bool
		err   string
	}{
		{"", 0, false, ""},
		{"   ", 0, false, ""},
		{"2.49", 2.49, true, ""},
		{" 3 ", 3, true, ""},
		{"$2.49", 0, false, `VETBENCH_GPU_HOURLY_USD="$2.49": not a number`},
		{"2,49", 0, false, `VETBENCH_GPU_HOURLY_USD="2,49": not a number`},
		{"0", 0, false, `VETBENCH_GPU_HOURLY_USD="0": want a positive, finite price`},
		{"-1", 0, false, `VETBENCH_GPU_HOURLY_USD="-1": want a positive`},
		{"NaN", 0, false, `VETBENCH_GPU_HOURLY_USD="NaN": want a positive, finite`},
		{"Inf", 0, false, `VETBENCH_GPU_HOURLY_USD="Inf": want a positive, finite`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			usd, ok, err := GPUHourly(env(tt.value))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				require.False(t, ok)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.usd, usd)
		})
	}
}

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
