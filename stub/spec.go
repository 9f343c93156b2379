package stub

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/receipts/roofline"
)

// Speculative decoding as vLLM's v1 engine runs it: a request that has
// sampled a token carries k draft tokens into its next step; the target
// model verifies the sampled token and the k drafts in one forward pass
// (1+k query tokens), accepts the longest prefix of the drafts it agrees
// with, and samples one more (the bonus), so a decode step yields 1 + a
// tokens, a in 0..k. The scheduler records each verified draft
// (Scheduler.update_from_output → SpecDecodingStats.observe_draft,
// vllm/v1/spec_decode/metrics.py): num_drafts +1, num_draft_tokens +k,
// num_accepted_tokens +a, and num_accepted_tokens_per_pos[i] +1 for each
// i < a. The output processor hands the a+1 tokens to the API server as
// one output, so a stream carries them in one chunk.

// Speculative is a profile's --speculative-config plus what the twin needs
// to play the drafter: how often the target accepts each draft position.
type Speculative struct {
	// Method is --speculative-config's "method" (e.g. "mtp", "eagle3",
	// "ngram", "dspark"); the twin only reports it.
	Method string `json:"method"`
	// NumSpeculativeTokens is k, the drafts verified per step.
	NumSpeculativeTokens int `json:"num_speculative_tokens"`
	// Acceptance[i] is the chance the target accepts draft i given it
	// accepted drafts 0..i−1 (a property of the model and its drafter, not
	// a vLLM setting): len k, each in [0, 1]. Empty takes
	// DefaultAcceptance.
	Acceptance []float64 `json:"acceptance,omitempty"`
}

// DefaultAcceptance is the conditional acceptance per draft position the
// twin assumes when a profile names none: 0.85, the rate DeepSeek-V3's
// technical report gives for its multi-token-prediction module's draft
// (§5.4.3, "between 85% and 90%"), at every position. It is an
// assumption, not a measurement of any model this twin profiles.
const DefaultAcceptance = 0.85

// ParseSpeculativeConfig reads vllm serve --speculative-config's JSON.
// Only method and num_speculative_tokens matter to the twin; the other
// keys vLLM takes (model, draft_tensor_parallel_size, …) are accepted and
// ignored. num_speculative_tokens must be a positive integer (vLLM would
// take a draft model's n_predict when it is absent; the twin has no draft
// model to ask).
func ParseSpeculativeConfig(s string) (Speculative, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&raw); err != nil {
		return Speculative{}, fmt.Errorf("--speculative-config: not a JSON object: %w", err)
	}
	var sp Speculative
	if m, ok := raw["method"]; ok {
		if err := json.Unmarshal(m, &sp.Method); err != nil {
			return Speculative{}, fmt.Errorf("--speculative-config: method: want a string: %w", err)
		}
	}
	n, ok := raw["num_speculative_tokens"]
	if !ok {
		return Speculative{}, fmt.Errorf("--speculative-config: num_speculative_tokens is required")
	}
	if err := json.Unmarshal(n, &sp.NumSpeculativeTokens); err != nil {
		return Speculative{}, fmt.Errorf("--speculative-config: num_speculative_tokens: want an integer: %w", err)
	}
	if a, ok := raw["acceptance"]; ok { // the twin's own key, for tests and vllmstub
		if err := json.Unmarshal(a, &sp.Acceptance); err != nil {
			return Speculative{}, fmt.Errorf("--speculative-config: acceptance: want a list of numbers: %w", err)
		}
	}
	return sp, sp.validate()
}

// MaxSpeculativeTokens bounds k (vLLM has no fixed bound; more than a few
// dozen drafts per step is no deployment anyone runs).
const MaxSpeculativeTokens = 32

func (sp *Speculative) validate() error {
	if sp == nil {
		return nil
	}
	k := sp.NumSpeculativeTokens
	if k < 1 || k > MaxSpeculativeTokens {
		return fmt.Errorf("speculative decoding: num_speculative_tokens %d: want 1..%d", k, MaxSpeculativeTokens)
	}
	if len(sp.Acceptance) != 0 && len(sp.Acceptance) != k {
		return fmt.Errorf("speculative decoding: %d acceptance rates for %d draft positions", len(sp.Acceptance), k)
	}
	for i, p := range sp.Acceptance {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("speculative decoding: acceptance %v at position %d: want [0, 1]", p, i)
		}
	}
	return nil
}

// String is the config as vLLM's JSON flag (acceptance included when set,
// so vllmstub gets the same drafter).
func (sp Speculative) String() string {
	b, _ := json.Marshal(sp)
	return string(b)
}

// k is the drafts per step; 0 without speculative decoding.
func (sp *Speculative) k() int {
	if sp == nil {
		return 0
	}
	return sp.NumSpeculativeTokens
}

// rate is the conditional acceptance of draft position i.
func (sp *Speculative) rate(i int) float64 {
	if i < len(sp.Acceptance) {
		return sp.Acceptance[i]
	}
	return DefaultAcceptance
}

// accepted is how many of the k drafts the target accepts at the step
// where a request has pos output tokens: a draw seeded by the request's
// content and pos, so the same prompt decodes the same way every run.
func (sp *Speculative) accepted(key []byte, pos int) int {
	k := sp.k()
	if k == 0 {
		return 0
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(pos))
	r := newRNG(key, []byte("speculative acceptance"), b[:])
	a := 0
	for a < k && r.float() < sp.rate(a) {
		a++
	}
	return a
}

// MeanAcceptanceLength is the tokens a verified step yields on average,
// bonus included (vLLM's "Mean acceptance length"): 1 + Σ_i Π_{j≤i} p_j.
func (sp *Speculative) MeanAcceptanceLength() float64 {
	n, run := 1.0, 1.0
	for i := range sp.k() {
		run *= sp.rate(i)
		n += run
	}
	return n
}

// specStats are the spec_decode counters of one engine.
type specStats struct {
	drafts, draftTokens, accepted float64
	perPos                        []float64
}

// observe records one verified draft of k tokens with a accepted.
func (s *specStats) observe(k, a int) {
	if len(s.perPos) < k {
		s.perPos = append(s.perPos, make([]float64, k-len(s.perPos))...)
	}
	s.drafts++
	s.draftTokens += float64(k)
	s.accepted += float64(a)
	for i := range a {
		s.perPos[i]++
	}
}

// writeSpecMetrics renders vLLM's SpecDecodingProm counters (registered
// only with a speculative config): num_drafts, num_draft_tokens,
// num_accepted_tokens, and num_accepted_tokens_per_pos with a "position"
// label "0".."k−1", each with the engine's labels.
func writeSpecMetrics(k int, s *specStats, base labels, counter func(name, help string, series ...sample)) {
	if k == 0 {
		return
	}
	one := func(name string, v float64) sample { return sample{name + "_total", base, v} }
	counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", one("vllm:spec_decode_num_drafts", s.drafts))
	counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", one("vllm:spec_decode_num_draft_tokens", s.draftTokens))
	counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", one("vllm:spec_decode_num_accepted_tokens", s.accepted))
	pos := make([]sample, k)
	for i := range k {
		v := 0.0
		if i < len(s.perPos) {
			v = s.perPos[i]
		}
		pos[i] = sample{"vllm:spec_decode_num_accepted_tokens_per_pos_total", base.with("position", strconv.Itoa(i)), v}
	}
	counter("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.", pos...)
}

// chunker decides which of a stream's tokens go out together, as vLLM's
// output processor does (RequestState.make_request_output): each engine
// step's new tokens are one output (several with speculative decoding);
// with --stream-interval N > 1 an output is sent only when the request
// finished, at its first token, or once N or more tokens are unsent, and
// then carries every unsent token.
type chunker struct {
	interval int // --stream-interval; 0 and 1 send every step
	sent     int // tokens sent so far
}

// take is how many tokens to send now, when the request has produced
// total tokens (its step just ended) and finished says whether it is done:
// 0 means hold them.
func (c *chunker) take(total int, finished bool) int {
	unsent := total - c.sent
	if unsent <= 0 {
		return 0
	}
	if c.interval > 1 && !finished && c.sent > 0 && unsent < c.interval {
		return 0
	}
	c.sent = total
	return unsent
}

// stepGroups splits token times into the runs of one engine step each
// (tokens sampled by one step share its end time): the lengths of the
// runs, in order.
func stepGroups(times []float64) []int {
	var out []int
	for i := 0; i < len(times); {
		j := i + 1
		for j < len(times) && times[j] == times[i] {
			j++
		}
		out = append(out, j-i)
		i = j
	}
	return out
}

// validateFeatures checks a profile's serving features.
func (p Profile) validateFeatures() error {
	if p.StreamInterval < 0 {
		return fmt.Errorf("stream interval %d: want 1 or more", p.StreamInterval)
	}
	if err := p.Speculative.validate(); err != nil {
		return err
	}
	if err := p.Reasoning.validate(); err != nil {
		return err
	}
	return p.Looping.validate()
}

// cacheDtype is --kv-cache-dtype as vllm:cache_config_info labels it:
// the physical model's KV dtype when it names one, "auto" otherwise.
func cacheDtype(p Profile) string {
	if p.Physical != nil && p.Physical.Dtypes.KV != "" {
		return string(p.Physical.Dtypes.KV)
	}
	return "auto"
}

// SetSpeculative serves the profile with speculative decoding: the engine
// verifies k drafts a step and accepts them at sp's rates, and a physical
// profile prices the verify and the drafter's passes (roofline's flat
// acceptance is the mean of the per-position rates; the step's cost does
// not depend on it).
func (p *Profile) SetSpeculative(sp Speculative) {
	p.Speculative = &sp
	if p.Physical != nil {
		mean := 0.0
		for i := range sp.k() {
			mean += sp.rate(i) / float64(sp.k())
		}
		p.Physical.Speculative = &roofline.Speculative{Tokens: sp.k(), Acceptance: mean}
	}
}
