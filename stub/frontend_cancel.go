package stub

// A request whose client goes away while it still waits for the API
// server gives its place back: vLLM's routes are wrapped in
// with_cancellation (vllm/entrypoints/utils.py), which cancels the
// handler on a disconnect, so a prompt not yet being rendered and
// tokenized is never worked on. Without it, a cell cancelled with dozens
// of re-sent million-token prompts queued would leave the twin's one
// frontend worker busy for minutes of model time after the cell, and the
// next cell's scout would wait behind work nobody wants.

// feJob is one frontend reservation: [start, end) on the worker.
type feJob struct {
	start, end float64
	dead       bool
}

// record notes a reservation made at now, dropping those already over.
func (f *frontendModel) record(now, start, end float64) {
	i := 0
	for i < len(f.jobs) && f.jobs[i].end <= now {
		i++
	}
	f.jobs = append(f.jobs[i:], feJob{start: start, end: end})
}

// cancel gives back the reservation that starts at start, when it has not
// started by now: the worker is then free as soon as the live job before
// the cancelled tail ends (a cancelled job between live ones keeps its
// slot: the later ones were promised their times).
func (f *frontendModel) cancel(start, now float64) {
	for i := range f.jobs {
		if j := &f.jobs[i]; j.start == start && !j.dead {
			if j.start <= now {
				return // already being worked on
			}
			j.dead = true
			break
		}
	}
	n := len(f.jobs)
	for n > 0 && f.jobs[n-1].dead {
		n--
	}
	if n == len(f.jobs) {
		return
	}
	free := now
	if n > 0 {
		free = max(now, f.jobs[n-1].end)
	}
	f.jobs = f.jobs[:n]
	f.free = min(f.free, free)
}
