// Package twintest holds what the twin's tests share between the white-box
// tests of package stub and the external ones (package stub_test, which may
// import bench): images, the checks set in compact form, /metrics parsing,
// an in-memory transport, and typevet's throughput receipts with the
// figures the profile is calibrated on. It imports no stub, so both test
// packages can use it.
package twintest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/fixtures/checks"
	"github.com/vetbench/vetbench/judgments"
)

// PNGImage is a w×h two-colour PNG whose pixels encode seed, so every
// seed gives distinct bytes (1-bit palette: quick to encode and small).
func PNGImage(t testing.TB, w, h, seed int) judgments.Image {
	t.Helper()
	img := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Gray{Y: 0xf0}, color.Gray{}})
	for b := range 32 {
		if seed>>b&1 == 1 {
			img.SetColorIndex(10+b%max(1, w-20), 10, 1)
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return judgments.Image{MIME: "image/png", Data: buf.Bytes()}
}

// JPEGImage is a w×h grey JPEG whose pixels depend on seed.
func JPEGImage(t testing.TB, w, h, seed int) judgments.Image {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(seed*31 + i/w)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return judgments.Image{MIME: "image/jpeg", Data: buf.Bytes()}
}

// CompactChecks is fixtures/checks' set (its cases, questions and state
// text, so the prompts are the generator's, token for token) with each
// rendered check replaced by a distinct compact PNG of the same 1000×440
// size. The twin reads only an image's size and digest, and encoding the
// rendered 87 KB checks would make the client, not the profile, set the
// pace of a run.
func CompactChecks(t testing.TB) fixtures.Set {
	t.Helper()
	cases, err := checks.Cases(0, checks.DefaultRows)
	if err != nil {
		t.Fatal(err)
	}
	set := fixtures.Set{Name: "checks", Spec: checks.Spec(), Verdict: checks.Verdict, CannotTell: checks.CannotTell}
	for i, c := range cases {
		set.Cases = append(set.Cases, fixtures.Case{Group: string(c.Variant), Item: judgments.Item{
			ID: c.ID(), State: fmt.Sprintf(checks.State, c.Row.Text()), Images: []judgments.Image{PNGImage(t, 1000, 440, i)},
		}})
	}
	return set
}

// Transport serves every request with h, in memory: no sockets, so a twin
// can run inside a testing/synctest bubble, where time is fake and moves
// only when every goroutine waits (a socket read is not such a wait). As
// over a real connection, a request whose context ends gets the context's
// error at once. A handler that aborts (http.ErrAbortHandler, as the
// reset fault does without a hijackable connection) gives an error.
func Transport(h http.Handler) http.RoundTripper { return handlerTransport{h} }

type handlerTransport struct{ h http.Handler }

func (rt handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	type result struct {
		res *http.Response
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				if r != http.ErrAbortHandler {
					panic(r)
				}
				done <- result{err: errors.New("in-memory transport: handler aborted the response")}
			}
		}()
		rec := httptest.NewRecorder()
		rt.h.ServeHTTP(rec, req)
		done <- result{res: rec.Result()}
	}()
	select {
	case r := <-done:
		if err := req.Context().Err(); err != nil {
			return nil, err
		}
		if r.err != nil {
			return nil, r.err
		}
		r.res.Request = req
		return r.res, nil
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
}

// StreamTransport serves every request with h in memory, like Transport,
// but hands the response to the client as soon as the handler sends its
// status (WriteHeader, a Write or a Flush) and streams the body through a
// pipe as the handler writes it, so a client sees server-sent events when
// they are sent: a twin's stream keeps its timing on fake time. As over a
// connection, closing the body or ending the request's context cancels
// the handler's context, and a handler that aborts mid-body
// (http.ErrAbortHandler) cuts the body with io.ErrUnexpectedEOF.
func StreamTransport(h http.Handler) http.RoundTripper { return streamTransport{h} }

type streamTransport struct{ h http.Handler }

// pipeWriter is the handler's side of a streamed response.
type pipeWriter struct {
	header  http.Header
	pw      *io.PipeWriter
	pr      *io.PipeReader
	started chan *http.Response
	req     *http.Request
	sent    bool
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	if w.sent {
		return
	}
	w.sent = true
	res := &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: w.header.Clone(), Body: w.pr, ContentLength: -1, Request: w.req}
	if n, err := strconv.ParseInt(w.header.Get("Content-Length"), 10, 64); err == nil {
		res.ContentLength = n
	}
	w.started <- res
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(b)
}

func (w *pipeWriter) Flush() { w.WriteHeader(http.StatusOK) }

// body is the client's side: Close cancels the handler, as a closed
// connection does.
type body struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b body) Close() error {
	b.cancel()
	return b.PipeReader.Close()
}

func (rt streamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, pr: pr, started: make(chan *http.Response, 1), req: req}
	failed := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer func() {
			if r := recover(); r != nil {
				if r != http.ErrAbortHandler {
					panic(r)
				}
				if w.sent {
					pw.CloseWithError(io.ErrUnexpectedEOF)
				} else {
					failed <- errors.New("in-memory transport: handler aborted the response")
				}
				return
			}
			w.WriteHeader(http.StatusOK)
			pw.Close()
		}()
		rt.h.ServeHTTP(w, req.WithContext(ctx))
	}()
	go func() {
		select {
		case <-ctx.Done():
			pr.CloseWithError(ctx.Err())
		case <-finished:
		}
	}()
	select {
	case res := <-w.started:
		res.Body = body{pr, cancel}
		return res, nil
	case err := <-failed:
		cancel()
		return nil, err
	case <-req.Context().Done():
		cancel()
		return nil, req.Context().Err()
	}
}

// Get fetches url with hc and fails the test on anything but a 200.
func Get(ctx context.Context, t testing.TB, hc *http.Client, url string) ([]byte, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d: %s", url, res.StatusCode, body)
	}
	return body, res.Header
}

// Scrape is one /metrics reading parsed with prometheus' own parser.
type Scrape map[string]*dto.MetricFamily

// ScrapeMetrics reads base/metrics with hc; the content type must be
// prometheus text format 0.0.4, as vLLM's is.
func ScrapeMetrics(ctx context.Context, t testing.TB, hc *http.Client, base string) Scrape {
	t.Helper()
	body, header := Get(ctx, t, hc, base+"/metrics")
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("/metrics content type %q, want text format 0.0.4", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// Value sums a family's samples (counter, gauge or untyped) over all
// label sets matching the given label name/value pairs.
func (s Scrape) Value(name string, match ...string) float64 {
	f, ok := s[name]
	if !ok {
		return 0
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		if !labelsMatch(m, match) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

func labelsMatch(m *dto.Metric, match []string) bool {
	for i := 0; i+1 < len(match); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == match[i] && l.GetValue() == match[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Hist returns a histogram's count and sum, summed over its series.
func (s Scrape) Hist(name string) (count, sum float64) {
	f, ok := s[name]
	if !ok {
		return 0, 0
	}
	for _, m := range f.GetMetric() {
		count += float64(m.GetHistogram().GetSampleCount())
		sum += m.GetHistogram().GetSampleSum()
	}
	return count, sum
}

// Tolerance is the H100 profile's promise: every calibrated figure within
// ±15% of the receipt it was fitted to.
const Tolerance = 0.15

// Throughput is one typevet receipt's throughput block (the fields the
// calibration reads).
type Throughput struct {
	Concurrency        int     `json:"concurrency"`
	WallSeconds        float64 `json:"wall_seconds"`
	Judgments          int     `json:"judgments"`
	JudgmentsPerSecond float64 `json:"judgments_per_second"`
	Latency            struct {
		P50 float64 `json:"p50"`
		P95 float64 `json:"p95"`
	} `json:"latency_seconds"`
	Server struct {
		Queue   struct{ Count, Sum float64 } `json:"queue"`
		Prefill struct{ Count, Sum float64 } `json:"prefill"`
		E2E     struct{ Count, Sum float64 } `json:"e2e"`
		HitRate float64                      `json:"prefix_cache_hit_rate"`
		Counter map[string]float64           `json:"counters"`
	} `json:"server"`
}

// Receipt names one typevet receipt's file and set.
type Receipt struct {
	File       string     `json:"file"`
	Set        string     `json:"set"`
	Throughput Throughput `json:"throughput"`
}

// LoadTypevetThroughput reads stub/testdata/typevet_throughput.json (copied
// from typevet's receipts), keyed "<set>_full_c<c>" and
// "<set>_subset_c<c>" (the #336 sweep); tests run in stub/.
func LoadTypevetThroughput(t testing.TB) map[string]Receipt {
	t.Helper()
	data, err := os.ReadFile("testdata/typevet_throughput.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Receipts map[string]Receipt `json:"receipts"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("testdata/typevet_throughput.json: %v", err)
	}
	return doc.Receipts
}

// Figures are the five throughput figures the profile is calibrated on, in
// model seconds.
type Figures struct {
	JPS, P50, P95, HitRate, QueueMean float64
}

// MedianFigures is each figure's median over runs (the middle one; the
// mean of the middle two for an even count).
func MedianFigures(runs []Figures) Figures {
	med := func(get func(Figures) float64) float64 {
		v := make([]float64, len(runs))
		for i, f := range runs {
			v[i] = get(f)
		}
		slices.Sort(v)
		n := len(v)
		if n%2 == 1 {
			return v[n/2]
		}
		return (v[n/2-1] + v[n/2]) / 2
	}
	return Figures{
		JPS:       med(func(f Figures) float64 { return f.JPS }),
		P50:       med(func(f Figures) float64 { return f.P50 }),
		P95:       med(func(f Figures) float64 { return f.P95 }),
		HitRate:   med(func(f Figures) float64 { return f.HitRate }),
		QueueMean: med(func(f Figures) float64 { return f.QueueMean }),
	}
}

// ReceiptFigures are a receipt's five figures.
func ReceiptFigures(tp Throughput) Figures {
	return Figures{tp.JudgmentsPerSecond, tp.Latency.P50, tp.Latency.P95, tp.Server.HitRate, tp.Server.Queue.Sum / tp.Server.Queue.Count}
}

// Row is one figure of a comparison.
type Row struct {
	Name, Unit string // Unit names the twin/receipt ratio as a benchmark metric
	Got, Want  float64
}

// Ratio is twin/receipt.
func (r Row) Ratio() float64 { return r.Got / r.Want }

// Outside says whether the figure misses the receipt by more than the
// tolerance (or cannot be compared).
func (r Row) Outside() bool {
	rel := r.Got/r.Want - 1
	return math.IsNaN(rel) || math.IsInf(rel, 0) || math.Abs(rel) > Tolerance
}

// Rows pairs got and want figure by figure.
func Rows(got, want Figures) []Row {
	return []Row{
		{"judgments/s", "jps-ratio", got.JPS, want.JPS},
		{"p50 latency s", "p50-ratio", got.P50, want.P50},
		{"p95 latency s", "p95-ratio", got.P95, want.P95},
		{"prefix hit rate", "hitrate-ratio", got.HitRate, want.HitRate},
		{"queue time s", "queue-ratio", got.QueueMean, want.QueueMean},
	}
}

// CompareFigures logs got next to want and returns the figures outside
// the tolerance, each described.
func CompareFigures(t testing.TB, label string, got, want Figures) []string {
	t.Helper()
	var bad []string
	for _, r := range Rows(got, want) {
		rel := r.Ratio() - 1
		mark := ""
		if r.Outside() {
			mark = "  <-- outside ±15%"
			bad = append(bad, fmt.Sprintf("%s %s: twin %.4g, receipt %.4g (%+.1f%%)", label, r.Name, r.Got, r.Want, 100*rel))
		}
		t.Logf("%-14s %-16s twin %10.4g  receipt %10.4g  %+6.1f%%%s", label, r.Name, r.Got, r.Want, 100*rel, mark)
	}
	return bad
}

// NearestRank is typevet's percentile: sorted[ceil(q·n)-1].
func NearestRank(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
