package config

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The stream budget goes through every layer, later ones winning:
// defaults < run file < environment < flags, for tokens and matrix alike;
// a bad value names where it came from.
func TestStreamBudgetLayers(t *testing.T) {
	file := writeRunFile(t, "[stream]\nttft_budget = \"30s\"\nslowest_tpot = \"200ms\"\n")
	for _, scope := range []Scope{ScopeTokens, ScopeMatrix} {
		load := func(vars map[string]string, args ...string) (Config, error) {
			fs := flag.NewFlagSet(string(scope), flag.ContinueOnError)
			src := ScopeFlags(fs, scope)
			require.NoError(t, fs.Parse(args))
			return Load(Env(env(vars)), src)
		}
		c, err := load(nil)
		require.NoError(t, err)
		require.Equal(t, Stream{TTFTBudget: 120 * time.Second, SlowestTPOT: 500 * time.Millisecond}, c.Stream)

		c, err = load(map[string]string{EnvConfig: file})
		require.NoError(t, err)
		require.Equal(t, Stream{TTFTBudget: 30 * time.Second, SlowestTPOT: 200 * time.Millisecond}, c.Stream)

		c, err = load(map[string]string{EnvConfig: file, EnvStreamSlowestTPOT: "50ms"})
		require.NoError(t, err)
		require.Equal(t, Stream{TTFTBudget: 30 * time.Second, SlowestTPOT: 50 * time.Millisecond}, c.Stream)

		c, err = load(map[string]string{EnvConfig: file, EnvStreamSlowestTPOT: "50ms"}, "-slowest-tpot", "20ms", "-ttft-budget", "5s")
		require.NoError(t, err)
		require.Equal(t, Stream{TTFTBudget: 5 * time.Second, SlowestTPOT: 20 * time.Millisecond}, c.Stream)

		_, err = load(map[string]string{EnvStreamTTFTBudget: "-1s"})
		require.ErrorContains(t, err, EnvStreamTTFTBudget)
		_, err = load(nil, "-slowest-tpot", "0")
		require.ErrorContains(t, err, "-slowest-tpot")
	}
	require.Contains(t, KnownVars(), EnvStreamTTFTBudget, "a registered name, not an unknown variable")
	require.Contains(t, KnownVars(), EnvStreamSlowestTPOT)
}
