package speed_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/speed"
)

// withConfig is benchOutput with the suite's configuration lines in front.
func withConfig(t *testing.T, seed uint64, s truth, cfg map[string]string) *speed.Samples {
	t.Helper()
	out := strings.Join(speed.ConfigLines(cfg), "\n") + "\n" + benchOutput(rand.New(rand.NewPCG(seed, 9)), s, 10, "x")
	sm, err := speed.Load(strings.NewReader(out), "gen")
	require.NoError(t, err)
	return sm
}

func twin(profile string) map[string]string {
	return map[string]string{
		speed.KeyTarget: "twin", speed.KeyModel: "google/gemma-4-31B-it", speed.KeyServedRoot: "google/gemma-4-31B-it",
		speed.KeyTwinProfile: profile, speed.KeyTimeScale: "1", speed.KeyFixture: "checks=0123456789ab",
		speed.KeyServerBuild: "0.0.0-twin", speed.KeySlowdown: "1", speed.KeyHarness: "vetbench/0.1",
	}
}

func TestGateRefusesAnotherIdentity(t *testing.T) {
	t.Parallel()
	fast := withConfig(t, 1, base, twin("fast"))
	h100 := withConfig(t, 2, slowed(base), twin("h100-gemma4-31b"))
	rep := speed.Decide(fast, h100, speed.DefaultPolicy())
	require.True(t, rep.NoVerdict(), "refused, not failed")
	require.False(t, rep.Failed())
	require.Empty(t, rep.Metrics, "no statistics on apples and oranges")
	require.Equal(t, []string{"twin-profile: fast → h100-gemma4-31b"}, rep.Identity.Differs)
	require.Contains(t, rep.Problems[0], "identity differs, not the same experiment: twin-profile: fast → h100-gemma4-31b")
	var b strings.Builder
	require.NoError(t, rep.WriteText(&b))
	require.Contains(t, b.String(), "identity differs: twin-profile: fast → h100-gemma4-31b")
	require.Contains(t, b.String(), "NO VERDICT")

	// Several keys: each is listed.
	live := twin("")
	live[speed.KeyTarget] = "live"
	delete(live, speed.KeyTwinProfile)
	delete(live, speed.KeyTimeScale)
	rep = speed.Decide(fast, withConfig(t, 3, base, live), speed.DefaultPolicy())
	require.Equal(t, []string{"target-kind: twin → live"}, rep.Identity.Differs)
	require.ElementsMatch(t, []string{"twin-profile (only the baseline records it)", "time-scale (only the baseline records it)"}, rep.Identity.Unverified)

	// Allowed: the statistics run and the drift is still listed.
	p := speed.DefaultPolicy()
	p.AllowIdentityDrift = true
	rep = speed.Decide(fast, h100, p)
	require.True(t, rep.Failed(), "the slower candidate fails once compared")
	require.True(t, rep.Identity.Allowed)
	b.Reset()
	require.NoError(t, rep.WriteText(&b))
	require.Contains(t, b.String(), "identity differs (allowed): twin-profile: fast → h100-gemma4-31b")
}

// The dispatch changes what a judgment's latency is: two runs that differ
// in it are two experiments, refused like two twin profiles, unless drift
// is allowed. Outputs from before the typevet dispatch say "fan-out: on"
// or "off": they are read as fan-out and in-order, so they compare with
// newer outputs of the same dispatch and are refused against a typevet run.
func TestGateRefusesMixedDispatch(t *testing.T) {
	t.Parallel()
	// side is an output whose configuration states dispatch d, or, for
	// "fan-out: on|off", the older line instead (ConfigLines no longer
	// writes it).
	side := func(seed uint64, d string) *speed.Samples {
		cfg := twin("fast")
		head := ""
		if v, ok := strings.CutPrefix(d, "fan-out: "); ok {
			head = speed.KeyFanOut + ": " + v + "\n"
		} else {
			cfg[speed.KeyDispatch] = d
		}
		out := head + strings.Join(speed.ConfigLines(cfg), "\n") + "\n" + benchOutput(rand.New(rand.NewPCG(seed, 9)), base, 10, "x")
		sm, err := speed.Load(strings.NewReader(out), "gen")
		require.NoError(t, err)
		return sm
	}
	for _, tc := range []struct{ base, cand, differs string }{
		{"in-order", "fan-out", "dispatch: in-order → fan-out"},
		{"in-order", "typevet", "dispatch: in-order → typevet"},
		{"fan-out: off", "typevet", "dispatch: in-order → typevet"},
		{"fan-out: on", "typevet", "dispatch: fan-out → typevet"},
		{"fan-out: off", "fan-out: on", "dispatch: in-order → fan-out"},
	} {
		rep := speed.Decide(side(11, tc.base), side(12, tc.cand), speed.DefaultPolicy())
		require.True(t, rep.NoVerdict(), tc.differs)
		require.Equal(t, []string{tc.differs}, rep.Identity.Differs)
		p := speed.DefaultPolicy()
		p.AllowIdentityDrift = true
		rep = speed.Decide(side(11, tc.base), side(12, tc.cand), p)
		require.False(t, rep.NoVerdict(), "-allow-identity-drift compares them: %v", rep.Problems)
	}
	// Positive controls: the same dispatch on both sides, and an older
	// output's "fan-out: off" against a newer in-order one, go to the
	// statistics.
	for _, pair := range [][2]string{{"typevet", "typevet"}, {"fan-out: off", "in-order"}, {"fan-out: on", "fan-out"}} {
		rep := speed.Decide(side(11, pair[0]), side(12, pair[1]), speed.DefaultPolicy())
		require.Empty(t, rep.Identity.Differs, pair)
		require.Empty(t, rep.Identity.Unverified, pair)
		require.True(t, rep.Passed, "%v", rep.Problems)
	}
}

func TestGateSameIdentityGoesToTheStatistics(t *testing.T) {
	t.Parallel()
	cfg := twin("fast")
	rep := speed.Decide(withConfig(t, 4, base, cfg), withConfig(t, 5, base, cfg), speed.DefaultPolicy())
	require.True(t, rep.Passed, "%v", rep.Problems)
	require.Equal(t, 8, rep.Gated)
	require.Empty(t, rep.Identity.Differs)

	// A slowed twin is the candidate's change: listed, never refused; the
	// statistics decide.
	slow := twin("fast")
	slow[speed.KeySlowdown] = "1.2"
	slow[speed.KeyServerBuild] = "0.0.1-twin"
	rep = speed.Decide(withConfig(t, 4, base, cfg), withConfig(t, 6, slowed(base), slow), speed.DefaultPolicy())
	require.True(t, rep.Failed())
	require.Equal(t, []string{"server-build: 0.0.0-twin → 0.0.1-twin", "slowdown: 1 → 1.2"}, rep.Identity.Changed)

	// Outputs without identity lines (older runs) compare as before.
	rep = speed.Decide(load(t, 7, base, 10), load(t, 8, base, 10), speed.DefaultPolicy())
	require.True(t, rep.Passed)
}

func TestGateRefusesAMixedSide(t *testing.T) {
	t.Parallel()
	a := strings.Join(speed.ConfigLines(twin("fast")), "\n") + "\n" + benchOutput(rand.New(rand.NewPCG(1, 9)), base, 5, "x")
	b := strings.Join(speed.ConfigLines(twin("h100-gemma4-31b")), "\n") + "\n" + benchOutput(rand.New(rand.NewPCG(2, 9)), base, 5, "x")
	mixed, err := speed.Load(strings.NewReader(a+b), "cat")
	require.NoError(t, err)
	rep := speed.Decide(mixed, withConfig(t, 3, base, twin("fast")), speed.DefaultPolicy())
	require.Equal(t, []string{"twin-profile: the baseline mixes fast, h100-gemma4-31b"}, rep.Identity.Differs)
	require.True(t, rep.NoVerdict())
}

func TestConfigLines(t *testing.T) {
	t.Parallel()
	cfg := twin("fast")
	cfg[speed.KeyServerFlags] = "--max-num-seqs 32\n--enable-prefix-caching"
	cfg["goos"] = "plan9"
	lines := speed.ConfigLines(cfg)
	require.Equal(t, "target-kind: twin", lines[0])
	require.Contains(t, lines, "server-flags: --max-num-seqs 32 --enable-prefix-caching", "one line")
	require.NotContains(t, strings.Join(lines, "\n"), "goos", "not ours to print")
	require.Regexp(t, `^identity: [0-9a-f]{16}$`, lines[len(lines)-1])
	// The digest covers identity, not changes.
	slow := twin("fast")
	slow[speed.KeySlowdown] = "1.2"
	require.Equal(t, speed.IdentityDigest(twin("fast")), speed.IdentityDigest(slow))
	require.NotEqual(t, speed.IdentityDigest(twin("fast")), speed.IdentityDigest(twin("h100-gemma4-31b")))
}

// How many endpoints a run spread over is a change, listed: an output that
// does not say measured one.
func TestGateListsEndpoints(t *testing.T) {
	t.Parallel()
	three := twin("fast")
	three[speed.KeyEndpoints] = "3"
	rep := speed.Decide(withConfig(t, 4, base, twin("fast")), withConfig(t, 5, base, three), speed.DefaultPolicy())
	require.Equal(t, []string{"endpoints: 1 → 3"}, rep.Identity.Changed)
	require.Empty(t, rep.Identity.Differs)
	rep = speed.Decide(withConfig(t, 4, base, three), withConfig(t, 5, base, twin("fast")), speed.DefaultPolicy())
	require.Equal(t, []string{"endpoints: 3 → 1"}, rep.Identity.Changed)
	rep = speed.Decide(withConfig(t, 4, base, three), withConfig(t, 5, base, three), speed.DefaultPolicy())
	require.Empty(t, rep.Identity.Changed)
	require.Equal(t, speed.IdentityDigest(twin("fast")), speed.IdentityDigest(three), "not part of the identity")
}
