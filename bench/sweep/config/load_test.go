package config

import (
	"bytes"
	"flag"
	"io"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The open-loop and SLO settings come in the same layers as every other:
// defaults < run file < environment < flags, each parsed by one function.
func TestLoadSettingsLayers(t *testing.T) {
	path := writeRunFile(t, `
[load]
rate = [2, 8]
burstiness = 0.5
max_concurrency = 16
seed = 3

[slo]
latency = "2s"
ttft = "500ms"
tpot = "40ms"
goodput = 0.9
`)
	c, err := Load(File(path))
	require.NoError(t, err)
	require.Equal(t, OpenLoop{Rates: []float64{2, 8}, Burstiness: 0.5, MaxConcurrency: 16, Seed: 3}, c.OpenLoop)
	require.Equal(t, SLO{Latency: 2 * time.Second, TTFT: 500 * time.Millisecond, TPOT: 40 * time.Millisecond, Goodput: 0.9}, c.SLO)

	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags := Flags(fs)
	require.NoError(t, fs.Parse([]string{"-rate", "5", "-slo-goodput", "95%"}))
	c, err = Load(File(path), Env(env(map[string]string{EnvRate: "1,3", EnvBurstiness: "inf", EnvLoadSeed: "11", EnvSLO: "750ms"})), flags)
	require.NoError(t, err)
	require.Equal(t, []float64{5}, c.OpenLoop.Rates, "the flag wins")
	require.True(t, math.IsInf(c.OpenLoop.Burstiness, 1), "inf is a constant process")
	require.Equal(t, int64(11), c.OpenLoop.Seed)
	require.Equal(t, 16, c.OpenLoop.MaxConcurrency, "the file stands where nothing overrides it")
	require.Equal(t, SLO{Latency: 750 * time.Millisecond, TTFT: 500 * time.Millisecond, TPOT: 40 * time.Millisecond, Goodput: 0.95}, c.SLO)

	// settings.toml says it all again, inf included.
	var b bytes.Buffer
	require.NoError(t, WriteSettings(&b, c))
	back, err := Load(File(writeRunFile(t, b.String())))
	require.NoError(t, err)
	require.Equal(t, c.OpenLoop, back.OpenLoop)
	require.Equal(t, c.SLO, back.SLO)

	// A closed loop says nothing of loads in its settings.
	b.Reset()
	require.NoError(t, WriteSettings(&b, Default()))
	require.NotContains(t, b.String(), "rate =")
	require.NotContains(t, b.String(), "burstiness")
	require.NotContains(t, b.String(), "[slo]")
	require.Equal(t, 1.0, Default().OpenLoop.Shape(), "unset burstiness is Poisson")
}

func TestLoadSettingsErrors(t *testing.T) {
	_, err := Load(Env(env(map[string]string{EnvRate: "0,x,2,2", EnvBurstiness: "0", EnvMaxConcurrency: "-1", EnvLoadSeed: "-3", EnvSLO: "fast", EnvSLOGoodput: "1.5"})))
	for _, want := range []string{
		`VETBENCH_RATE="0,x,2,2": "0" is not a rate > 0`,
		`VETBENCH_BURSTINESS="0": want a number > 0`,
		`VETBENCH_MAX_CONCURRENCY="-1"`,
		`VETBENCH_LOAD_SEED="-3"`,
		`VETBENCH_SLO="fast"`,
		`VETBENCH_SLO_GOODPUT="1.5"`,
	} {
		require.ErrorContains(t, err, want)
	}
	_, err = Load(Env(env(map[string]string{EnvRate: "2,2"})))
	require.ErrorContains(t, err, "rate 2 given twice")
	_, err = Load(Env(env(map[string]string{EnvSLOGoodput: "0.95"})))
	require.ErrorContains(t, err, "VETBENCH_SLO_GOODPUT is set but neither VETBENCH_SLO, VETBENCH_SLO_TTFT nor VETBENCH_SLO_TPOT is")
	_, err = Load(Env(env(map[string]string{EnvSLOGoodput: "0.95", EnvSLOTPOT: "40ms"})))
	require.NoError(t, err, "a token run's target is one")
}
