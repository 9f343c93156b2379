package stub

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadBodyReservesWhatArrives: a claimed Content-Length is set aside
// only up to maxBodyReserve before the bytes come (a client claiming
// 64 MiB and sending 4 reserved 64 MiB); a body that does come is read
// whole however large, up to maxBody.
func TestReadBodyReservesWhatArrives(t *testing.T) {
	for _, tc := range []struct {
		name          string
		claimed, sent int
		maxCap        int
	}{
		{"claims 64 MiB, sends 4 bytes", maxBody, 4, maxBodyReserve + 1},
		{"claims and sends 3 MiB", 3 << 20, 3 << 20, 2 * (3 << 20)},
		{"claims and sends 100 bytes", 100, 100, 101},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := bytes.Repeat([]byte("x"), tc.sent)
			r, err := http.NewRequest(http.MethodPost, "/v1/chat/completions", io.NopCloser(bytes.NewReader(want)))
			require.NoError(t, err)
			r.ContentLength = int64(tc.claimed)
			s := &Server{} // its own pool: a buffer another case grew is reused, by design
			body, release, err := s.readBody(r)
			require.NoError(t, err)
			require.Equal(t, want, body)
			require.LessOrEqual(t, cap(body), tc.maxCap)
			release()
		})
	}
	r, err := http.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("y", maxBody+10)))
	require.NoError(t, err)
	body, release, err := (&Server{}).readBody(r)
	require.NoError(t, err)
	require.Len(t, body, maxBody, "cut at maxBody")
	release()
}
