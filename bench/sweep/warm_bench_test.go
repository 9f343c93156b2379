package sweep_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/bench/probe"
	"github.com/vetbench/vetbench/bench/sweep/target"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/fixtures/sets"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/stub"
)

// BenchmarkWarmWindow shows that the first measured window of a point runs
// at the speed of the later ones: against a twin with no modelled latency
// (the fast profile, 1000× faster than real time) a fresh session — new
// connections, the server already hot from a pass of the same bodies —
// measures a first pass, then steadyPasses more
// (cold arm: the server's caches reset before each, so only the client's
// connections differ), and a raw net/http replay of the same request bodies runs on
// connections of its own at the same concurrency, the caches reset before
// it too. Each op is one fresh session. It reports
// requests/s of the first pass, of the later ones and of the replay, and
// their ratios (1 = the same), and the medians of each op's own ratios.
// warmup=sequential is the warmup this
// replaced (one judgment at a time, so c−1 connections open inside the
// window), for comparison.
//
//	go test ./bench/sweep -run '^$' -bench WarmWindow -benchtime 5x
func BenchmarkWarmWindow(b *testing.B) {
	set, err := sets.Open(context.Background(), sets.Checks, sets.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tg, err := target.InProcess(stub.Config{Profile: stub.ProfileFast(), TimeScale: 1000})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tg.Close() })
	for _, warm := range []string{"concurrent", "sequential"} {
		for _, c := range []int{16, 64} {
			b.Run(fmt.Sprintf("warmup=%s/c=%d", warm, c), func(b *testing.B) { benchWarm(b, tg.Endpoint, set, c, warm == "sequential") })
		}
	}
}

const steadyPasses = 3

// rate is requests over wall time, accumulated over ops.
type rate struct {
	requests int
	wall     time.Duration
}

func (r *rate) add(requests int, wall time.Duration) { r.requests += requests; r.wall += wall }
func (r rate) perSecond() float64                    { return float64(r.requests) / r.wall.Seconds() }

// since is the rate of what was added after before.
func (r rate) since(before rate) float64 {
	return rate{r.requests - before.requests, r.wall - before.wall}.perSecond()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func benchWarm(b *testing.B, ep bench.Endpoint, set fixtures.Set, c int, sequential bool) {
	ctx := b.Context()
	questions := len(set.Spec.Questions)
	var first, steady, raw rate
	// Each op's own ratios: an op's passes run back to back, so on a busy
	// machine their ratio drifts less than the totals'; the medians are
	// reported beside the ratios of the totals (every first pass counts in
	// both).
	var opFirstSteady, opFirstRaw []float64
	point := bench.Point{Concurrency: c, Arm: receipts.ArmCold, Warmup: 1}
	// hot sends the set once before each fresh session, the first
	// included: the server's side is hot (the twin's parse of each image
	// URL, its tokenizer cache), only the client is new.
	opener, err := bench.NewSession(ctx, ep, set, bench.Options{Mode: judgments.ModeTokenIDs, TopLogprobs: judgments.DefaultTopLogprobs, InFlight: c})
	if err != nil {
		b.Fatal(err)
	}
	hot := newReplay(b, ep.BaseURL, opener, set, c)
	for b.Loop() {
		hot.run(ctx)
		sess, err := bench.NewSession(ctx, ep, set, bench.Options{Mode: judgments.ModeTokenIDs, TopLogprobs: judgments.DefaultTopLogprobs, InFlight: c})
		if err != nil {
			b.Fatal(err)
		}
		p := point
		if sequential {
			p.Warmup = 0
			if _, err := sess.Client.Judge(ctx, set.Spec, sess.Controls, set.Cases[0].Item); err != nil {
				b.Fatal(err)
			}
		}
		measure := func(into *rate) {
			rec, err := sess.Measure(ctx, p)
			if err != nil {
				b.Fatal(err)
			}
			into.add(rec.Throughput.Judgments*questions, time.Duration(rec.Throughput.WallSeconds*float64(time.Second)))
		}
		f0, s0, r0 := first, steady, raw
		measure(&first)
		p.Warmup = 0
		for range steadyPasses {
			measure(&steady)
		}
		replay := newReplay(b, ep.BaseURL, sess, set, c)
		replay.run(ctx) // its connections, opened
		// The server's caches as cold as before each measured window.
		if _, err := probe.ResetCaches(ctx, replay.hc, ep.BaseURL, ep.Authorize); err != nil {
			b.Fatal(err)
		}
		n, wall := replay.run(ctx)
		raw.add(n, wall)
		opF, opS, opR := first.since(f0), steady.since(s0), raw.since(r0)
		opFirstSteady = append(opFirstSteady, opF/opS)
		opFirstRaw = append(opFirstRaw, opF/opR)
		replay.hc.CloseIdleConnections()
		sess.Client.HTTPClient().CloseIdleConnections()
	}
	hot.hc.CloseIdleConnections()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(first.perSecond(), "first-req/s")
	b.ReportMetric(steady.perSecond(), "steady-req/s")
	b.ReportMetric(raw.perSecond(), "raw-req/s")
	b.ReportMetric(first.perSecond()/steady.perSecond(), "first/steady")
	b.ReportMetric(first.perSecond()/raw.perSecond(), "first/raw")
	b.ReportMetric(steady.perSecond()/raw.perSecond(), "steady/raw")
	b.ReportMetric(median(opFirstSteady), "first/steady-median")
	b.ReportMetric(median(opFirstRaw), "first/raw-median")
}

// replay sends the session's request bodies with plain net/http, c at a
// time, as a load generator would (vegeta's replay of the same bodies).
type replay struct {
	hc     *http.Client
	url    string
	bodies [][]byte
	c      int
	b      *testing.B
}

func newReplay(b *testing.B, base string, sess *bench.Session, set fixtures.Set, c int) *replay {
	r := &replay{hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c}}, url: base + "/v1/chat/completions", c: c, b: b}
	for _, cs := range set.Cases {
		urls := make([]string, len(cs.Item.Images))
		for i, im := range cs.Item.Images {
			urls[i] = im.DataURL()
		}
		for _, q := range set.Spec.Questions {
			req, err := judgments.BuildRequest(sess.Client.Model(), judgments.ModeTokenIDs, judgments.DefaultTopLogprobs, cs.Item, q, sess.Controls, urls)
			if err != nil {
				b.Fatal(err)
			}
			body, err := json.Marshal(req)
			if err != nil {
				b.Fatal(err)
			}
			r.bodies = append(r.bodies, body)
		}
	}
	return r
}

// run sends every body once; it returns how many and the wall time.
func (r *replay) run(ctx context.Context) (int, time.Duration) {
	var next, done atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range r.c {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(r.bodies) {
					return
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(r.bodies[i]))
				if err != nil {
					r.b.Error(err)
					return
				}
				req.Header.Set("Content-Type", "application/json")
				res, err := r.hc.Do(req)
				if err != nil {
					r.b.Error(err)
					return
				}
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != http.StatusOK {
					r.b.Errorf("replay: HTTP %d, %v", res.StatusCode, err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return int(done.Load()), time.Since(start)
}
