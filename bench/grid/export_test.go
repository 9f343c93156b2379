package grid

import "time"

// SetWall replaces the runner's wall clock (tests of the budget).
func SetWall(r *Runner, wall func() time.Time) { r.wall = wall }
