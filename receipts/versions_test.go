package receipts

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrefixCounting(t *testing.T) {
	for build, want := range map[string]PrefixCounting{
		"0.25.1":                      CountingAtLookup,
		"0.10.2":                      CountingAtLookup,
		"0.26.0":                      CountingUnknown,
		"0.30.0":                      CountingUnknown,
		"0.25.1rc1.dev164+ga6183563b": CountingUnknown,
		"0.30.0+vetbench.twin":        CountingAtAdmission,
		"":                            CountingUnknown,
		"1.0.0":                       CountingUnknown,
	} {
		require.Equal(t, want, PrefixCountingOf(build), build)
	}
	require.Empty(t, PrefixCountingNote("0.30.0", "0.30.0"))
	require.Empty(t, PrefixCountingNote("0.24.0", "0.25.1"), "both count at lookup")
	require.Empty(t, PrefixCountingNote("0.30.0+vetbench.twin", "0.25.1+vetbench.twin"), "the twin always counts at admission")
	n := PrefixCountingNote("0.25.1", "0.30.0+vetbench.twin")
	require.Contains(t, n, "prefix hit rates cross vllm#48860 (baseline vLLM 0.25.1, candidate vLLM 0.30.0+vetbench.twin)")
	n = PrefixCountingNote("0.24.0", "0.29.0")
	require.Contains(t, n, "may cross vllm#48860")
	require.Contains(t, n, "releases after 0.25.x may have it")
	require.Contains(t, PrefixCountingNote("0.28.0", "0.30.0"), "may cross")
}
