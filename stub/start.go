package stub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Running is a twin serving HTTP in-process on a loopback port.
type Running struct {
	*Server
	srv *http.Server
	url string
}

// Start builds a twin (New) and serves it on 127.0.0.1 at a free port. With
// Config.Log, the log starts with the line Serve prints: what it serves, where.
func Start(cfg Config) (*Running, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("stub: listen: %w", err)
	}
	rs := &Running{Server: s, srv: httpServer(s), url: "http://" + ln.Addr().String()}
	if cfg.Log != nil {
		// Its log starts as a served twin's output does (Serve).
		fmt.Fprintln(s.cfg.Log, s.serving(cfg, ln.Addr()))
	}
	sl := withArrivals(rs.srv, ln)
	go func() { _ = rs.srv.Serve(sl) }()
	return rs, nil
}

// URL is the twin's base URL (no trailing /v1).
func (rs *Running) URL() string { return rs.url }

// Close stops serving and stops the engine. Requests in flight get up to
// a second to finish; then connections are closed. (A client connection
// that never sent a request would otherwise hold Shutdown for 5 s.)
func (rs *Running) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := rs.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = rs.srv.Close()
	}
	return errors.Join(err, rs.Server.Close())
}

// MeasureTransport measures the transport's own latency for
// Config.TransportAllowance: it serves a twin whose only cost is a known
// network delay, sends n trivial POST /tokenize from workers goroutines at
// once over client (so the machine is about as busy as in a benchmark),
// and returns the median round trip minus the delay.
func MeasureTransport(ctx context.Context, client *http.Client, n, workers int) (time.Duration, error) {
	if n <= 0 || workers <= 0 {
		return 0, fmt.Errorf("measure transport: n = %d, workers = %d, want both > 0", n, workers)
	}
	const delay = 20 * time.Millisecond
	p := ProfileFast()
	p.Network = delay
	rs, err := Start(Config{Profile: p})
	if err != nil {
		return 0, fmt.Errorf("measure transport: %w", err)
	}
	defer rs.Close()
	times := make([]time.Duration, n)
	errs := make(chan error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				d, err := tokenizeRoundTrip(ctx, client, rs.URL())
				if err != nil {
					errs <- err
					return
				}
				times[i] = d
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, fmt.Errorf("measure transport: %w", err)
	}
	slices.Sort(times)
	return max(0, times[n/2]-delay), nil
}

func tokenizeRoundTrip(ctx context.Context, client *http.Client, url string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/tokenize", strings.NewReader(`{"prompt":"0","add_special_tokens":false}`))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("/tokenize: HTTP %d", res.StatusCode)
	}
	return time.Since(t0), nil
}
