package speed

import (
	"cmp"
	"fmt"
	"math"
	"strings"

	"golang.org/x/perf/benchmath"
)

// Power is whether the runs given can find a metric worse at all: under
// Holm the first metric must reach p < alpha/m, and a Mann–Whitney U test
// of n1 and n2 runs gives no p below that of two fully separated samples
// (2/C(n1+n2, n1)). With 5 runs a side and 48 tested metrics that is
// 0.0079 against 0.00104: the gate could never fail. A metric whose runs
// cannot reach Threshold, and that Holm's later steps did not find
// significant either, is too_few_runs: not decided.
type Power struct {
	// Tested counts the gated metrics a statistical test decides (assume=
	// exact counts are compared exactly): Holm's m.
	Tested int `json:"tested"`
	// Threshold is the p a metric must get below to be found worse on its
	// own: alpha/Tested with Holm, alpha without.
	Threshold float64 `json:"threshold"`
	// MinCount is the least number of runs per side with which every tested
	// metric can reach Threshold (0: none tested, or more than maxCount).
	MinCount int `json:"min_count"`
	// TooFewRuns counts the tested metrics left undecided for want of runs.
	TooFewRuns int `json:"too_few_runs"`
	// Allowed says Policy.AllowFewRuns let the others decide.
	Allowed bool `json:"allowed"`
}

// maxCount bounds the search for MinCount (100 runs a side reach p ~ 1e-58).
const maxCount = 100

// MinP is the smallest p-value benchmath's comparison under a can give
// with n1 and n2 runs, asked of benchmath itself: its p for two fully
// separated samples of those sizes (its two-sided Mann–Whitney U test for
// benchmath.AssumeNothing: 2/C(n1+n2, n1) while exact, n ≤ 50; ties within
// a side only raise it there). assume=exact compares without a test (0); a
// t test (AssumeNormal) gets as near 0 as the gap is wide, from 2 runs a
// side. 1 when a side has no runs.
func MinP(a benchmath.Assumption, n1, n2 int) float64 {
	switch {
	case a == benchmath.AssumeExact:
		return 0
	case n1 < 1 || n2 < 1:
		return 1
	}
	gap := float64(n1) // ranks 0…n1−1 against n1…n1+n2−1
	if a == benchmath.AssumeNormal {
		gap = 1e12
	}
	x1, x2 := make([]float64, n1), make([]float64, n2)
	for i := range x1 {
		x1[i] = float64(i)
	}
	for i := range x2 {
		x2[i] = gap + float64(i)
	}
	thr := &benchmath.Thresholds{CompareAlpha: DefaultAlpha}
	return a.Compare(benchmath.NewSample(x1, thr), benchmath.NewSample(x2, thr)).P
}

// MinCount is the least number of runs per side with which a comparison
// under a can give p < threshold; 0 when no count up to 100 can.
func MinCount(a benchmath.Assumption, threshold float64) int {
	return MinCountAgainst(a, threshold, 0)
}

// MinCountAgainst is the least number of runs of one side with which a
// comparison under a against other runs of the other side can give
// p < threshold (other 0: as many as its own, MinCount); 0 when no count
// up to 100 can. A side read from a file has its runs already.
func MinCountAgainst(a benchmath.Assumption, threshold float64, other int) int {
	for n := 1; n <= maxCount; n++ {
		if reaches(MinP(a, n, cmp.Or(other, n)), threshold) {
			return n
		}
	}
	return 0
}

// reaches says a best p of minP can get below threshold: the one test of
// whether runs suffice, before measuring and after.
func reaches(minP, threshold float64) bool { return minP < threshold }

// threshold is the p a metric must get below on its own with tested
// metrics in the family: alpha/tested with Holm, alpha without.
func threshold(p Policy, tested int) float64 {
	if p.Holm && tested > 0 {
		return p.Alpha / float64(tested)
	}
	return p.Alpha
}

// tested says m is decided by a statistical test: Holm's family.
func tested(m Metric) bool { return m.Verdict == "" && m.P != nil && m.dir != 0 && !m.exact }

// power sets each tested metric's MinP and says what the runs can reach
// against the strictest threshold the correction applies.
func power(ms []Metric, p Policy) Power {
	pw := Power{Allowed: p.AllowFewRuns}
	cache := map[[3]any]float64{}
	for i := range ms {
		m := &ms[i]
		if !tested(*m) {
			continue
		}
		pw.Tested++
		key := [3]any{m.assume, m.Baseline.N, m.Candidate.N}
		mp, ok := cache[key]
		if !ok {
			mp = MinP(m.assume, m.Baseline.N, m.Candidate.N)
			cache[key] = mp
		}
		m.MinP = &mp
	}
	pw.Threshold = threshold(p, pw.Tested)
	counts := map[benchmath.Assumption]int{}
	unreachable := false
	for _, m := range ms {
		if m.MinP == nil {
			continue
		}
		c, ok := counts[m.assume]
		if !ok {
			c = MinCount(m.assume, pw.Threshold)
			counts[m.assume] = c
		}
		unreachable = unreachable || c == 0
		pw.MinCount = max(pw.MinCount, c)
	}
	if unreachable {
		pw.MinCount = 0
	}
	return pw
}

// underpowered says a tested metric's runs cannot reach the threshold and
// no step of the correction found it significant: it is not decided.
func underpowered(m *Metric, pw Power) bool {
	return m.MinP != nil && !reaches(*m.MinP, pw.Threshold) && !m.Significant
}

// fewRunsProblems says, per pair of run counts, which tested metrics were
// left undecided for want of runs, what the test needs and reaches, and
// the fix: a problem (no verdict) unless the policy allows few runs and
// some tested metric was decided.
func fewRunsProblems(rep *Report, p Policy) {
	pw := rep.Power
	if pw.TooFewRuns == 0 || pw.Allowed && pw.TooFewRuns < pw.Tested {
		return
	}
	type group struct {
		n1, n2 int
		minP   float64
		names  []string
	}
	var groups []*group
	for _, m := range rep.Metrics {
		if m.Verdict != FewRuns {
			continue
		}
		var g *group
		for _, x := range groups {
			if x.n1 == m.Baseline.N && x.n2 == m.Candidate.N && x.minP == *m.MinP {
				g = x
			}
		}
		if g == nil {
			g = &group{n1: m.Baseline.N, n2: m.Candidate.N, minP: *m.MinP}
			groups = append(groups, g)
		}
		g.names = append(g.names, m.Benchmark+" "+m.Unit)
	}
	for _, g := range groups {
		rep.Problems = append(rep.Problems, fewRunsLine(pw, p, g.n1, g.n2, g.minP, g.names))
	}
}

// fewRunsLine is one too-few-runs problem: "too few runs: with 48 tested
// metrics Holm needs p < 0.00104; 5 vs 5 runs reach at best p = 0.0079;
// use -count 7 or more (or gate at most 6 metrics, or -holm=false)".
func fewRunsLine(pw Power, p Policy, n1, n2 int, minP float64, names []string) string {
	var b strings.Builder
	b.WriteString("too few runs")
	if len(names) < pw.Tested {
		fmt.Fprintf(&b, " on %d of %d tested metrics (%s)", len(names), pw.Tested, listNames(names, 3))
	}
	or := writeNeeds(&b, pw, p, n1, n2, minP, "")
	if len(names) < pw.Tested && !pw.Allowed {
		or = append(or, fmt.Sprintf("-allow-few-runs to gate the other %d", pw.Tested-len(names)))
	}
	if len(or) > 0 {
		fmt.Fprintf(&b, " (or %s)", strings.Join(or, ", or "))
	}
	return b.String()
}

// writeNeeds writes what the test needs, what n1 vs n2 runs reach and the
// count that suffices (the figures of a too-few-runs line, before
// measuring and after), and returns the other fixes. prefix goes before
// the tested count ("at least " while it is a bound).
func writeNeeds(b *strings.Builder, pw Power, p Policy, n1, n2 int, minP float64, prefix string) (or []string) {
	if p.Holm {
		fmt.Fprintf(b, ": with %s%d tested metric%s Holm needs p < %.3g", prefix, pw.Tested, plural(pw.Tested), pw.Threshold)
	} else {
		fmt.Fprintf(b, ": p < %g is needed", p.Alpha)
	}
	fmt.Fprintf(b, "; %d vs %d runs reach at best p = %.2g", n1, n2, minP)
	if pw.MinCount > 0 {
		fmt.Fprintf(b, "; use -count %d or more", pw.MinCount)
	} else {
		b.WriteString("; use many more runs")
	}
	if p.Holm && reaches(minP, p.Alpha) {
		// minP < alpha/m holds for every m below alpha/minP.
		if most := int(math.Ceil(p.Alpha/minP)) - 1; most >= 1 && most < pw.Tested {
			or = append(or, fmt.Sprintf("gate at most %d metric%s", most, plural(most)))
		}
		or = append(or, "-holm=false")
	}
	return or
}

// FewRunsAhead is, before any run is measured, why n1 vs n2 runs a side
// cannot decide at least tested metrics of the U test (units without
// assume=) under p, in the words of the too-few-runs problem Decide would
// give then; "" when they may. fixed says a side is read from a file: its
// runs are what they are, so the count to use is the other side's against
// them. Tested is only a bound before measuring, and the fewest metrics
// give the loosest threshold: so runs that cannot reach it cannot reach
// the gate's.
func FewRunsAhead(p Policy, tested, n1, n2 int, fixed [2]bool) string {
	a := benchmath.AssumeNothing
	pw := Power{Tested: tested, Threshold: threshold(p, tested)}
	minP := MinP(a, n1, n2)
	if tested < 1 || reaches(minP, pw.Threshold) {
		return ""
	}
	switch {
	case fixed[0] && !fixed[1]:
		pw.MinCount = MinCountAgainst(a, pw.Threshold, n1)
	case fixed[1] && !fixed[0]:
		pw.MinCount = MinCountAgainst(a, pw.Threshold, n2)
	default:
		pw.MinCount = MinCount(a, pw.Threshold)
	}
	var b strings.Builder
	b.WriteString("too few runs")
	if or := writeNeeds(&b, pw, p, n1, n2, minP, "at least "); len(or) > 0 {
		fmt.Fprintf(&b, " (or %s)", strings.Join(or, ", or "))
	}
	return b.String()
}

// listNames is the first n names and how many more.
func listNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(", … and %d more", len(names)-n)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
