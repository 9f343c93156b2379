package tally

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vetbench/vetbench/receipts"
)

// SumServers is the total server block of a window spread over several
// endpoints, computed from the endpoints' own blocks (each a scrape.Diff of
// that endpoint): counters and histogram counts and sums add up, gauges add
// up (a ratio gauge, *_perc, is the highest endpoint's, as scrape does for
// engines), and the hit rates are recomputed from the summed counters — the
// hits of every endpoint's cache over its queries, never a mean of rates.
// Percentiles of a sum are not sums: the total's histograms carry none
// (each endpoint's block keeps its own). A figure some endpoint lacks is
// left out of the total and named in Problems; an endpoint whose block is
// unknown (a failed scrape) makes the total unknown. Engines stay in the
// endpoints' blocks. names label the problems (the endpoints' URLs).
func SumServers(names []string, parts []*receipts.Server) *receipts.Server {
	if len(parts) == 0 {
		return nil
	}
	name := func(i int) string {
		if i < len(names) && names[i] != "" {
			return names[i]
		}
		return fmt.Sprintf("endpoint %d", i)
	}
	var unknown, problems []string
	for i, p := range parts {
		switch {
		case p == nil:
			unknown = append(unknown, name(i)+": no server figures")
		case strings.HasPrefix(p.Status, "unknown"):
			unknown = append(unknown, name(i)+": "+p.Status)
		}
		if p != nil {
			for _, pr := range p.Problems {
				problems = append(problems, name(i)+": "+pr)
			}
		}
	}
	out := &receipts.Server{Gauges: sumGauges(parts)}
	if len(unknown) > 0 {
		out.Status = "unknown: " + strings.Join(unknown, "; ")
		out.Problems = problems
		return out
	}
	var missing []string
	out.Counters, missing = sumFigures(parts, func(s *receipts.Server) map[string]float64 { return s.Counters })
	for _, k := range missing {
		problems = append(problems, "counter "+k+": not read at every endpoint, no total")
	}
	out.Extra, missing = sumFigures(parts, func(s *receipts.Server) map[string]float64 { return s.Extra })
	for _, k := range missing {
		problems = append(problems, "extra "+k+": not read at every endpoint, no total")
	}
	if len(out.Extra) == 0 {
		out.Extra = nil
	}
	out.Histograms = map[string]receipts.Histogram{}
	for k, h := range parts[0].Histograms {
		sum := receipts.Histogram{Status: h.Status}
		ok := true
		for _, p := range parts {
			ph, found := p.Histograms[k]
			if !found || ph.Status != h.Status {
				ok = false
				break
			}
			sum.Count += ph.Count
			sum.Sum += ph.Sum
		}
		if !ok {
			problems = append(problems, "histogram "+k+": not read alike at every endpoint, no total")
			continue
		}
		out.Histograms[k] = sum
	}
	problems = append(problems, HitRates(out)...)
	// A ratio of sums is a ratio of counters (external hit rate…): the
	// endpoints' own ratios do not add up.
	for k := range out.Extra {
		if strings.HasSuffix(k, "_rate") {
			delete(out.Extra, k)
		}
	}
	slices.Sort(problems)
	out.Problems = problems
	out.Status = "ok"
	if len(problems) > 0 {
		out.Status = fmt.Sprintf("partial: %d problem(s), see problems", len(problems))
	}
	return out
}

// sumFigures adds up the keys every part has; the keys some lack are
// returned, sorted.
func sumFigures(parts []*receipts.Server, of func(*receipts.Server) map[string]float64) (map[string]float64, []string) {
	keys := map[string]bool{}
	for _, p := range parts {
		for k := range of(p) {
			keys[k] = true
		}
	}
	out := map[string]float64{}
	var missing []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		var sum float64
		ok := true
		for _, p := range parts {
			v, found := of(p)[k]
			if !found {
				ok = false
				break
			}
			sum += v
		}
		if !ok {
			missing = append(missing, k)
			continue
		}
		out[k] = sum
	}
	return out, missing
}

// sumGauges adds each gauge's before and after readings over the parts
// (nil when any part lacks one); a *_perc gauge (a share, such as KV cache
// usage) takes the highest instead.
func sumGauges(parts []*receipts.Server) map[string]receipts.GaugePair {
	keys := map[string]bool{}
	for _, p := range parts {
		if p != nil {
			for k := range p.Gauges {
				keys[k] = true
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	out := map[string]receipts.GaugePair{}
	for k := range keys {
		highest := strings.HasSuffix(k, "_perc")
		edge := func(get func(receipts.GaugePair) *float64) *float64 {
			var v float64
			for i, p := range parts {
				if p == nil {
					return nil
				}
				x := get(p.Gauges[k])
				if x == nil {
					return nil
				}
				if highest && i > 0 {
					v = max(v, *x)
				} else if highest {
					v = *x
				} else {
					v += *x
				}
			}
			return &v
		}
		out[k] = receipts.GaugePair{
			Before: edge(func(g receipts.GaugePair) *float64 { return g.Before }),
			After:  edge(func(g receipts.GaugePair) *float64 { return g.After }),
		}
	}
	return out
}
