package decode_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"

	"github.com/vetbench/vetbench/bench/decode"
	"github.com/vetbench/vetbench/bench/decode/tokenstest"
	"github.com/vetbench/vetbench/bench/metrics"
	"github.com/vetbench/vetbench/receipts/speed"
	"github.com/vetbench/vetbench/receipts/tokens"
)

// The lines a token benchmark prints are what benchstat reads: the
// testing package's own result format (testing.Benchmark), our Unit lines
// and configuration lines, read back by benchfmt (benchstat's reader) with
// every value, direction and key intact.
func TestBenchstatReadsTheTokenBenchmark(t *testing.T) {
	t.Parallel()
	srv := start(t, tokenstest.Config{})
	rec, err := runner(t, srv, decode.WithClock(newTick().Now)).Measure(t.Context(), point(tokens.WorkloadText, 2, 10, 2, 0))
	require.NoError(t, err)
	ms := decode.Metrics(rec)
	res := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(0, "ns/op")
		metrics.Report(b, ms)
	})
	var out strings.Builder
	for _, u := range decode.Units() {
		out.WriteString(u.Line() + "\n")
	}
	for _, l := range speed.ConfigLines(map[string]string{speed.KeyTarget: "twin", speed.KeyTwinProfile: "fast", speed.KeyTokens: "output=10"}) {
		out.WriteString(l + "\n")
	}
	out.WriteString("goos: linux\n")
	out.WriteString("BenchmarkTokens/workload=text/c=2-2\t" + res.String() + "\n")

	rd := benchfmt.NewReader(strings.NewReader(out.String()), "bench.txt")
	var got *benchfmt.Result
	for rd.Scan() {
		switch r := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Fatal(r)
		case *benchfmt.Result:
			got = r.Clone()
		}
	}
	require.NoError(t, rd.Err())
	require.NotNil(t, got)
	require.Equal(t, "twin", got.GetConfig("target-kind"))
	require.Equal(t, "fast", got.GetConfig("twin-profile"))
	require.Equal(t, "output=10", got.GetConfig("tokens"))
	require.Regexp(t, `^[0-9a-f]{16}$`, got.GetConfig("identity"))
	name := got.Name.Full()
	require.Equal(t, "Tokens/workload=text/c=2-2", string(name))
	values := map[string]float64{}
	for _, v := range got.Values {
		values[v.Unit] = v.Value
	}
	for _, m := range ms {
		require.InEpsilon(t, m.Value+1e-12, values[m.Unit]+1e-12, 1e-3, m.Unit)
	}
	units := rd.Units()
	for _, u := range decode.Units() {
		want := map[string]int{metrics.Higher: 1, metrics.Lower: -1}[u.Better]
		require.Equal(t, want, units.GetBetter(u.Name), u.Name)
	}
	require.Equal(t, benchmath.AssumeExact, units.GetAssumption(decode.FailedRequests))
}
