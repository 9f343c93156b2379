package stub

import (
	"context"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestArrivedFromStamp: a request whose connection was stamped 30 ms (wall)
// before its handler runs is dated 30 ms × the time scale of model time
// earlier than now; with no stamp, a stamp not yet set or one in the
// future (a clock step), it is dated now. Fake time.
func TestArrivedFromStamp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{Profile: ProfileFast(), TimeScale: 10})
		require.NoError(t, err)
		defer s.Close()
		time.Sleep(time.Second)
		req := func(st *stamped) float64 {
			hr := httptest.NewRequest("POST", "/tokenize", nil)
			if st != nil {
				hr = hr.WithContext(context.WithValue(hr.Context(), arrivalKey{}, st))
			}
			return s.arrived(hr)
		}
		at := func(d time.Duration) *stamped {
			st := &stamped{}
			st.last.Store(time.Now().Add(d).UnixNano())
			return st
		}
		now := s.eng.clock.now()
		require.InDelta(t, now-0.030*10, req(at(-30*time.Millisecond)), 1e-9, "dated from the stamp")
		require.InDelta(t, now, req(at(0)), 1e-9)
		require.InDelta(t, now, req(nil), 1e-9, "no stamp: now")
		require.InDelta(t, now, req(&stamped{}), 1e-9, "nothing read yet: now")
		require.InDelta(t, now, req(at(5*time.Millisecond)), 1e-9, "a stamp in the future: now")
	})
}
