package speed_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/receipts/speed"
)

// TestOutcome: a failed baseline run leaves no verdict even when the
// candidate failed too; a failed candidate run fails whatever the
// statistics said; otherwise the report's own verdict.
func TestOutcome(t *testing.T) {
	t.Parallel()
	boom := errors.New("server down")
	cases := []struct {
		name       string
		problems   []string
		failures   []string
		base, cand error
		want       speed.Outcome
	}{
		{"pass", nil, nil, nil, nil, speed.Pass},
		{"slower", nil, []string{"sec/op worse"}, nil, nil, speed.Slower},
		{"no verdict", []string{"too few runs"}, nil, nil, nil, speed.NoVerdict},
		{"candidate run failed", nil, nil, nil, boom, speed.Slower},
		{"candidate run failed, too few runs", []string{"too few runs"}, nil, nil, boom, speed.Slower},
		{"baseline run failed", nil, nil, boom, nil, speed.NoVerdict},
		{"both runs failed", nil, nil, boom, boom, speed.NoVerdict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rep := &speed.Report{Problems: c.problems, Failures: c.failures, Passed: len(c.problems)+len(c.failures) == 0}
			rep.AddRuns(c.base, c.cand)
			require.Equal(t, c.want, rep.Outcome())
			if c.cand != nil {
				require.Contains(t, rep.Failures, "candidate run failed: server down")
			}
			if c.base != nil {
				require.Contains(t, rep.Problems, "baseline run failed: server down")
			}
		})
	}
}

func TestRefusedAndFloor(t *testing.T) {
	t.Parallel()
	require.False(t, speed.IdentityCheck{}.Refused())
	require.True(t, speed.IdentityCheck{Differs: []string{"model: a → b"}}.Refused())
	require.False(t, speed.IdentityCheck{Differs: []string{"model: a → b"}, Allowed: true}.Refused())

	p := speed.DefaultPolicy()
	require.NoError(t, p.SetFloor("goodput", 0))
	require.Empty(t, p.Floors, "0 is no floor")
	require.NoError(t, p.SetFloor("goodput", 0.9))
	require.Equal(t, map[string]float64{"goodput": 0.9}, p.Floors)
	require.EqualError(t, p.SetFloor("goodput", 1.5), "1.5: want a share from 0 to 1")
}

func TestLoadPair(t *testing.T) {
	t.Parallel()
	const good, nope = "testdata/twin/baseline.txt", "testdata/twin/nope.txt"
	boom := errors.New("server down")
	base, cand, err := speed.LoadPair([2]string{good, good}, [2]error{})
	require.NoError(t, err)
	require.NotNil(t, base)
	require.NotNil(t, cand)

	_, _, err = speed.LoadPair([2]string{nope, good}, [2]error{boom, nil})
	require.ErrorContains(t, err, "baseline: ")
	require.ErrorIs(t, err, boom, "the run's failure is said with the read error")
	_, _, err = speed.LoadPair([2]string{good, nope}, [2]error{})
	require.ErrorContains(t, err, "candidate: ")
	require.NotErrorIs(t, err, speed.ErrCandidateRun)
	// A candidate run that failed and left nothing: failed all the same,
	// unless the baseline's run failed too (then nothing is decided).
	_, _, err = speed.LoadPair([2]string{good, nope}, [2]error{nil, boom})
	require.ErrorIs(t, err, speed.ErrCandidateRun)
	require.ErrorIs(t, err, boom)
	_, _, err = speed.LoadPair([2]string{good, nope}, [2]error{boom, boom})
	require.NotErrorIs(t, err, speed.ErrCandidateRun)
}

// TestBenchstatArgs: keys that vary between the files are ignored, so
// benchstat compares the benchmarks instead of splitting its tables.
func TestBenchstatArgs(t *testing.T) {
	t.Parallel()
	const base, slowed = "testdata/twin/baseline.txt", "testdata/twin/slowed.txt"
	b, s := loadFile(t, base), loadFile(t, slowed)
	args := speed.BenchstatArgs(b, s, [2]string{base, slowed})
	require.Equal(t, []string{"tool", "benchstat"}, args[:2])
	require.Equal(t, []string{"baseline=" + base, "candidate=" + slowed}, args[len(args)-2:])
	require.NotEmpty(t, speed.VaryingConfig(b, s), "the slowed twin's lines say so")
	require.Equal(t, []string{"-ignore", strings.Join(speed.VaryingConfig(b, s), ",")}, args[2:4])
	require.Equal(t, []string{"tool", "benchstat", "baseline=" + base, "candidate=" + base}, speed.BenchstatArgs(b, b, [2]string{base, base}))
}

func loadFile(t *testing.T, path string) *speed.Samples {
	t.Helper()
	s, err := speed.LoadFile(path)
	require.NoError(t, err)
	return s
}
