package audit

import (
	"fmt"

	"github.com/vetbench/vetbench/bench/scrape"
	"github.com/vetbench/vetbench/receipts"
)

// MaxDeliveryDelayShare is how far behind its model a server that models
// its own time (vetbench's twin) may write its responses' first tokens,
// as a share of the TTFT its model gives the client, before a window's
// figures carry a warning. The twin sees only its own write: the client
// reads the chunk later still. In BenchmarkHTTPvsSim on the 2-core machine
// (docs/twin.md) an unloaded twin at ×1 reads 0.005–0.007, and ×10 points
// whose TTFT ran 20–37% over the model read 0.039–0.11.
const MaxDeliveryDelayShare = 0.03

// MinDeliveryDelay (model seconds) is the mean delay below which no
// warning is given whatever the share: the fast twin's TTFTs are 2–3 ms,
// and the few hundred µs a container's proxy or a busy machine's wake-up
// adds to them are the machine's grain, not a figure anyone reads (vLLM's
// own TTFT moves more than that from run to run).
const MinDeliveryDelay = 0.001

// MinModelledTTFT (model seconds) is the mean modelled TTFT below which no
// warning is given: a twin whose responses are modelled in under 10 ms
// (the fast profile answers judgments in 1–9 ms) models no GPU's timing
// but a quick functional server, and on a shared machine it is CPU-bound
// by design (make bench's c=16 and c=32 points run 40–60% behind it). The
// physical profiles' TTFTs start near 19 ms (rtx3090 c=1).
const MinModelledTTFT = 0.010

// DeliveryDelay reads a window's server figures for a server that models
// its own time: the mean delay (model seconds) of its responses' first
// tokens past their model time, their mean modelled TTFT at the client,
// the delay as a share of it, and ok false when the window holds no such report
// (a real vLLM, a twin that wrote nothing).
func DeliveryDelay(srv *receipts.Server) (mean, modelled, share float64, ok bool) {
	if srv == nil {
		return 0, 0, 0, false
	}
	n := srv.Extra[scrape.ExtraFirstDeliveries]
	delay, model := srv.Extra[scrape.ExtraFirstDeliveryDelay], srv.Extra[scrape.ExtraFirstDeliveryModel]
	if n <= 0 || model <= 0 {
		return 0, 0, 0, false
	}
	return delay / n, model / n, delay / model, true
}

// DeliveryWarning is the receipt's warning when the server fell behind its
// own model by more than MaxDeliveryDelayShare of its TTFT in the window,
// and by more than MinDeliveryDelay, on TTFTs of MinModelledTTFT or more;
// "" when it kept up or says nothing. The figures stand: they are what the
// client measured, but not the model's, and a reader must know.
func DeliveryWarning(srv *receipts.Server) string {
	mean, modelled, share, ok := DeliveryDelay(srv)
	if !ok || share <= MaxDeliveryDelayShare || mean <= MinDeliveryDelay || modelled < MinModelledTTFT {
		return ""
	}
	missed := ""
	if steps := srv.Extra[scrape.ExtraMissedSteps]; steps > 0 {
		missed = fmt.Sprintf(", %.0f engine step(s) missed their deadline", steps)
	}
	return fmt.Sprintf(receipts.TwinBehind+": responses' first tokens left it %.1f ms (model time) late on average, %.0f%% of the TTFT it models%s; "+
		"latencies here are slower than the model by at least that (this machine cannot keep this time scale at this concurrency: lower either)",
		mean*1e3, share*100, missed)
}
