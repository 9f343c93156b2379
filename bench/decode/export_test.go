package decode

// SetAfterDo installs a hook that runs after each request returns and
// before its slot is freed: time spent there is outside the latency clock.
func (r *Runner) SetAfterDo(f func()) { r.afterDo = f }
