package bench

import "time"

// Hooks are a Session's test seams (see Session.clock, held, wrap).
type Hooks struct {
	// Clock replaces time.Now for the pool and the Little's-law sampler.
	Clock func() time.Time
	// Held runs after judgment i's latency clock stops, before its pool
	// slot is freed.
	Held func(i int)
	// Wrap wraps the judge used inside the measured window.
	Wrap func(Judge) Judge
}

// SetHooks installs h on the session (nil fields: the defaults).
func (s *Session) SetHooks(h Hooks) { s.clock, s.held, s.wrap = h.Clock, h.Held, h.Wrap }
