package stub

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Loops as a model property. Greedy decoding of a long output can fall
// into a cycle it never leaves: the same span of text over and over until
// max_tokens (a looping model samples no EOS). Real models do it more with
// a longer context, and batch composition changes the numerics enough to
// tip a borderline prompt either way (batch-variant kernels), which is why
// the same prompt can loop at one concurrency and not at another. The
// twin draws it per request when its prefill finishes: the chance grows
// with the prompt's length and with the batch the prefill ran in, and the
// draw is seeded by the content and that batch size, so the same prompt
// in the same batch always does the same.

// Looping is a profile's loop model:
//
//	P(loop) = min(1, Base · (context ÷ BaseContext)^ContextExponent · bucket^BatchExponent)
//
// for a request whose prompt has context tokens and whose prefill
// finished in a step of batch sequences, bucket being that batch rounded
// up to a power of two (batchBucket). A looping request repeats a cycle
// of MinPeriod..MaxPeriod tokens from an onset drawn in
// [MinOnset, MaxOnset] output tokens.
type Looping struct {
	Base            float64
	BaseContext     int
	ContextExponent float64
	BatchExponent   float64
	// MinPeriod..MaxPeriod is the cycle length in tokens.
	MinPeriod, MaxPeriod int
	// MinOnset..MaxOnset is where the cycle starts, in output tokens.
	MinOnset, MaxOnset int
}

func (l *Looping) validate() error {
	if l == nil {
		return nil
	}
	switch {
	case !(l.Base >= 0 && l.Base <= 1):
		return fmt.Errorf("looping: base probability %v: want [0, 1]", l.Base)
	case l.BaseContext <= 0:
		return fmt.Errorf("looping: base context %d: want a positive token count", l.BaseContext)
	case !(l.ContextExponent >= 0 && l.ContextExponent <= 32) || !(l.BatchExponent >= 0 && l.BatchExponent <= 32):
		return fmt.Errorf("looping: exponents %v, %v: want [0, 32]", l.ContextExponent, l.BatchExponent)
	case l.MinPeriod < 1 || l.MaxPeriod < l.MinPeriod:
		return fmt.Errorf("looping: period %d..%d tokens: want 1 ≤ min ≤ max", l.MinPeriod, l.MaxPeriod)
	case l.MinOnset < 1 || l.MaxOnset < l.MinOnset:
		return fmt.Errorf("looping: onset %d..%d tokens: want 1 ≤ min ≤ max", l.MinOnset, l.MaxOnset)
	}
	return nil
}

// Probability is P(loop) for a prompt of context tokens whose prefill
// ran in a batch of batch sequences.
func (l *Looping) Probability(context, batch int) float64 {
	if l == nil || context <= 0 {
		return 0
	}
	p := l.Base * math.Pow(float64(context)/float64(l.BaseContext), l.ContextExponent) *
		math.Pow(float64(batchBucket(batch)), l.BatchExponent)
	return min(1, p)
}

// batchBucket is the power of two a batch is padded to: batch-variant
// numerics change with the kernel shape, not with every sequence more
// (vLLM pads decode batches to its CUDA-graph capture sizes, 1, 2, 4, 8,
// then multiples of 8, approximately powers of two here). The same prompt
// in batches of one bucket decodes the same way.
func batchBucket(batch int) int {
	b := 1
	for b < batch {
		b *= 2
	}
	return b
}

// draw decides whether a request loops, and if so its onset and period in
// output tokens (0, 0 when it does not).
func (l *Looping) draw(key []byte, context, batch int) (onset, period int) {
	if l == nil {
		return 0, 0
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(batchBucket(batch)))
	r := newRNG(key, []byte("loop"), b[:])
	if r.float() >= l.Probability(context, batch) {
		return 0, 0
	}
	onset = l.MinOnset + int(r.next()%uint64(l.MaxOnset-l.MinOnset+1))
	period = l.MinPeriod + int(r.next()%uint64(l.MaxPeriod-l.MinPeriod+1))
	return onset, period
}

// settle applies the loop draw to a generation when its prefill finished:
// from the onset on, the words repeat with the period; a loop never
// samples EOS, and one that starts while thinking never ends its
// reasoning.
func (g *generation) settle(l *Looping, context, batch int) {
	if g.period > 0 || l == nil {
		return // the loop fault already loops it from the start
	}
	onset, period := l.draw(g.key, context, batch)
	if period == 0 {
		return
	}
	if g.eosAt > 0 && onset >= g.eosAt-1 {
		return // it stops before the cycle would start
	}
	g.loopAt, g.period = onset, period
	g.eosAt = 0
	if g.thinkAt > 0 && onset < g.thinkAt {
		g.thinkAt = math.MaxInt32
	}
}
