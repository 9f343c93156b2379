package bench_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/judgments"
)

// gate is a judge whose calls block until released, one by one.
type gate struct {
	name    string
	mu      sync.Mutex
	release map[string]chan struct{}
	started chan string
}

func newGate(name string, started chan string) *gate {
	return &gate{name: name, release: map[string]chan struct{}{}, started: started}
}

func (g *gate) ch(item string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.release[item] == nil {
		g.release[item] = make(chan struct{})
	}
	return g.release[item]
}

func (g *gate) Judge(ctx context.Context, _ judgments.Spec, _ judgments.Controls, it judgments.Item) (judgments.Judgment, error) {
	c := g.ch(it.ID)
	g.started <- g.name + ":" + it.ID
	<-c
	return judgments.Judgment{Item: it.ID}, nil
}

// Least in flight, ties in round-robin order: the choice depends only on
// the order of the calls and what is still in flight (no clock).
func TestBalancerLeastInFlight(t *testing.T) {
	started := make(chan string, 16)
	a, b, c := newGate("a", started), newGate("b", started), newGate("c", started)
	bal := bench.NewBalancer(a, b, c)
	var wg sync.WaitGroup
	finished := map[string]chan struct{}{}
	send := func(id string) string {
		done := make(chan struct{})
		finished[id] = done
		wg.Go(func() {
			defer close(done)
			_, _ = bal.Judge(t.Context(), judgments.Spec{}, nil, judgments.Item{ID: id})
		})
		return <-started
	}
	// Four judgments into three idle endpoints: a, b, c, then a again.
	require.Equal(t, "a:1", send("1"))
	require.Equal(t, "b:2", send("2"))
	require.Equal(t, "c:3", send("3"))
	require.Equal(t, "a:4", send("4"))
	// c finishes: in flight a=2, b=1, c=0. Round robin would pick b (the
	// one after a); the fewest in flight is c.
	close(c.ch("3"))
	<-finished["3"]
	require.Equal(t, "c:5", send("5"))
	// a=2, b=1, c=1: the tie goes to the first at or after a (the one
	// after c, the last chosen): b.
	require.Equal(t, "b:6", send("6"))
	for _, id := range []string{"1", "4"} {
		close(a.ch(id))
	}
	for _, id := range []string{"2", "6"} {
		close(b.ch(id))
	}
	close(c.ch("5"))
	wg.Wait()
	require.Equal(t, []int{2, 2, 2}, bal.Started())
	for id, want := range map[string]int{"1": 0, "2": 1, "3": 2, "4": 0, "5": 2, "6": 1} {
		got, ok := bal.Took(id)
		require.True(t, ok)
		require.Equal(t, want, got, "item %s", id)
	}
	_, ok := bal.Took("7")
	require.False(t, ok, "never judged")
}

// A closed loop of c judgments over equal endpoints at c = 1 is plain round
// robin: every endpoint gets its share, to the judgment.
func TestBalancerRoundRobin(t *testing.T) {
	var mu sync.Mutex
	var order []string
	judge := func(name string) bench.Judge {
		return judgeFunc(func(it judgments.Item) {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		})
	}
	bal := bench.NewBalancer(judge("a"), judge("b"), judge("c"))
	for i := range 9 {
		_, err := bal.Judge(t.Context(), judgments.Spec{}, nil, judgments.Item{ID: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	require.Equal(t, []string{"a", "b", "c", "a", "b", "c", "a", "b", "c"}, order)
	require.Equal(t, []int{3, 3, 3}, bal.Started())

	// An item judged twice cannot be given to one endpoint.
	_, _ = bal.Judge(t.Context(), judgments.Spec{}, nil, judgments.Item{ID: "0"})
	_, ok := bal.Took("0")
	require.False(t, ok)
}

type judgeFunc func(judgments.Item)

func (f judgeFunc) Judge(_ context.Context, _ judgments.Spec, _ judgments.Controls, it judgments.Item) (judgments.Judgment, error) {
	f(it)
	return judgments.Judgment{Item: it.ID}, nil
}
