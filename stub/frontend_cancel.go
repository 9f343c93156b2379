package stub

import "slices"

// A request whose client goes away while it still waits for the API
// server gives its place back: vLLM's routes are wrapped in
// with_cancellation (vllm/entrypoints/utils.py), which cancels the
// handler on a disconnect, so a prompt not yet being rendered and
// tokenized is never worked on. Without it, a cell cancelled with dozens
// of re-sent million-token prompts queued would leave the twin's one
// frontend worker busy for minutes of model time after the cell, and the
// next cell's scout would wait behind work nobody wants.

// feJob is one frontend reservation: [start, end) on the worker, for a
// request that arrived at at and costs cost; extra is what follows end
// before the engine holds the request (its ingest). A fixed job no longer
// moves: its request reached the engine core, or its times were given
// out (a simulation's, a /tokenize answer).
type feJob struct {
	at, cost, extra float64
	start, end      float64
	dead, fixed     bool
}

// ready is when the job's request reaches the engine.
func (j *feJob) ready() float64 { return j.end + j.extra }

// trim drops the reservations over by now that can no longer move; the
// worker stays busy until the last of them ends (floor), for an earlier
// arrival whose handler comes later still.
func (f *frontendModel) trim(now float64) {
	i := 0
	for i < len(f.jobs) && f.jobs[i].end <= now && (f.jobs[i].fixed || f.jobs[i].dead) {
		f.floor = max(f.floor, f.jobs[i].end)
		i++
	}
	f.jobs = f.jobs[i:]
}

// cancel gives back the reservation that starts at start, when it has not
// started by now: the worker is then free as soon as the live job before
// the cancelled tail ends (a cancelled job between live ones keeps its
// slot: the later ones were promised their times).
func (f *frontendModel) cancel(start, now float64) {
	for _, j := range f.jobs {
		if j.start == start && !j.dead {
			if j.start <= now {
				return // already being worked on
			}
			j.dead = true
			break
		}
	}
	f.dropDeadTail(now)
}

// cancelJob is cancel for a job known by its reservation.
func (f *frontendModel) cancelJob(j *feJob, now float64) {
	if j.dead || j.start <= now || !slices.Contains(f.jobs, j) {
		return
	}
	j.dead = true
	f.dropDeadTail(now)
}

// dropDeadTail frees the worker of the cancelled jobs at the queue's end.
func (f *frontendModel) dropDeadTail(now float64) {
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
