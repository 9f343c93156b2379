package scrape

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuantileEstimates(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name          string
		buckets       []bucket
		count, q      float64
		upper, interp *float64
	}{
		{"median in second bucket", []bucket{{1, 5}, {2, 10}, {inf, 12}}, 12, 0.5, ptr(2), ptr(1.2)},
		{"rank in +Inf is null", []bucket{{1, 5}, {2, 10}, {inf, 12}}, 12, 0.95, nil, nil},
		{"+Inf not exposed, rank past last edge", []bucket{{1, 5}, {2, 10}}, 12, 0.95, nil, nil},
		// 0.95·180 is 171.00000000000003 in float64; the rank is 171.
		{"float rank lands on the edge", []bucket{{1, 171}, {2, 180}, {inf, 180}}, 180, 0.95, ptr(1), ptr(1)},
		{"first bucket interpolates from 0", []bucket{{0.3, 180}, {inf, 180}}, 180, 0.5, ptr(0.3), ptr(0.15)},
		{"empty buckets skipped", []bucket{{1, 0}, {2, 0}, {4, 4}, {inf, 4}}, 4, 0.5, ptr(4), ptr(3)},
		{"non-positive first edge", []bucket{{0, 5}, {1, 10}}, 10, 0.1, ptr(0), ptr(0)},
		{"no observations", []bucket{{1, 0}, {inf, 0}}, 0, 0.5, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := upperBoundQuantile(tt.buckets, tt.count, tt.q)
			if tt.upper == nil {
				require.Nil(t, got)
			} else {
				require.NotNil(t, got)
				require.Equal(t, *tt.upper, *got)
			}
			got = interpolatedQuantile(tt.buckets, tt.count, tt.q)
			if tt.interp == nil {
				require.Nil(t, got)
			} else {
				require.NotNil(t, got)
				require.InDelta(t, *tt.interp, *got, 1e-12)
			}
		})
	}
}

func TestCreatedNeverReadAsCounter(t *testing.T) {
	// With the _total samples gone, only vllm:prompt_tokens_created
	// (≈1.79e9 per engine) is left; it must not stand in for the counter.
	strip := func(name string) string {
		return dropLines(t, dropLines(t, page(t, name), "vllm:prompt_tokens_total"), "# HELP vllm:prompt_tokens_total")
	}
	srv := Diff(snap(t, strip(beforePage)), snap(t, strip(afterPage)))
	require.NotContains(t, srv.Counters, PromptTokens)
	require.True(t, containsSub(srv.Problems, "vllm:prompt_tokens_total absent from both readings"), "%q", srv.Problems)
}
