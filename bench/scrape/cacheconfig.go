package scrape

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// CacheConfig returns the labels of vllm:cache_config_info (block size,
// dtype, prefix caching on/off, GPU blocks, …), or nil when the reading
// failed or the server does not expose it.
//
// vLLM exposes one series per data-parallel engine. The "engine" key lists
// the engines ("0,1"); a key on which engines disagree is not resolved but
// spelled out per engine ("engine 0: 16; engine 1: 32"), so a comparison of
// two receipts shows it.
func CacheConfig(s Snapshot) map[string]string {
	if s.Err != nil {
		return nil
	}
	f := s.Families[CacheConfigMetric]
	if f == nil || len(f.GetMetric()) == 0 {
		return nil
	}
	perEngine := map[string]map[string]string{}
	keys := map[string]struct{}{}
	for _, m := range f.GetMetric() {
		lb := labelMap(m)
		perEngine[lb["engine"]] = lb
		for k := range lb {
			if k != "engine" {
				keys[k] = struct{}{}
			}
		}
	}
	engines := slices.Sorted(maps.Keys(perEngine))
	out := map[string]string{}
	if len(engines) > 1 || engines[0] != "" {
		out["engine"] = strings.Join(engines, ",")
	}
	for k := range keys {
		vals := map[string]struct{}{}
		for _, e := range engines {
			vals[perEngine[e][k]] = struct{}{}
		}
		if len(vals) == 1 {
			out[k] = perEngine[engines[0]][k]
			continue
		}
		parts := make([]string, len(engines))
		for i, e := range engines {
			parts[i] = fmt.Sprintf("engine %s: %s", e, perEngine[e][k])
		}
		out[k] = strings.Join(parts, "; ")
	}
	return out
}

// TwinTimeScaleMetric is the series a vetbench twin advertises its time
// scale in: how many model seconds each wall second holds.
const TwinTimeScaleMetric = "vetbench_twin_time_scale"

// TwinTimeScale is the time scale a vetbench twin advertises (the largest
// its engines report), or 0 when the reading failed or the server is not
// a twin: a vLLM has no such series.
func TwinTimeScale(s Snapshot) float64 {
	if s.Err != nil {
		return 0
	}
	f := s.Families[TwinTimeScaleMetric]
	scale := 0.0
	for _, m := range f.GetMetric() {
		scale = max(scale, m.GetGauge().GetValue())
	}
	return scale
}
