package receipts

import (
	"fmt"
	"strconv"
	"strings"
)

// How a server build counts prefix-cache queries. Before vllm#48860 the
// scheduler recorded a request's lookup every step it ran it, so a request
// blocked by KV space (it stays waiting) was counted again at each step;
// #48860 (opened 2026-07-16, the day after vLLM 0.25.1) records it once, at
// admission. Hit rates measured under KV pressure on the two sides do not
// compare.
type PrefixCounting int

// Sides of the #48860 boundary.
const (
	// CountingUnknown: the build may be on either side (vLLM 0.26.0 or
	// later: the first release with #48860 is not pinned here; a dev or rc
	// build; no build recorded).
	CountingUnknown PrefixCounting = iota
	// CountingAtLookup: a vLLM release up to 0.25.x, before #48860.
	CountingAtLookup
	// CountingAtAdmission: the twin, which counts at admission.
	CountingAtAdmission
)

// LastReleaseCountingAtLookup is the last vLLM release surely before
// vllm#48860.
const LastReleaseCountingAtLookup = "0.25"

// PrefixCountingOf says on which side of vllm#48860 a server build
// (/version, e.g. "0.30.0", "0.25.1", "0.30.0+vetbench.twin") is.
func PrefixCountingOf(build string) PrefixCounting {
	base, local, _ := strings.Cut(strings.TrimSpace(build), "+")
	if strings.HasPrefix(local, "vetbench.twin") {
		return CountingAtAdmission
	}
	parts := strings.Split(base, ".")
	if len(parts) < 2 {
		return CountingUnknown
	}
	nums := make([]int, 0, 3)
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return CountingUnknown // rc, dev and post builds: no telling
		}
		nums = append(nums, n)
	}
	if nums[0] == 0 && nums[1] <= 25 {
		return CountingAtLookup
	}
	return CountingUnknown
}

// PrefixCountingNote says, in a sentence, why prefix-cache hit rates of a
// baseline build and a candidate build may not compare (vllm#48860), or ""
// when nothing stands between them.
func PrefixCountingNote(baseBuild, candBuild string) string {
	if baseBuild == candBuild {
		return ""
	}
	a, b := PrefixCountingOf(baseBuild), PrefixCountingOf(candBuild)
	show := func(s string) string {
		if s == "" {
			return "unknown build"
		}
		return "vLLM " + s
	}
	const why = "vllm#48860 moved prefix-cache query counting from every scheduling step to admission, so under KV pressure (requests waiting for blocks) hit rates on the two sides do not compare"
	switch {
	case a == b && a != CountingUnknown:
		return ""
	case a != CountingUnknown && b != CountingUnknown:
		return fmt.Sprintf("prefix hit rates cross vllm#48860 (baseline %s, candidate %s): %s", show(baseBuild), show(candBuild), why)
	default:
		return fmt.Sprintf("prefix hit rates may cross vllm#48860 (baseline %s, candidate %s; its first release is not pinned, releases after %s.x may have it): %s",
			show(baseBuild), show(candBuild), LastReleaseCountingAtLookup, why)
	}
}
