package bench_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/bench/sweep"
	"github.com/vetbench/vetbench/bench/sweep/config"
	"github.com/vetbench/vetbench/bench/sweep/target"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/answers"
	"github.com/vetbench/vetbench/stub"
)

// inProcess starts a twin of tw (dev mode on) and a session on set, for
// tests that need a twin of their own.
func inProcess(t *testing.T, set fixtures.Set, cfg config.Config, tw stub.Config) *bench.Session {
	t.Helper()
	tw.DevMode = true
	tg, err := target.InProcess(tw)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tg.Close() })
	sess, err := bench.NewSession(t.Context(), tg.Endpoint, set, sweep.SessionOptions(cfg))
	require.NoError(t, err)
	return sess
}

// testConfig is the defaults, with a request timeout that a stuck test
// does not wait two minutes for.
func testConfig() config.Config {
	c := config.Default()
	c.RequestTimeout = 10 * time.Second
	return c
}

func firstCases(set fixtures.Set, n int) fixtures.Set {
	set.Cases = set.Cases[:min(n, len(set.Cases))]
	return set
}

// A clean run writes a receipt that validates and round-trips, with every
// figure and self-check filled in.
func TestMeasureReceipt(t *testing.T) {
	s := getSuite(t)
	sess := inProcess(t, firstCases(s.set(t, "checks"), 28), testConfig(), stub.Config{})
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 4, Warmup: 1})
	require.NoError(t, err)
	require.Nil(t, rec.Stopped)
	require.Equal(t, 28, rec.Throughput.Judgments)
	require.Equal(t, 28*4, rec.Throughput.Requests)
	require.Positive(t, rec.Throughput.JudgmentsPerSecond)
	require.Equal(t, "token_ids", rec.Pins.ScoringMode)
	require.Len(t, rec.Pins.Controls, 6)
	require.Equal(t, receipts.TargetInProcess, rec.Target.Kind)
	require.Len(t, rec.Identity.PromptDigests, 4)
	require.NotEmpty(t, rec.Identity.Digest)
	require.NotNil(t, rec.Quality)
	require.Equal(t, "ok", rec.Server.Status, rec.Server.Problems)
	require.True(t, rec.Server.CacheReset.Prefix, "dev mode: the cold arm reset the prefix cache")
	// Little's law is checked (its verdict on real time is a measurement:
	// BenchmarkJudgments fails on it; TestLittlesLaw shows it on a fake
	// clock); every judgment was sampled, start and end.
	ll := rec.Checks.LittlesLaw
	require.NotNil(t, ll)
	require.Equal(t, 2*28, ll.Samples)
	require.Equal(t, 4, ll.Concurrency)
	require.True(t, rec.Checks.Reconciliation.OK, rec.Checks.Reconciliation.Detail)
	require.Equal(t, float64(rec.Throughput.Requests), rec.Server.Counters["request_success"])

	path := filepath.Join(t.TempDir(), "checks_c4.json")
	require.NoError(t, receipts.WriteFile(path, rec))
	back, err := receipts.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, rec.Items, back.Items)
	require.Equal(t, rec.Throughput, back.Throughput)
	require.Equal(t, rec.Identity.Digest, back.Identity.Digest)
}

// A twin run far faster than this machine can keep (×10⁴) reports it on
// /metrics, and the receipt keeps the report (server extra) and warns; the
// figures stand. Every answer's body counts as a first delivery.
// audit.TestDeliveryWarning holds the threshold.
func TestMeasureSaysTwinFellBehind(t *testing.T) {
	s := getSuite(t)
	sess := inProcess(t, firstCases(s.set(t, "checks"), 8), testConfig(), stub.Config{TimeScale: 1e4})
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 4, Warmup: 1})
	require.NoError(t, err)
	require.Equal(t, 8, rec.Throughput.Judgments)
	require.Equal(t, float64(rec.Throughput.Requests), rec.Server.Extra["twin_first_deliveries"])
	require.Positive(t, rec.Server.Extra["twin_first_delivery_delay_seconds"])
	found := false
	for _, w := range rec.Warnings {
		found = found || strings.Contains(w, "the twin fell behind its model")
	}
	require.True(t, found, "%q", rec.Warnings)
}

// A broken answer fails its judgment closed and stops the run at that item;
// the receipt still holds what ran, with a stopped block. Under
// ContinueOnError the item is recorded as failed and the run goes on.
func TestMeasureFaults(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 21)
	target := set.Cases[9].ID
	for _, tc := range []struct {
		fault string
		class string
		want  error
	}{
		{"missing-candidate", "missing_candidate", judgments.ErrMissingCandidate},
		{"nan", "non_finite", judgments.ErrNonFinite},
		{"no-logprobs", "no_logprobs", judgments.ErrNoLogprobs},
		{"http500", "http_500", nil},
		{"http429", "http_429", nil},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			f, err := stub.ParseFault(tc.fault + ":match=|" + target + "|verdict")
			require.NoError(t, err)
			sess := inProcess(t, set, testConfig(), stub.Config{Faults: []stub.Fault{f}})
			rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 4})
			require.ErrorIs(t, err, bench.ErrStopped)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
			}
			require.NotNil(t, rec)
			require.Equal(t, 9, rec.Stopped.Index)
			require.Equal(t, target, rec.Stopped.Item)
			require.Equal(t, "verdict", rec.Stopped.Question)
			require.Equal(t, receipts.StopError, rec.Stopped.Reason)
			require.Equal(t, tc.class, rec.Stopped.ErrorClass)
			require.Equal(t, 9, rec.Throughput.Judgments)
			for _, it := range rec.Items {
				if it.ID == target {
					require.Empty(t, it.Answers, "no verdict is invented")
				}
			}
			require.NoError(t, rec.Validate())

			// Under ContinueOnError the run goes through the set, and the
			// point still fails: no share of failures was accepted. The
			// item keeps its error and class, the receipt counts it.
			cfg := testConfig()
			cfg.ContinueOnError = true
			sess = inProcess(t, set, cfg, stub.Config{Faults: []stub.Fault{f}})
			rec, err = sess.Measure(t.Context(), bench.Point{Concurrency: 4})
			require.ErrorIs(t, err, bench.ErrFailures)
			require.NotErrorIs(t, err, bench.ErrServerDown, "the twin's /health answers 200")
			require.ErrorContains(t, err, "1 of 21 judgments failed (1 "+tc.class+")")
			require.Nil(t, rec.Stopped)
			require.Equal(t, 20, rec.Throughput.Judgments)
			require.Equal(t, 1, rec.Throughput.Failed)
			require.Equal(t, map[string]int{tc.class: 1}, rec.Throughput.FailedByClass)
			require.Equal(t, tc.class, rec.Items[9].ErrorClass)
			require.NotEmpty(t, rec.Items[9].Error)
			require.Contains(t, strings.Join(rec.Warnings, "\n"), "the run continued past failures (VETBENCH_CONTINUE_ON_ERROR): 1 of 21 judgments failed")
			require.True(t, rec.Checks.Reconciliation.OK, rec.Checks.Reconciliation.Detail)
			require.NoError(t, rec.Validate())

			if tc.fault != "http500" {
				return
			}
			// 1 of 21 is within an accepted 5%; 0.04 is not.
			cfg.MaxFailed = 0.05
			rec, err = inProcess(t, set, cfg, stub.Config{Faults: []stub.Fault{f}}).Measure(t.Context(), bench.Point{Concurrency: 4})
			require.NoError(t, err)
			require.Equal(t, 1, rec.Throughput.Failed)
			require.Contains(t, strings.Join(rec.Warnings, "\n"), "1 of 21 judgments failed (1 http_500), within the accepted 5% (VETBENCH_MAX_FAILED)")
			cfg.MaxFailed = 0.04
			_, err = inProcess(t, set, cfg, stub.Config{Faults: []stub.Fault{f}}).Measure(t.Context(), bench.Point{Concurrency: 4})
			require.ErrorIs(t, err, bench.ErrFailures)
		})
	}
}

// An engine that dies mid-run under ContinueOnError: every later judgment
// fails, the point fails with every failure counted and the server found
// down (its /health answers 503), so a ladder ends there; the receipt
// holds it all. A warmup that fails on a dead engine writes no receipt.
func TestMeasureEngineDead(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 14)
	f, err := stub.ParseFault("engine-dead:after=13")
	require.NoError(t, err)
	cfg := testConfig()
	cfg.ContinueOnError = true
	sess := inProcess(t, set, cfg, stub.Config{Faults: []stub.Fault{f}})
	// The capability check, 4 requests of warmup, 2 judgments × 4
	// questions, then death.
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 1, Warmup: 1})
	require.ErrorIs(t, err, bench.ErrFailures)
	require.ErrorIs(t, err, bench.ErrServerDown)
	require.ErrorIs(t, err, probe.ErrEngineDead)
	require.Equal(t, 2, rec.Throughput.Judgments)
	require.Equal(t, 12, rec.Throughput.Failed)
	require.Equal(t, map[string]int{"http_500": 12}, rec.Throughput.FailedByClass)
	require.Contains(t, strings.Join(rec.Warnings, "\n"), "server down: engine dead")
	require.NoError(t, rec.Validate())

	rec, err = sess.Measure(t.Context(), bench.Point{Concurrency: 4, Warmup: 1})
	require.ErrorIs(t, err, bench.ErrServerDown)
	require.Nil(t, rec, "no 0-judgment receipt after the engine died")
}

// A server that fails the warmup yields a receipt that says so and can be
// written, rather than an error about the receipt hiding the server's.
func TestMeasureWarmupFailure(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 7)
	f, err := stub.ParseFault("http500")
	require.NoError(t, err)
	sess := inProcess(t, set, testConfig(), stub.Config{Faults: []stub.Fault{f}})
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 2, Warmup: 1})
	require.ErrorIs(t, err, bench.ErrStopped)
	require.ErrorContains(t, err, "warmup")
	require.Equal(t, "http_500", rec.Stopped.ErrorClass)
	require.Zero(t, rec.Throughput.Judgments)
	path := filepath.Join(t.TempDir(), "checks_c2.json")
	require.NoError(t, receipts.WriteFile(path, rec))
	back, err := receipts.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, back.Stopped.Message, "warmup: ")
}

// A per-request timeout ends the run cleanly with reason "timeout". The
// timeout is 2 s against answers of milliseconds (a loaded machine cannot
// close that gap), the slow answer never comes.
func TestMeasureTimeout(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 8)
	f, err := stub.ParseFault("slow:match=|" + set.Cases[3].ID + "|,delay=10m")
	require.NoError(t, err)
	cfg := testConfig()
	cfg.RequestTimeout = 2 * time.Second
	sess := inProcess(t, set, cfg, stub.Config{Faults: []stub.Fault{f}})
	rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 2})
	require.ErrorIs(t, err, bench.ErrStopped)
	require.Equal(t, receipts.StopTimeout, rec.Stopped.Reason)
	require.Equal(t, 3, rec.Stopped.Index)
	require.Equal(t, "timeout", rec.Stopped.ErrorClass)
}

// Ctrl-C mid-run: the receipt is still valid and written, with a stopped
// block that says the run was cancelled. The cancel comes once items 0–4
// have finished (not after some wall time), with others in flight.
func TestMeasureCancel(t *testing.T) {
	s := getSuite(t)
	set := s.set(t, "checks")
	sess := inProcess(t, set, testConfig(), stub.Config{Profile: stub.ProfileH100Gemma4(), TimeScale: 20})
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	done := map[int]bool{}
	sess.SetHooks(bench.Hooks{Held: func(i int) {
		mu.Lock()
		defer mu.Unlock()
		done[i] = true
		if done[0] && done[1] && done[2] && done[3] && done[4] {
			cancel()
		}
	}})
	rec, err := sess.Measure(ctx, bench.Point{Concurrency: 4})
	require.ErrorIs(t, err, bench.ErrStopped)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, receipts.StopCanceled, rec.Stopped.Reason)
	require.GreaterOrEqual(t, rec.Throughput.Judgments, 5)
	require.Less(t, rec.Throughput.Judgments, len(set.Cases)/2, "nothing new starts after the cancel")
	require.Equal(t, rec.Stopped.Index, rec.Throughput.Judgments, "every item before the stop finished")

	path := filepath.Join(t.TempDir(), "partial.json")
	require.NoError(t, receipts.WriteFile(path, rec))
	back, err := receipts.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, rec.Stopped, back.Stopped)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temp file left behind")
}

// Positive control for TestStability: a twin that moves one confident
// verdict and shifts one Noul by 0.01 fails the golden comparison, naming
// both; the same twin without the changes passes.
func TestStabilityCatchesMovedAnswers(t *testing.T) {
	s := getSuite(t)
	// The twin's own golden, whatever VETBENCH_GOLDEN_DIR says: this control
	// always runs on an in-process twin.
	golden, err := receipts.ReadFile(filepath.Join("..", "receipts", "golden", "checks_c1.golden.json"))
	require.NoError(t, err, "the checks c=1 golden is committed")

	var flipItem, flipTo, noulItem string
	var noulP float64
	for _, it := range golden.Items {
		v, _ := it.Answer("verdict")
		if flipItem == "" && v.Margin() > 0.9 {
			flipItem = it.ID
			for _, l := range v.Labels {
				if l != v.Label {
					flipTo = l
					break
				}
			}
		}
		n, _ := it.Answer("payee_matches")
		if noulItem == "" && it.ID != flipItem && n.Value > 0.02 && n.Value < 0.98 {
			noulItem, noulP = it.ID, n.Value
		}
	}
	require.NotEmpty(t, flipItem)
	require.NotEmpty(t, noulItem, "a Noul that can move by 0.01 either way")
	delta := 0.01
	if noulP > 0.5 {
		delta = -0.01
	}
	shift := logitShift(noulP, delta)
	verdict, _ := s.set(t, "checks").Spec.Question("verdict")
	adjust := func(item, question string, logits map[int]float64) {
		switch {
		case item == flipItem && question == "verdict":
			top := math.Inf(-1)
			for _, l := range logits {
				top = max(top, l)
			}
			logits[controlID(t, verdict, flipTo)] = top + 8
		case item == noulItem && question == "payee_matches":
			id, _ := stub.ControlTokenID("1")
			logits[id] += shift
		}
	}

	set := s.set(t, "checks")
	clean := inProcess(t, set, testConfig(), stub.Config{})
	rec, err := clean.Measure(t.Context(), bench.Point{Concurrency: 1})
	require.NoError(t, err)
	rep, err := answers.Compare(receipts.Normalize(golden), receipts.Normalize(rec), answers.DefaultPolicy())
	require.NoError(t, err)
	require.False(t, rep.Failed(), "clean control: %v", rep.Failures())

	mutated := inProcess(t, set, testConfig(), stub.Config{Adjust: adjust})
	rec, err = mutated.Measure(t.Context(), bench.Point{Concurrency: 1})
	require.NoError(t, err)
	rep, err = answers.Compare(receipts.Normalize(golden), receipts.Normalize(rec), answers.DefaultPolicy())
	require.NoError(t, err)
	require.True(t, rep.Failed())
	failures := strings.Join(rep.Failures(), "\n")
	require.Contains(t, failures, flipItem)
	require.Contains(t, failures, "verdict")
	require.Contains(t, failures, noulItem)
	require.Contains(t, failures, "payee_matches")
	require.Len(t, rep.Failures(), 2, failures)
	require.Equal(t, 1, rep.VerdictsMoved.Confident)
	require.InDelta(t, 0.01, rep.MaxNoulDelta, 1e-6)
}

// controlID is the twin's token id of the control bound to label in q.
func controlID(t *testing.T, q judgments.Question, label string) int {
	for i, l := range q.Labels() {
		if l == label {
			id, ok := stub.ControlTokenID(judgments.Control(i))
			require.True(t, ok)
			return id
		}
	}
	t.Fatalf("no label %q in %s", label, q.ID)
	return 0
}

// A fan-out session sends a judgment's questions at once, a typevet one
// tokenizes every control before each judgment; each receipt says how (the
// in-order one says sequential), the server saw the same scoring requests
// (the tokenize calls are no vLLM requests: reconciliation holds), and the
// answers compare equal under the near-tie policy.
func TestMeasureDispatch(t *testing.T) {
	s := getSuite(t)
	set := firstCases(s.set(t, "checks"), 12)
	recs := map[receipts.Dispatch]*receipts.Receipt{}
	for _, d := range judgments.Dispatches() {
		cfg := testConfig()
		cfg.Dispatch = d
		sess := inProcess(t, set, cfg, stub.Config{})
		require.Equal(t, d, sess.Client.Dispatch())
		rec, err := sess.Measure(t.Context(), bench.Point{Concurrency: 4})
		require.NoError(t, err)
		require.Equal(t, 12*4, rec.Throughput.Requests)
		require.True(t, rec.Checks.Reconciliation.OK, rec.Checks.Reconciliation.Detail)
		recs[rec.Pins.QuestionDispatch] = rec
	}
	require.Len(t, recs, 3)
	seq := recs[receipts.DispatchSequential]
	require.NotNil(t, seq)
	for _, d := range []receipts.Dispatch{receipts.DispatchFanOut, receipts.DispatchTypevet} {
		other := recs[d]
		require.NotNil(t, other, d)
		require.NoError(t, other.Validate())
		require.Equal(t, seq.Identity.Digest, other.Identity.Digest, "the dispatch is no part of the answers' identity")
		rep, err := answers.Compare(seq, other, answers.DefaultPolicy())
		require.NoError(t, err)
		require.True(t, rep.Passed, "%v", rep.Failures)
		require.Equal(t, 12*4, rep.AnswersCompared)
	}
}

// A server that takes fewer images a prompt than the set sends refuses
// every request the same way: the point is not counted as failed work
// but refused (ErrRefused, no receipt for what was never measured), with
// the fix vLLM's own message allows — the flag when it names one, a
// vision model when the model takes none. A set within the limit runs.
func TestMeasureImagesRefused(t *testing.T) {
	s := getSuite(t)
	faces := firstCases(s.set(t, "faces"), 2)
	checks := firstCases(s.set(t, "checks"), 2)
	for _, tc := range []struct {
		name     string
		set      fixtures.Set
		noVision bool
		limit    int
		want     string // "": measured
	}{
		{"a limit of 1 for two faces", faces, false, 1, `faces sends 2 image(s) a request and the server takes at most 1 (`},
		{"the flag named", faces, false, 1, `start vLLM with --limit-mm-per-prompt '{"image": 2}' or more`},
		{"a text-only model", checks, true, 2, "the model takes no images: serve a vision-language model"},
		{"one image within a limit of 1", checks, false, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := stub.ProfileFast()
			p.LimitImages, p.NoVision = tc.limit, tc.noVision
			rec, err := inProcess(t, tc.set, testConfig(), stub.Config{Profile: p}).Measure(t.Context(), bench.Point{Concurrency: 2, Warmup: 1})
			if tc.want == "" {
				require.NoError(t, err)
				require.Equal(t, len(tc.set.Cases), rec.Throughput.Judgments)
				return
			}
			require.ErrorIs(t, err, bench.ErrRefused)
			require.NotErrorIs(t, err, bench.ErrStopped, "not a point that failed: one that cannot run here")
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, rec)
		})
	}
}
