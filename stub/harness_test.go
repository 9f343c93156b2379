package stub_test

import (
	"context"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench"
	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/stub"
	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// The external tests drive the twin with vetbench's own closed-loop pool
// (bench.Pool), through judgments.Client. Most run the whole server (HTTP
// handlers, frontend, engine loop, clock) inside a testing/synctest bubble
// over an in-memory transport: time there is fake and advances only when
// every goroutine waits, so model time moves by modelled durations alone
// and no figure depends on how loaded the machine is.

// twinURL is the in-memory twin's base URL (any host will do).
const twinURL = "http://twin"

// twin is a twin served in memory. Build it inside a bubble.
type twin struct {
	*stub.Server
	hc *http.Client
}

// newTwin starts a twin for the test; it is closed at cleanup.
func newTwin(t *testing.T, cfg stub.Config) *twin {
	t.Helper()
	s, err := stub.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return &twin{Server: s, hc: &http.Client{Transport: twintest.Transport(s)}}
}

func (tw *twin) client(opts ...judgments.ClientOption) *judgments.Client {
	return judgments.NewClient(twinURL, append([]judgments.ClientOption{judgments.WithModel(tw.Model()), judgments.WithHTTPClient(tw.hc)}, opts...)...)
}

func (tw *twin) scrape(t *testing.T) twintest.Scrape {
	t.Helper()
	return twintest.ScrapeMetrics(t.Context(), t, tw.hc, twinURL)
}

// post sends a JSON body and returns the status and body.
func (tw *twin) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, twinURL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := tw.hc.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(data)
}

// loopResult is what a closed-loop run measured (seconds on the clock the
// run ran on: fake in a bubble, wall otherwise).
type loopResult struct {
	Wall      float64
	Latencies []float64 // sorted, per judgment
	Judgments []judgments.Judgment
}

// closedLoop judges every case of set with bench.Pool at concurrency c.
// With typevetTokenize each judgment first POSTs /tokenize for every
// control of every question, as typevet does.
func closedLoop(ctx context.Context, t testing.TB, cl *judgments.Client, set fixtures.Set, c int, typevetTokenize bool) loopResult {
	t.Helper()
	ctrl, err := cl.Tokenize(ctx, set.Spec.Controls())
	require.NoError(t, err)
	var j bench.Judge = cl
	if typevetTokenize {
		// typevet's client: every control tokenized anew before each
		// judgment, then the questions in order (typevet-semantics §1.1).
		j = judgments.NewClient(cl.BaseURL(), judgments.WithModel(cl.Model()), judgments.WithMode(cl.Mode()),
			judgments.WithHTTPClient(cl.HTTPClient()), judgments.WithDispatch(judgments.DispatchTypevet))
	}
	o := bench.Pool{Concurrency: c}.Run(ctx, j, set, ctrl)
	require.Len(t, o.Results, len(set.Cases), "stopped at %d: %v", o.StopIndex, o.StopErr)
	res := loopResult{Wall: o.Wall.Seconds()}
	for _, r := range o.Results {
		require.NoError(t, r.Err, "judgment %d", r.Index)
		res.Latencies = append(res.Latencies, r.Latency().Seconds())
		res.Judgments = append(res.Judgments, r.Judgment)
	}
	sort.Float64s(res.Latencies)
	return res
}

// answersByKey indexes judgments' answers by "item|question".
func answersByKey(js []judgments.Judgment) map[string]judgments.Answer {
	out := map[string]judgments.Answer{}
	for _, j := range js {
		for _, a := range j.Answers {
			out[j.Item+"|"+a.Question] = a
		}
	}
	return out
}
