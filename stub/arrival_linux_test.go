package stub

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestArrivalStampsOnLoopback: served through withArrivals, each request
// on a kept-alive connection carries the kernel's stamp of its own bytes —
// after its client began to send it, before its handler ran — not the
// first request's. The control: served without it, a request has none.
// Only the order of instants is checked, no duration.
func TestArrivalStampsOnLoopback(t *testing.T) {
	for _, stamps := range []bool{true, false} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		type seen struct {
			at, handler time.Time
			ok          bool
		}
		got := make(chan seen, 1)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := time.Now()
			var sn seen
			if st, ok := r.Context().Value(arrivalKey{}).(*stamped); ok {
				sn.at, sn.ok = st.arrived()
			}
			sn.handler = h
			_, _ = io.Copy(io.Discard, r.Body)
			got <- sn
		})}
		sl := net.Listener(ln)
		if stamps {
			sl = withArrivals(srv, ln)
		}
		go func() { _ = srv.Serve(sl) }()
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		for i := range 2 {
			before := time.Now().Round(0)
			res, err := hc.Post("http://"+ln.Addr().String()+"/x", "application/json", strings.NewReader(`{"i":1}`))
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, res.Body)
			require.NoError(t, res.Body.Close())
			sn := <-got
			if !stamps {
				require.False(t, sn.ok, "no stamps without withArrivals")
				continue
			}
			require.True(t, sn.ok, "request %d: stamped", i)
			require.False(t, sn.at.Before(before), "request %d: stamped %v before its client began to send (%v)", i, sn.at, before)
			require.False(t, sn.at.After(sn.handler.Round(0)), "request %d: stamped after its handler ran", i)
		}
		hc.CloseIdleConnections()
		require.NoError(t, srv.Close())
	}
}
