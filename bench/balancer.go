package bench

import (
	"context"
	"sync"

	"github.com/vetbench/vetbench/judgments"
)

// Balancer spreads judgments over several judges, one per endpoint: each
// judgment goes, whole (all its questions, so one engine's caches see its
// images), to the judge with the fewest judgments in flight; a tie goes to
// the first tied judge at or after the one after the last chosen (round
// robin), so equal endpoints take turns and the choice depends on nothing
// but the order of calls. It remembers which judge took each item, for the
// per-endpoint figures. Safe for concurrent use; one Balancer per window.
type Balancer struct {
	judges []Judge

	mu       sync.Mutex
	inFlight []int
	started  []int
	next     int
	byItem   map[string]int
	twice    []string
}

// NewBalancer spreads over judges, in this order (the endpoints' order).
func NewBalancer(judges ...Judge) *Balancer {
	return &Balancer{judges: judges, inFlight: make([]int, len(judges)), started: make([]int, len(judges)), byItem: map[string]int{}}
}

// Judge sends the item to the least busy judge.
func (b *Balancer) Judge(ctx context.Context, spec judgments.Spec, controls judgments.Controls, it judgments.Item) (judgments.Judgment, error) {
	i := b.pick(it.ID)
	defer b.done(i)
	return b.judges[i].Judge(ctx, spec, controls, it)
}

func (b *Balancer) pick(item string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.judges)
	best := b.next % n
	for k := 1; k < n; k++ {
		if i := (b.next + k) % n; b.inFlight[i] < b.inFlight[best] {
			best = i
		}
	}
	b.next = (best + 1) % n
	b.inFlight[best]++
	b.started[best]++
	if _, seen := b.byItem[item]; seen {
		b.twice = append(b.twice, item)
	}
	b.byItem[item] = best
	return best
}

func (b *Balancer) done(i int) {
	b.mu.Lock()
	b.inFlight[i]--
	b.mu.Unlock()
}

// Started counts the judgments each judge was given.
func (b *Balancer) Started() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.started...)
}

// Took says which judge took the item; false when none did, or when the
// item was judged more than once (then no one answer is its endpoint's).
func (b *Balancer) Took(item string) (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.twice {
		if t == item {
			return 0, false
		}
	}
	i, ok := b.byItem[item]
	return i, ok
}
