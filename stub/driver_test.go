package stub

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vetbench/vetbench/fixtures"
	"github.com/vetbench/vetbench/judgments"
)

// loopResult is what a closed-loop run measured, in wall seconds.
type loopResult struct {
	Wall      float64
	Latencies []float64 // sorted, per judgment
	Judgments []judgments.Judgment
}

// closedLoop judges every case of set with c workers, each taking the next
// case, as typevet's pool does. With typevetTokenize each judgment first
// POSTs /tokenize for every control of every question, as typevet does.
func closedLoop(ctx context.Context, t testing.TB, cl *judgments.Client, set fixtures.Set, c int, typevetTokenize bool) loopResult {
	t.Helper()
	ctrl, err := cl.Tokenize(ctx, set.Spec.Controls())
	if err != nil {
		t.Fatalf("tokenize: %v", err)
	}
	var next atomic.Int64
	lat := make([]float64, len(set.Cases))
	js := make([]judgments.Judgment, len(set.Cases))
	errs := make(chan error, c)
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(set.Cases) {
					return
				}
				t0 := time.Now()
				if typevetTokenize {
					for _, q := range set.Spec.Questions {
						for _, ctl := range q.Controls() {
							if err := rawTokenize(ctx, cl, ctl); err != nil {
								errs <- err
								return
							}
						}
					}
				}
				j, err := cl.Judge(ctx, set.Spec, ctrl, set.Cases[i].Item)
				if err != nil {
					errs <- err
					return
				}
				lat[i] = time.Since(t0).Seconds()
				js[i] = j
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start).Seconds()
	close(errs)
	for err := range errs {
		t.Fatalf("closed loop: %v", err)
	}
	sort.Float64s(lat)
	return loopResult{Wall: wall, Latencies: lat, Judgments: js}
}

// rawTokenize is one uncached POST /tokenize, as typevet sends per control.
func rawTokenize(ctx context.Context, cl *judgments.Client, text string) error {
	body := fmt.Sprintf(`{"model":%q,"prompt":%q,"add_special_tokens":false}`, cl.Model(), text)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.BaseURL()+"/tokenize", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := cl.HTTPClient().Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("tokenize: HTTP %d", res.StatusCode)
	}
	return nil
}

// scrape is one /metrics reading parsed with prometheus' own parser.
type scrape map[string]*dto.MetricFamily

func scrapeMetrics(ctx context.Context, t testing.TB, base string) scrape {
	t.Helper()
	body, header := get(ctx, t, base+"/metrics")
	if ct := header.Get("Content-Type"); ct != ContentType {
		t.Fatalf("/metrics content type %q, want %q", ct, ContentType)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

func get(ctx context.Context, t testing.TB, url string) ([]byte, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
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

// value sums a family's samples (counter, gauge or untyped) over all
// label sets matching the given label pairs.
func (s scrape) value(name string, match ...string) float64 {
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

// hist returns a histogram's summed count and sum.
func (s scrape) hist(name string) (count, sum float64) {
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
