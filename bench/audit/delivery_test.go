package audit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/receipts"
)

// TestDeliveryWarning: the share is the summed first-delivery delay over
// the summed modelled TTFT; it speaks above MaxDeliveryDelayShare, a mean
// over MinDeliveryDelay and modelled TTFTs of MinModelledTTFT only, never for a server that says nothing (vLLM) or a window in which it
// wrote nothing.
func TestDeliveryWarning(t *testing.T) {
	twin := func(n, delay, model, missed float64) *receipts.Server {
		return &receipts.Server{Extra: map[string]float64{scrape.ExtraFirstDeliveries: n, scrape.ExtraFirstDeliveryDelay: delay,
			scrape.ExtraFirstDeliveryModel: model, scrape.ExtraMissedSteps: missed}}
	}
	for _, tc := range []struct {
		name  string
		srv   *receipts.Server
		share float64 // want; -1: no reading
		warn  []string
	}{
		{"no server", nil, -1, nil},
		{"vLLM: no twin series", &receipts.Server{Extra: map[string]float64{"external_prefix_cache_hits": 3}}, -1, nil},
		{"no modelled TTFT", &receipts.Server{Extra: map[string]float64{scrape.ExtraFirstDeliveries: 10, scrape.ExtraFirstDeliveryDelay: 1}}, -1, nil},
		{"nothing written", twin(0, 0, 0, 0), -1, nil},
		// 10 responses, 0.2 ms late each on 100 ms TTFTs: 0.2%.
		{"kept up", twin(10, 0.002, 1, 0), 0.002, nil},
		{"at the line", twin(10, 0.03, 1, 0), 0.03, nil},
		// 12 ms late on 100 ms: 12%, 3 missed steps.
		{"fell behind", twin(10, 0.12, 1, 3), 0.12, []string{"the twin fell behind its model", "12.0 ms (model time) late on average, 12% of the TTFT it models", "3 engine step(s) missed"}},
		{"fell behind, no step missed", twin(10, 0.12, 1, 0), 0.12, []string{"12% of the TTFT it models; latencies"}},
		// 0.4 ms late on 22 ms TTFTs: 1.8%... and on 12 ms: 3.3%, but
		// below a millisecond.
		{"under a millisecond", twin(10, 0.004, 0.12, 0), 0.004 / 0.12, nil},
		{"just over a millisecond", twin(10, 0.0101, 0.22, 0), 0.0101 / 0.22, []string{"1.0 ms (model time) late"}},
		// The fast twin at c=32: 4.3 ms late on 7.3 ms TTFTs, 59%, but it
		// models no GPU's timing.
		{"modelled TTFT under 10 ms", twin(10, 0.043, 0.073, 0), 0.043 / 0.073, nil},
		{"modelled TTFT of 10 ms", twin(10, 0.043, 0.1, 0), 0.43, []string{"43% of the TTFT it models"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, share, ok := DeliveryDelay(tc.srv)
			require.Equal(t, tc.share >= 0, ok)
			if ok {
				require.InDelta(t, tc.share, share, 1e-12)
			}
			got := DeliveryWarning(tc.srv)
			if tc.warn == nil {
				require.Empty(t, got)
				return
			}
			for _, w := range tc.warn {
				require.Contains(t, got, w)
			}
		})
	}
}
