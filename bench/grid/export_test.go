package grid

import "time"

// SetWall replaces the runner's wall clock (tests of the budget).
func SetWall(r *Runner, wall func() time.Time) { r.wall = wall }

// FellBehind and BehindQueued are fellBehind and behindQueued (tests of a
// cell measured while the twin fell behind).
var FellBehind, BehindQueued = fellBehind, behindQueued
