// Package scrape reads a vLLM server's Prometheus /metrics page and turns two
// readings, one before and one after a measured window, into the window's
// deltas (receipts.Server): counters summed over labels and engines, histogram
// counts, sums and percentile estimates, gauges before and after, and cache hit
// rates.
//
// Counters in Prometheus are cumulative since the server started, so only a
// delta says anything about a run; the presence of a series proves nothing
// (vLLM creates its series eagerly at start). Anything that makes a delta
// ambiguous — a counter that went backwards, a changed <name>_created
// timestamp, changed bucket edges, a series that appeared or vanished — is
// recorded in Server.Status and Server.Problems, never guessed around.
package scrape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vetbench/vetbench/judgments"
)

// DefaultMaxBytes bounds a /metrics body. vLLM's page is ~50 KB per engine;
// a body past this is refused rather than cut, since a truncated exposition
// would silently lose series.
const DefaultMaxBytes int64 = 32 << 20

// acceptHeader asks for the classic text format, the one vLLM's
// prometheus_client serves and the one whose family names we rely on
// (counters as <name>_total).
const acceptHeader = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// Snapshot is one reading of /metrics. A failed reading is still a Snapshot:
// Err says why, and Diff reports it instead of figures.
type Snapshot struct {
	// URL is where it was read, with any password hidden.
	URL string
	// At is when the body was read (client clock).
	At time.Time
	// Families are keyed by the exposed family name: counters as
	// "vllm:x_total", their creation stamps as a separate "vllm:x_created"
	// gauge family.
	Families map[string]*dto.MetricFamily
	// Err is set when the reading failed; Families is then nil.
	Err error
}

// Option configures Fetch.
type Option func(*fetchConfig)

type fetchConfig struct {
	authorize func(*http.Request)
	maxBytes  int64
}

// WithAuthorize lets the caller add credentials to the request (vLLM's
// --api-key does not cover /metrics, but a proxy in front may).
func WithAuthorize(f func(*http.Request)) Option {
	return func(c *fetchConfig) { c.authorize = f }
}

// WithMaxBytes overrides DefaultMaxBytes.
func WithMaxBytes(n int64) Option {
	return func(c *fetchConfig) { c.maxBytes = n }
}

// Fetch reads target (a full /metrics URL) once. On failure it returns the error
// and a Snapshot carrying it, so the caller can still hand the Snapshot to Diff
// and have the failure recorded in the receipt.
func Fetch(ctx context.Context, hc *http.Client, target string, opts ...Option) (Snapshot, error) {
	cfg := fetchConfig{maxBytes: DefaultMaxBytes}
	for _, o := range opts {
		o(&cfg)
	}
	s := Snapshot{URL: redact(target)}
	fams, err := fetch(ctx, hc, target, cfg)
	s.At = time.Now()
	if err != nil {
		s.Err = fmt.Errorf("scrape %s: %w", s.URL, err)
		return s, s.Err
	}
	s.Families = fams
	return s, nil
}

// DefaultTimeout bounds a reading when neither the context nor the HTTP
// client does: a frozen server never holds a run.
const DefaultTimeout = 10 * time.Second

func fetch(ctx context.Context, hc *http.Client, target string, cfg fetchConfig) (map[string]*dto.MetricFamily, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	if _, ok := ctx.Deadline(); !ok && hc.Timeout <= 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, judgments.RedactError(err)
	}
	req.Header.Set("Accept", acceptHeader)
	if cfg.authorize != nil {
		cfg.authorize(req)
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, judgments.RedactError(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, cfg.maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if res.StatusCode == http.StatusUnauthorized {
		// vLLM's --api-key leaves /metrics public; a proxy in front may not.
		return nil, judgments.Unauthorized("", req.Header.Get("Authorization") != "")
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", res.StatusCode, snippet(cfg.authorize, body))
	}
	if int64(len(body)) > cfg.maxBytes {
		return nil, fmt.Errorf("body exceeds %d bytes", cfg.maxBytes)
	}
	return Parse(bytes.NewReader(body), res.Header.Get("Content-Type"))
}

// ErrContentType is returned for a /metrics answer in a format Parse does not
// read.
var ErrContentType = errors.New("scrape: unsupported content type")

// Parse reads an exposition in the format its Content-Type names: the
// Prometheus text format (text/plain, version 0.0.4 or none) or delimited
// protobuf. OpenMetrics is refused: it names counter families without
// "_total", and mixing the two namings is exactly how a scraper ends up
// reading the wrong series.
func Parse(r io.Reader, contentType string) (map[string]*dto.MetricFamily, error) {
	h := http.Header{}
	h.Set("Content-Type", contentType)
	switch f := expfmt.ResponseFormat(h); f.FormatType() {
	case expfmt.TypeTextPlain:
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(r)
		if err != nil {
			return nil, fmt.Errorf("parse text exposition: %w", err)
		}
		return fams, nil
	case expfmt.TypeProtoDelim:
		dec := expfmt.NewDecoder(r, f)
		fams := map[string]*dto.MetricFamily{}
		for {
			mf := &dto.MetricFamily{}
			if err := dec.Decode(mf); err != nil {
				if errors.Is(err, io.EOF) {
					return fams, nil
				}
				return nil, fmt.Errorf("parse protobuf exposition: %w", err)
			}
			if old, ok := fams[mf.GetName()]; ok {
				old.Metric = append(old.Metric, mf.Metric...)
				continue
			}
			fams[mf.GetName()] = mf
		}
	default:
		return nil, fmt.Errorf("%w %q (want text/plain; version=0.0.4)", ErrContentType, contentType)
	}
}

// FromText builds a Snapshot from a text exposition, for tests and for
// replaying saved pages.
func FromText(r io.Reader, at time.Time) (Snapshot, error) {
	fams, err := Parse(r, string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	if err != nil {
		return Snapshot{At: at, Err: err}, err
	}
	return Snapshot{At: at, Families: fams}, nil
}

// redact hides a URL's user info and query: snapshots and errors end up in
// receipts and logs.
func redact(raw string) string { return judgments.RedactURL(raw) }

// snippet is the start of a server's body fit for a message: the key
// authorize sends redacted (one shorter than judgments.MinMaskedKey is
// not masked on the wire), at most 200 bytes, Printable (it reaches the
// terminal and the receipt's notes).
func snippet(authorize func(*http.Request), b []byte) string {
	s := judgments.SentKey(authorize).Redact(string(bytes.TrimSpace(b)))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return judgments.Printable(s)
}
