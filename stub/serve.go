package stub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// serving is the line a served twin starts with: what it serves, how, and
// where (never the API keys themselves).
func (s *Server) serving(cfg Config, addr net.Addr) string {
	return fmt.Sprintf("vllmstub %s: serving %s (profile %s, time scale %g, dev mode %t, api key %t, data parallel %d, %d fault(s)) on http://%s",
		Version, s.Model(), s.Profile().Name, s.TimeScale(), cfg.DevMode, len(cfg.APIKeys) > 0, max(cfg.DataParallel, 1), len(cfg.Faults), addr)
}

// KeepAliveTimeout is how long a served twin keeps an idle keep-alive
// connection open for its next request: vLLM passes uvicorn
// timeout_keep_alive=VLLM_HTTP_TIMEOUT_KEEP_ALIVE, 5 s by default, and
// uvicorn then closes it. (Without it, every connection a client opened
// and forgot stayed open, and held its goroutine and buffers, for good.)
const KeepAliveTimeout = 5 * time.Second

// httpServer is the HTTP server of a served twin (Serve, Start): a
// client gets ReadHeaderTimeout to send a request's header, and an idle
// connection is closed after KeepAliveTimeout.
func httpServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: KeepAliveTimeout}
}

// ShutdownGrace bounds how long Serve waits, once its context ends, for
// requests in flight to finish before it closes their connections.
const ShutdownGrace = 10 * time.Second

// Serve builds the twin of cfg (New), says what it serves on stdout (one
// line, ending with its URL) and serves it on ln until ctx ends; then it
// shuts down gracefully (ShutdownGrace) and returns nil. It is the server
// of the vllmstub command, of `vetbench twin` and of the container image,
// so the three serve the same twin. Serve closes ln.
func Serve(ctx context.Context, cfg Config, ln net.Listener, stdout io.Writer) error {
	s, err := New(cfg)
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer s.Close()
	srv := httpServer(s)
	fmt.Fprintln(stdout, s.serving(cfg, ln.Addr()))
	errc := make(chan error, 1)
	sl := withArrivals(srv, ln)
	go func() { errc <- srv.Serve(sl) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintln(stdout, "vllmstub: shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	err = srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// The grace is over: close what is still open (a stream whose
		// client stopped reading would otherwise never end).
		err = srv.Close()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
