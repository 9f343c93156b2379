package stub

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// FaultKind names one way the twin misbehaves.
type FaultKind string

// Fault kinds. The first four act before the engine sees the request (it
// is not counted in request_success); the others let the engine serve it
// and then spoil the answer, except loop and stream-error, which change
// what the engine generates.
const (
	// FaultHTTP500 answers 500 with vLLM's InternalServerError body.
	FaultHTTP500 FaultKind = "http500"
	// FaultHTTP429 answers 429 with a Retry-After header.
	FaultHTTP429 FaultKind = "http429"
	// FaultHTTP400 answers 400 with a BadRequestError body.
	FaultHTTP400 FaultKind = "http400"
	// FaultEngineDead kills the engine: this and every later request get
	// 500 with vLLM's EngineDeadError message and /health answers 503
	// until Server.ReviveEngine.
	FaultEngineDead FaultKind = "engine-dead"
	// FaultSlow holds the answer back for Delay of wall-clock time (not
	// scaled: it exists to outlast a client's wall-clock timeout).
	FaultSlow FaultKind = "slow"
	// FaultReset closes the connection without an answer.
	FaultReset FaultKind = "reset"
	// FaultTruncate sends the first half of the JSON body (a complete HTTP
	// answer whose body does not parse).
	FaultTruncate FaultKind = "truncate"
	// FaultNoLogprobs sends "logprobs": null.
	FaultNoLogprobs FaultKind = "no-logprobs"
	// FaultMissingCandidate drops the first candidate from top_logprobs.
	FaultMissingCandidate FaultKind = "missing-candidate"
	// FaultNaN sends the first candidate's logprob as null (JSON cannot
	// carry NaN; a client must treat null as non-finite).
	FaultNaN FaultKind = "nan"
	// FaultLoop makes the generated text loop: from the second token on,
	// a cycle of a few words repeated to the end (what a loop detector
	// must catch).
	FaultLoop FaultKind = "loop"
	// FaultStreamError fails the request halfway through its output as a
	// generation error: a stream gets vLLM's error chunk and [DONE], a
	// non-streaming request a 500; the engine counts it as
	// finished_reason "error".
	FaultStreamError FaultKind = "stream-error"
)

// FaultKinds lists every kind, in documentation order.
var FaultKinds = []FaultKind{FaultHTTP500, FaultHTTP429, FaultHTTP400, FaultEngineDead, FaultSlow, FaultReset,
	FaultTruncate, FaultNoLogprobs, FaultMissingCandidate, FaultNaN, FaultLoop, FaultStreamError}

// Fault is one fault and when it fires. It fires on a chat completion
// request when every condition that is set holds: Every (the request's
// 1-based sequence number among chat requests is a multiple), After (the
// sequence number is above it), Match (the X-Request-Id contains it), Rate
// (a seeded draw is below it); Limit caps how many times it fires. A fault
// with no condition fires on every request. When several faults would
// fire, the first listed wins.
type Fault struct {
	Kind       FaultKind
	Rate       float64
	Every      int
	After      int
	Match      string
	Limit      int
	Delay      time.Duration // FaultSlow: default 30s
	RetryAfter int           // FaultHTTP429: seconds, default 1
	Seed       uint64        // Rate's generator seed
}

// ParseFault reads a fault spec: KIND[:key=value[,key=value…]] with keys
// rate, every, after, match, limit, delay (a Go duration), retry-after
// (seconds) and seed. Examples: "http500:rate=0.05,seed=7",
// "http429:every=10,retry-after=2", "slow:match=r03:,delay=5s",
// "engine-dead:after=100,limit=1". A match value cannot hold a comma.
func ParseFault(spec string) (Fault, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	f := Fault{Kind: FaultKind(kind)}
	known := false
	for _, k := range FaultKinds {
		known = known || k == f.Kind
	}
	if !known {
		return Fault{}, fmt.Errorf("fault %q: unknown kind %q (want one of %v)", spec, kind, FaultKinds)
	}
	if rest == "" {
		return f, nil
	}
	for _, kv := range strings.Split(rest, ",") {
		key, val, ok := strings.Cut(kv, "=")
		if !ok {
			return Fault{}, fmt.Errorf("fault %q: %q is not key=value", spec, kv)
		}
		var err error
		switch key {
		case "rate":
			f.Rate, err = strconv.ParseFloat(val, 64)
			if err == nil && !(f.Rate > 0 && f.Rate <= 1) { // NaN fails here too
				err = fmt.Errorf("want 0 < rate <= 1")
			}
		case "every":
			f.Every, err = positive(val)
		case "after":
			f.After, err = strconv.Atoi(val)
			if err == nil && f.After < 0 {
				err = fmt.Errorf("want after >= 0")
			}
		case "match":
			f.Match = val
			if val == "" {
				err = fmt.Errorf("empty match")
			}
		case "limit":
			f.Limit, err = positive(val)
		case "delay":
			f.Delay, err = time.ParseDuration(val)
			if err == nil && f.Delay <= 0 {
				err = fmt.Errorf("want a positive delay")
			}
		case "retry-after":
			f.RetryAfter, err = positive(val)
		case "seed":
			f.Seed, err = strconv.ParseUint(val, 10, 64)
		default:
			err = fmt.Errorf("unknown key (want rate, every, after, match, limit, delay, retry-after or seed)")
		}
		if err != nil {
			return Fault{}, fmt.Errorf("fault %q: %s=%s: %w", spec, key, val, err)
		}
	}
	return f, nil
}

func positive(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err == nil && n <= 0 {
		err = fmt.Errorf("want a positive integer")
	}
	return n, err
}

// String is the fault's spec.
func (f Fault) String() string {
	var kv []string
	add := func(k, v string) { kv = append(kv, k+"="+v) }
	if f.Rate > 0 {
		add("rate", strconv.FormatFloat(f.Rate, 'g', -1, 64))
	}
	if f.Every > 0 {
		add("every", strconv.Itoa(f.Every))
	}
	if f.After > 0 {
		add("after", strconv.Itoa(f.After))
	}
	if f.Match != "" {
		add("match", f.Match)
	}
	if f.Limit > 0 {
		add("limit", strconv.Itoa(f.Limit))
	}
	if f.Delay > 0 {
		add("delay", f.Delay.String())
	}
	if f.RetryAfter > 0 {
		add("retry-after", strconv.Itoa(f.RetryAfter))
	}
	if f.Seed != 0 {
		add("seed", strconv.FormatUint(f.Seed, 10))
	}
	if len(kv) == 0 {
		return string(f.Kind)
	}
	return string(f.Kind) + ":" + strings.Join(kv, ",")
}

// faultState is a fault with its generator and firing count.
type faultState struct {
	Fault
	rng   *rand.Rand
	fired int
}

func newFaultState(f Fault) *faultState {
	return &faultState{Fault: f, rng: rand.New(rand.NewPCG(f.Seed, 0x7665746265))}
}

// fires decides whether the fault fires on chat request seq with id rid.
// The rate draw is taken on every request the other conditions pass, so a
// seeded run fires on the same requests every time.
func (f *faultState) fires(seq int, rid string) bool {
	if f.Limit > 0 && f.fired >= f.Limit {
		return false
	}
	if f.Every > 0 && seq%f.Every != 0 {
		return false
	}
	if seq <= f.After {
		return false
	}
	if f.Match != "" && !strings.Contains(rid, f.Match) {
		return false
	}
	if f.Rate > 0 && f.rng.Float64() >= f.Rate {
		return false
	}
	f.fired++
	return true
}
