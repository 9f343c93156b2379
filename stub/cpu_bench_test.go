//go:build unix

package stub_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/fixtures/sets"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// capturedRequest is one chat request as vetbench's client sent it.
type capturedRequest struct {
	id   string
	body []byte
}

// capturingTransport records every chat request's body on its way to h.
type capturingTransport struct {
	h   http.RoundTripper
	mu  sync.Mutex
	got []capturedRequest
}

func (c *capturingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/v1/chat/completions" {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.got = append(c.got, capturedRequest{id: req.Header.Get("X-Request-Id"), body: body})
		c.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	return c.h.RoundTrip(req)
}

// judgmentBodies judges every item of the named set once with vetbench's
// client against an in-memory twin and returns each judgment's chat
// requests (in the order the client sent them).
func judgmentBodies(b *testing.B, name string) [][]capturedRequest {
	b.Helper()
	ctx := b.Context()
	set, err := sets.Open(ctx, name, sets.Options{})
	require.NoError(b, err)
	s, err := stub.New(stub.Config{})
	require.NoError(b, err)
	defer s.Close()
	ct := &capturingTransport{h: twintest.Transport(s)}
	cl := judgments.NewClient(twinURL, judgments.WithModel(s.Model()), judgments.WithHTTPClient(&http.Client{Transport: ct}))
	ctrl, err := cl.Tokenize(ctx, set.Spec.Controls())
	require.NoError(b, err)
	var out [][]capturedRequest
	for _, c := range set.Cases {
		ct.got = nil
		_, err := cl.Judge(ctx, set.Spec, ctrl, c.Item)
		require.NoError(b, err)
		out = append(out, ct.got)
	}
	return out
}

// cpuTime is this process's user + system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// replay sends every judgment's recorded requests to url over loopback
// HTTP from c workers, each judgment's questions one after another (as
// vetbench's client sends them), reading and discarding every answer: the
// cheapest client that sends the very bytes vetbench sends.
func replay(ctx context.Context, b *testing.B, hc *http.Client, url string, js [][]capturedRequest, c int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, c)
	for range c {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(js) {
					return
				}
				for _, r := range js[i] {
					req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(r.body))
					if err != nil {
						errs <- err
						return
					}
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("X-Request-Id", r.id)
					res, err := hc.Do(req)
					if err != nil {
						errs <- err
						return
					}
					_, _ = io.Copy(io.Discard, res.Body)
					_ = res.Body.Close()
					if res.StatusCode != http.StatusOK {
						errs <- fmt.Errorf("%s: HTTP %d", r.id, res.StatusCode)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(b, <-errs)
}

// cannedServer answers every request with body after reading the request
// whole: the replay's own cost, with no twin behind it.
func cannedServer(b *testing.B, body []byte) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// BenchmarkTwinCPU is what the fast twin costs the machine per judgment:
// the process CPU time (getrusage) of a raw replay of vetbench's own
// request bodies against the in-process twin over loopback HTTP, minus
// that of the same replay against a canned answer (the client's and the
// loopback's share). One op is one pass over the set at c=16; the twin
// keeps its caches across passes, as a run's later passes do. On 2 cores
// the twin is cheap when twin-cpu-s/judgment is well below the modelled
// time it serves per judgment (fast profile: about 1 ms per question).
func BenchmarkTwinCPU(b *testing.B) {
	for _, name := range []string{sets.Checks, sets.Faces} {
		b.Run("set="+name, func(b *testing.B) {
			js := judgmentBodies(b, name)
			const c = 16
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c, MaxConnsPerHost: c}}
			defer hc.CloseIdleConnections()
			rs, err := stub.Start(stub.Config{})
			require.NoError(b, err)
			defer rs.Close()
			ctx := b.Context()
			replay(ctx, b, hc, rs.URL(), js, c) // warm: connections, caches

			// The canned answer is one of the twin's own, so the replay reads
			// as many bytes as against the twin.
			res, err := hc.Post(rs.URL()+"/v1/chat/completions", "application/json", bytes.NewReader(js[0][0].body))
			require.NoError(b, err)
			answer, err := io.ReadAll(res.Body)
			_ = res.Body.Close()
			require.NoError(b, err)
			canned := cannedServer(b, answer)
			replay(ctx, b, hc, canned, js, c)

			var twin, client time.Duration
			n := 0
			for b.Loop() {
				t0 := cpuTime(b)
				replay(ctx, b, hc, rs.URL(), js, c)
				t1 := cpuTime(b)
				replay(ctx, b, hc, canned, js, c)
				t2 := cpuTime(b)
				twin += t1 - t0
				client += t2 - t1
				n += len(js)
			}
			perJudgment := func(d time.Duration) float64 { return d.Seconds() / float64(n) }
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(perJudgment(twin), "total-cpu-s/judgment")
			b.ReportMetric(perJudgment(client), "replay-cpu-s/judgment")
			b.ReportMetric(perJudgment(twin-client), "twin-cpu-s/judgment")
		})
	}
}
