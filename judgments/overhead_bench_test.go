package judgments_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/fixtures/sets"
	"github.com/vetbench/vetbench/judgments"
)

// overheadModel is the model name both sides send.
const overheadModel = "google/gemma-4-31B-it"

// BenchmarkClientOverhead measures what vetbench's client costs on top of
// plain net/http: against one in-process, zero-latency server that answers
// every question with a canned vLLM-shaped body, it runs the real Judge
// path over a set (c judgments in flight, questions in order) and a raw
// replay of the very same request bodies and headers, pre-built (c plain
// net/http workers, one request after another), alternating within each op.
// Both sides share the server's CPU: the ratio and the added latency are
// what the client itself costs. allocs/req and B/req are process-wide
// (server included, the same for both): their difference is the client's.
//
//	go test ./judgments -run '^$' -bench ClientOverhead -benchtime 2s
func BenchmarkClientOverhead(b *testing.B) {
	for _, name := range []string{sets.Checks, sets.Faces} {
		set, err := sets.Open(context.Background(), name, sets.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("set=%s/c=%d", name, c), func(b *testing.B) { benchOverhead(b, set, c) })
		}
	}
}

// overheadSide is one side's totals over the benchmark's ops.
type overheadSide struct {
	requests      int
	wall          time.Duration
	mallocs, heap uint64
	latencies     []float64 // seconds per request
}

func (s *overheadSide) add(requests int, wall time.Duration, before, after *runtime.MemStats, lat []float64) {
	s.requests += requests
	s.wall += wall
	s.mallocs += after.Mallocs - before.Mallocs
	s.heap += after.TotalAlloc - before.TotalAlloc
	s.latencies = append(s.latencies, lat...)
}

func (s *overheadSide) report(b *testing.B, name string) {
	n := float64(max(s.requests, 1))
	b.ReportMetric(float64(s.requests)/s.wall.Seconds(), name+"-req/s")
	b.ReportMetric(float64(s.mallocs)/n, name+"-allocs/req")
	b.ReportMetric(float64(s.heap)/n, name+"-B/req")
	b.ReportMetric(p50(s.latencies)*1e3, name+"-p50-ms")
}

func benchOverhead(b *testing.B, set fixtures.Set, c int) {
	ctrl := judgments.Controls{}
	for i, k := range set.Spec.Controls() {
		ctrl[k] = 236048 + i
	}
	srv := httptest.NewServer(newCannedVLLM(set.Spec, ctrl, judgments.ModeTokenIDs))
	b.Cleanup(srv.Close)
	ctx := b.Context()

	client := judgments.NewClient(srv.URL, judgments.WithModel(overheadModel))
	raw := newRawReplay(b, srv.URL, set, ctrl, c)

	judge := func() (int, []float64) {
		var next atomic.Int64
		lat := make([][]float64, c)
		counts := make([]int, c)
		var wg sync.WaitGroup
		for w := range c {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= len(set.Cases) {
						return
					}
					start := time.Now()
					j, err := client.Judge(ctx, set.Spec, ctrl, set.Cases[i].Item)
					d := time.Since(start)
					if err != nil {
						b.Error(err)
						return
					}
					counts[w] += j.Requests
					per := d.Seconds() / float64(max(j.Requests, 1))
					for range j.Requests {
						lat[w] = append(lat[w], per)
					}
				}
			})
		}
		wg.Wait()
		var n int
		for _, k := range counts {
			n += k
		}
		return n, slices.Concat(lat...)
	}

	// Warm both sides: connections, the client's per-item work.
	judge()
	raw.run(ctx)
	if b.Failed() {
		return
	}
	var vb, rr overheadSide
	var m0, m1 runtime.MemStats
	for i := 0; b.Loop(); i++ {
		sides := []func(){
			func() {
				runtime.ReadMemStats(&m0)
				t := time.Now()
				n, lat := judge()
				wall := time.Since(t)
				runtime.ReadMemStats(&m1)
				vb.add(n, wall, &m0, &m1, lat)
			},
			func() {
				runtime.ReadMemStats(&m0)
				t := time.Now()
				n, lat := raw.run(ctx)
				wall := time.Since(t)
				runtime.ReadMemStats(&m1)
				rr.add(n, wall, &m0, &m1, lat)
			},
		}
		if i%2 == 1 { // alternate who goes first: neither always runs on a warmer heap
			sides[0], sides[1] = sides[1], sides[0]
		}
		sides[0]()
		sides[1]()
	}
	b.StopTimer()
	vb.report(b, "vetbench")
	rr.report(b, "raw")
	b.ReportMetric((float64(vb.requests)/vb.wall.Seconds())/(float64(rr.requests)/rr.wall.Seconds()), "ratio")
	b.ReportMetric((p50(vb.latencies)-p50(rr.latencies))*1e3, "added-p50-ms")
	b.ReportMetric(0, "ns/op") // an op is one pass of each side: its time means nothing
}

// p50 is the nearest-rank median (receipts/tally's rule).
func p50(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[max((len(s)+1)/2-1, 0)]
}

// rawReplay sends pre-built requests with plain net/http: what a load
// generator (vegeta) does with the bodies vetbench sends.
type rawReplay struct {
	b      *testing.B
	hc     *http.Client
	url    string
	bodies [][]byte
	ids    []string
	c      int
}

func newRawReplay(b *testing.B, base string, set fixtures.Set, ctrl judgments.Controls, c int) *rawReplay {
	r := &rawReplay{b: b, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c}}, url: base + "/v1/chat/completions", c: c}
	for _, cs := range set.Cases {
		urls := make([]string, len(cs.Item.Images))
		for i, im := range cs.Item.Images {
			urls[i] = im.DataURL()
		}
		for _, q := range set.Spec.Questions {
			req, err := judgments.BuildRequest(overheadModel, judgments.ModeTokenIDs, judgments.DefaultTopLogprobs, cs.Item, q, ctrl, urls)
			if err != nil {
				b.Fatal(err)
			}
			body, err := json.Marshal(req)
			if err != nil {
				b.Fatal(err)
			}
			r.bodies = append(r.bodies, body)
			r.ids = append(r.ids, judgments.RequestID("vetbench", cs.Item.ID, q.ID))
		}
	}
	b.Cleanup(r.hc.CloseIdleConnections)
	return r
}

func (r *rawReplay) run(ctx context.Context) (int, []float64) {
	var next atomic.Int64
	lat := make([][]float64, r.c)
	var wg sync.WaitGroup
	for w := range r.c {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(r.bodies) {
					return
				}
				start := time.Now()
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(r.bodies[i]))
				if err != nil {
					r.b.Error(err)
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Request-Id", r.ids[i])
				res, err := r.hc.Do(req)
				if err != nil {
					r.b.Error(err)
					return
				}
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err != nil || res.StatusCode != http.StatusOK {
					r.b.Errorf("raw replay: HTTP %d, %v", res.StatusCode, err)
					return
				}
				lat[w] = append(lat[w], time.Since(start).Seconds())
			}
		})
	}
	wg.Wait()
	all := slices.Concat(lat...)
	return len(all), all
}

// cannedVLLM answers /v1/chat/completions at once with a body shaped like
// vLLM's (token_ids mode: every requested id among the top logprobs, the
// sampled token first), chosen by the question named in X-Request-Id so
// that it never parses a request: the server's cost is the same for both
// sides and as small as net/http allows.
type cannedVLLM struct {
	answers map[string][]byte // question id → body
}

func newCannedVLLM(spec judgments.Spec, ctrl judgments.Controls, mode judgments.Mode) cannedVLLM {
	h := cannedVLLM{answers: map[string][]byte{}}
	token := func(k string) string { return strconv.Quote(k) } // top_logprobs: the text
	if mode == judgments.ModeTokenIDs {
		token = func(k string) string { return `"token_id:` + strconv.Itoa(ctrl[k]) + `"` }
	}
	for _, q := range spec.Questions {
		var entries []string
		for i, k := range q.Controls() {
			// Decreasing logprobs: the first control wins, off no tie.
			entries = append(entries, fmt.Sprintf(`{"token":%s,"logprob":%s,"bytes":[%d]}`,
				token(k), strconv.FormatFloat(-0.25-float64(i), 'g', -1, 64), 48+i))
		}
		h.answers[q.ID] = []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"` + overheadModel + `",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"0","reasoning":null},` +
			`"logprobs":{"content":[{"token":` + token(q.Controls()[0]) + `,"logprob":-0.25,"bytes":[48],"top_logprobs":[` + strings.Join(entries, ",") + `]}]},` +
			`"finish_reason":"length","stop_reason":null,"token_ids":null}],` +
			`"usage":{"prompt_tokens":480,"total_tokens":481,"completion_tokens":1,"prompt_tokens_details":null},` +
			`"prompt_logprobs":null,"kv_transfer_params":null}`)
	}
	return h
}

func (h cannedVLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	_, q, _ := judgments.ParseRequestID(r.Header.Get("X-Request-Id"))
	body, ok := h.answers[q]
	if r.URL.Path != "/v1/chat/completions" || !ok {
		http.Error(w, `{"error":{"message":"no canned answer","type":"BadRequestError","param":null,"code":400}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}
