package speed

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// Benchmark configuration keys: vetbench's suite prints them as benchfmt
// file configuration lines ("twin-profile: fast") before its results, so
// every output says what it measured.
const (
	// Identity: what must be equal for two outputs to be one experiment.
	KeyTarget      = "target-kind"  // twin or live (container and in-process twins are one)
	KeyModel       = "model"        // the model asked
	KeyServedRoot  = "served-root"  // its /v1/models root: the weights
	KeyTwinProfile = "twin-profile" // the twin's timing profile
	KeyTimeScale   = "time-scale"   // the twin's time scale
	KeyScoring     = "scoring"      // how judgments are asked
	KeyFixture     = "fixture"      // set=slice digest of every set
	KeyTokens      = "tokens"       // the token benchmark's output length
	KeyMatrix      = "matrix"       // the speed matrix's window and output
	KeyHarness     = "harness"      // vetbench's harness version
	KeyLoad        = "load"         // an open loop's arrival process (rates are in the names); absent: closed loop
	KeySLO         = "slo"          // the stated latency target and goodput; absent: none
	KeyDispatch    = "dispatch"     // how a judgment's requests are sent: in-order, fan-out or typevet
	// KeyFanOut is the dispatch's older line (on: fan-out, off: in-order);
	// Load reads it as KeyDispatch, so older outputs compare.
	KeyFanOut = "fan-out"

	// Changes: what a candidate changes on purpose. Listed when they
	// differ, never refused: gating a vLLM upgrade compares two builds.
	KeyServerBuild = "server-build"
	KeyServerFlags = "server-flags"
	KeySlowdown    = "slowdown"    // the twin slowed on purpose
	KeyTwinFaults  = "twin-faults" // faults injected into the twin
	// KeyEndpoints is how many endpoints the judgments were spread over,
	// recorded when more than one (an output without it measured one).
	KeyEndpoints = "endpoints"

	// KeyIdentity is the digest of the identity keys (IdentityDigest).
	KeyIdentity = "identity"
)

// IdentityKeys are refused when they differ; ChangeKeys are listed. Keys of
// neither list (goos, cpu, pkg, …) are ignored, as benchstat is told to.
var (
	IdentityKeys = []string{KeyTarget, KeyModel, KeyServedRoot, KeyTwinProfile, KeyTimeScale, KeyScoring, KeyFixture, KeyTokens, KeyMatrix, KeyHarness, KeyLoad, KeySLO, KeyDispatch}
	ChangeKeys   = []string{KeyServerBuild, KeyServerFlags, KeySlowdown, KeyTwinFaults, KeyEndpoints}
)

// unstated is what a change key means where an output does not record it.
var unstated = map[string]string{KeyEndpoints: "1"}

// IdentityDigest is the short hex sha256 over the identity keys cfg holds.
func IdentityDigest(cfg map[string]string) string {
	h := sha256.New()
	for _, k := range IdentityKeys {
		if v, ok := cfg[k]; ok {
			fmt.Fprintf(h, "%s=%s\n", k, v)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ConfigLines are cfg's identity and change keys as benchfmt configuration
// lines, in a fixed order, then the identity digest. Empty values are left
// out (unrecorded); a value is one line.
func ConfigLines(cfg map[string]string) []string {
	var out []string
	clean := map[string]string{}
	for _, k := range append(slices.Clone(IdentityKeys), ChangeKeys...) {
		v := strings.Join(strings.Fields(cfg[k]), " ")
		if v == "" {
			continue
		}
		clean[k] = v
		out = append(out, k+": "+v)
	}
	return append(out, KeyIdentity+": "+IdentityDigest(clean))
}

// IdentityCheck is what the configuration of two outputs says about
// comparing them.
type IdentityCheck struct {
	// Differs lists identity keys whose values differ (or vary within one
	// side): "twin-profile: fast → h100-gemma4-31b". The gate refuses to
	// compare unless drift is allowed.
	Differs []string `json:"differs"`
	// Changed lists change keys that differ: the candidate's change.
	Changed []string `json:"changed"`
	// Unverified names identity keys only one side records.
	Unverified []string `json:"unverified"`
	// Allowed says the comparison went ahead despite Differs.
	Allowed bool `json:"allowed"`
}

// CheckIdentity compares the configuration of two outputs.
func CheckIdentity(base, cand *Samples) IdentityCheck {
	c := IdentityCheck{Differs: []string{}, Changed: []string{}, Unverified: []string{}}
	compare := func(keys []string, into *[]string, unverified bool) {
		for _, k := range keys {
			b, inB := base.config[k]
			a, inC := cand.config[k]
			if v, ok := unstated[k]; ok && inB != inC {
				if !inB {
					b, inB = []string{v}, true
				} else {
					a, inC = []string{v}, true
				}
			}
			switch {
			case len(b) > 1:
				*into = append(*into, fmt.Sprintf("%s: the baseline mixes %s", k, strings.Join(b, ", ")))
			case len(a) > 1:
				*into = append(*into, fmt.Sprintf("%s: the candidate mixes %s", k, strings.Join(a, ", ")))
			case inB && inC && b[0] != a[0]:
				*into = append(*into, fmt.Sprintf("%s: %s → %s", k, b[0], a[0]))
			case inB != inC && unverified:
				side := "baseline"
				if inC {
					side = "candidate"
				}
				c.Unverified = append(c.Unverified, fmt.Sprintf("%s (only the %s records it)", k, side))
			}
		}
	}
	compare(IdentityKeys, &c.Differs, true)
	compare(ChangeKeys, &c.Changed, false)
	return c
}
