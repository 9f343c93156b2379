package stub

import (
	"context"
	"fmt"
	"time"
)

// A token is due at the client at its model time, but getting it there
// costs the twin wall time after the step's timer fires: completing the
// step, waking the stream's handler, encoding the chunk, the write. At
// time scale s that cost counts s times in a client's model-time latency,
// and on a busy machine it grows with the number of streams. So the engine
// completes a step ahead of its model end (release), each stream's
// handler waits for its tokens' model time less the clock's lead
// (deliverAt) and writes them, and the clock learns the lead as it learns
// timer lateness: the running mean of how late a write completed behind
// its tokens' model time (delivered), so that writes complete on time on
// average. Model time itself does not move: tokens are stamped with the
// step's model end, and the next step starts at that end, so requests that
// reach the engine by then join it, as in the simulation.
//
// The lead is at most maxLead of wall time; a twin that needs more is too
// busy for its time scale, which its deadline counters say (deadline.go).

// maxLead bounds the lead: about a scheduler tick, as deadlineSlack.
const maxLead = 2 * time.Millisecond

// currentLead is the lead deliveries start with now.
func (c *clock) currentLead() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lead
}

// deliverAt blocks until a delivery due at model time t should start:
// the clock's lead before it.
func (c *clock) deliverAt(ctx context.Context, t float64) error {
	return c.sleepUntilWall(ctx, c.wall(t).Add(-c.currentLead()))
}

// delivered records that a delivery due at model time t has completed
// (its write returned) now, and returns how late it was (wall time).
func (c *clock) delivered(t float64) time.Duration {
	late := time.Since(c.wall(t))
	c.mu.Lock()
	c.lead = min(maxLead, max(0, c.lead+late/16))
	c.mu.Unlock()
	return late
}

// delivered records a stream's write of tokens due at model time t that
// completed now: the clock learns its lead from it, and one later than
// deadlineSlack past its due time, lead and all, counts as a late delivery
// on /metrics and in the log (at most once per deadlineLogEvery).
func (e *engine) delivered(t float64) {
	late := e.clock.delivered(t)
	if late <= deadlineSlack {
		return
	}
	e.mu.Lock()
	m := e.m
	e.lateWrites++
	n, now := e.lateWrites, time.Now()
	logIt := e.deadlines.log != nil && now.Sub(e.lateLogged) >= deadlineLogEvery
	if logIt {
		e.lateLogged, e.lateWrites = now, 0
	}
	e.mu.Unlock()
	m.mu.Lock()
	m.lateDeliveries++
	m.mu.Unlock()
	if logIt {
		fmt.Fprintf(e.deadlines.log, "vllmstub: engine %d wrote %d streamed token chunk(s) more than %v late (wall), at time scale %g; latencies measured now are slower than the model\n",
			e.index, n, deadlineSlack, e.clock.scale)
	}
}

// release blocks until the engine should complete a step that ends at
// model time t: the lead and the transport allowance's early sending
// before it. The step's streams then find their tokens due as they wake
// and write at once; the lead, learned from when their writes complete,
// covers waking them too.
func (c *clock) release(ctx context.Context, t float64) error {
	return c.sleepUntilWall(ctx, c.wall(t).Add(-c.currentLead()-c.early))
}
