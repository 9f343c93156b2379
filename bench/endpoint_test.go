package bench

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/receipts"
)

func TestEndpointReceiptHidesSecrets(t *testing.T) {
	ep := Endpoint{BaseURL: "http://user:pass@gpu-box:8000?token=x#frag", APIKey: "sk-secret",
		Target: receipts.Target{Kind: receipts.TargetLive}}
	require.Equal(t, receipts.Target{Kind: receipts.TargetLive, Endpoint: "http://gpu-box:8000"}, ep.Receipt())
	req, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	ep.Authorize(req)
	require.Equal(t, "Bearer sk-secret", req.Header.Get("Authorization"))

	ep = Endpoint{BaseURL: "http://127.0.0.1:1", Target: receipts.Target{Kind: receipts.TargetContainer, Endpoint: "http://a:b@twin:8000/?k=v", Profile: "fast"}}
	require.Equal(t, receipts.Target{Kind: receipts.TargetContainer, Endpoint: "http://twin:8000/", Profile: "fast"}, ep.Receipt())
	ep = Endpoint{BaseURL: "http://[::1", Target: receipts.Target{Kind: receipts.TargetLive}}
	require.Empty(t, ep.Receipt().Endpoint, "unparseable: nothing recorded")
}

func TestNewSessionNeedsKind(t *testing.T) {
	_, err := NewSession(t.Context(), Endpoint{BaseURL: "http://127.0.0.1:1"}, fixtures.Set{}, Options{})
	require.ErrorContains(t, err, "no target kind")
}
