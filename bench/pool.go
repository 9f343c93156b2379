// Package bench measures judgments against an Endpoint: a closed-loop pool
// keeps c judgments in flight, the measured window is bracketed by /metrics
// scrapes, the figures come from receipts/tally, and everything lands in a
// receipt. Choosing and starting what is measured (a live vLLM, the twin) is
// bench/target's job, so this package links neither the twin nor Docker. Its
// tests are the benchmark suite (BenchmarkJudgments) and the stability tests
// (TestStability).
package bench

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
)

// Judge answers one item; *judgments.Client is one.
type Judge interface {
	Judge(ctx context.Context, spec judgments.Spec, controls judgments.Controls, it judgments.Item) (judgments.Judgment, error)
}

// Result is one finished judgment.
type Result struct {
	Index    int
	Judgment judgments.Judgment
	Err      error
	Start    time.Time
	End      time.Time
}

// Latency is the judgment's client latency: all its questions' requests.
func (r Result) Latency() time.Duration { return r.End.Sub(r.Start) }

// Observer is told when the measured window opens (Open), when a worker takes a pool slot (Start), frees it after
// handing its result over (End), and when the last item has been handed out
// (Drain); *audit.Sampler is one (Little's law). Its methods must be cheap
// and safe for concurrent use.
type Observer interface {
	Open()
	Start()
	End()
	Drain()
}

// Pool is a closed loop: Concurrency judgments in flight, a new one starts
// as one finishes, items in slice order, questions of one judgment in order.
type Pool struct {
	Concurrency int
	// StopOnError ends the run at the first failed judgment in slice order,
	// as typevet does: no new judgments start, in-flight ones finish.
	StopOnError bool
	Observer    Observer
	// Progress, when set, is called by Run after each finished judgment
	// with the counts so far and the time since the window opened (and
	// once with zeros as it opens). It runs in Run's result loop, one call
	// at a time: it must be cheap, or it delays the pool.
	Progress func(done, failed int, elapsed time.Duration)

	// Test seams, set only through export_test.go. clock replaces
	// time.Now. held runs after judgment i's latency clock stops and
	// before its slot is freed: time spent there is time the latency
	// figures do not see, which Little's law must catch. exited runs once
	// every goroutine of a Stream has returned.
	clock  func() time.Time
	held   func(i int)
	exited func()
}

func (p Pool) now() time.Time {
	if p.clock != nil {
		return p.clock()
	}
	return time.Now()
}

// Stream runs the set and sends each result as it finishes; the channel is
// closed when the last in-flight judgment is done. Cancelling ctx stops new
// judgments and aborts in-flight requests; a caller that stops reading must
// cancel ctx, and the workers then return without sending what is left.
func (p Pool) Stream(ctx context.Context, j Judge, set fixtures.Set, controls judgments.Controls) <-chan Result {
	return p.stream(ctx, ctx.Done(), j, set, controls)
}

// stream is Stream with the channel that releases a blocked send: ctx.Done()
// for a caller that may stop reading, nil for Run, which reads to the end
// and must get every result, the aborted ones too.
func (p Pool) stream(ctx context.Context, abandon <-chan struct{}, j Judge, set fixtures.Set, controls judgments.Controls) <-chan Result {
	c := max(p.Concurrency, 1)
	out := make(chan Result, c)
	next := make(chan int)
	stop := make(chan struct{})
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }

	var wg sync.WaitGroup
	wg.Go(func() { // feeder: hands out indices in slice order until stopped
		defer close(next)
		if p.Observer != nil {
			defer p.Observer.Drain()
		}
		for i := range set.Cases {
			select {
			case next <- i:
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	})

	for range c {
		wg.Go(func() {
			for i := range next {
				// A stop may race with the feeder's last hand-off; never
				// start a judgment after the run has stopped.
				select {
				case <-stop:
					continue
				default:
				}
				if ctx.Err() != nil {
					continue
				}
				if p.Observer != nil {
					p.Observer.Start()
				}
				r := Result{Index: i, Start: p.now()}
				r.Judgment, r.Err = j.Judge(ctx, set.Spec, controls, set.Cases[i].Item)
				r.End = p.now()
				if p.held != nil {
					p.held(i)
				}
				if r.Err != nil && p.StopOnError {
					halt()
				}
				select {
				case out <- r:
				case <-abandon:
					return // nobody reads any more
				}
				if p.Observer != nil {
					p.Observer.End()
				}
			}
		})
	}
	go func() {
		wg.Wait()
		close(out)
		if p.exited != nil {
			p.exited()
		}
	}()
	return out
}

// Outcome is a whole run: results in slice order and why it stopped.
type Outcome struct {
	Results []Result // index order; only the judgments that ran
	Wall    time.Duration
	// StopIndex is the first slice position that did not finish well when
	// the run stopped early, else -1.
	StopIndex int
	StopErr   error
	Canceled  bool
}

// Run runs the pool to the end and gathers the results. Wall time runs from
// just before the first judgment starts to after the last one ends.
func (p Pool) Run(ctx context.Context, j Judge, set fixtures.Set, controls judgments.Controls) Outcome {
	start := p.now()
	if p.Observer != nil {
		p.Observer.Open()
	}
	byIndex := make([]*Result, len(set.Cases))
	done, failed := 0, 0
	if p.Progress != nil {
		p.Progress(0, 0, 0)
	}
	for r := range p.stream(ctx, nil, j, set, controls) {
		byIndex[r.Index] = &r
		if done++; r.Err != nil {
			failed++
		}
		if p.Progress != nil {
			p.Progress(done, failed, p.now().Sub(start))
		}
	}
	o := Outcome{Wall: p.now().Sub(start), StopIndex: -1}
	for i, r := range byIndex {
		if r == nil {
			// Never started: only a stop or a cancel leaves gaps.
			if o.StopIndex < 0 {
				o.StopIndex = i
				o.StopErr = ctx.Err()
				o.Canceled = ctx.Err() != nil
			}
			continue
		}
		o.Results = append(o.Results, *r)
		if r.Err != nil && o.StopIndex < 0 && (p.StopOnError || isCanceled(ctx, r.Err)) {
			o.StopIndex = i
			o.StopErr = r.Err
			o.Canceled = isCanceled(ctx, r.Err)
		}
	}
	return o
}

// isCanceled tells a judgment aborted by the run's cancellation from one that
// failed on its own (a per-request timeout is a failure, not a cancel).
func isCanceled(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, context.Canceled)
}
