package stream_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/bench/loop"
	"github.com/vetbench/vetbench/bench/stream"
)

// A looping model is stopped mid-stream by a loop detector in the
// observer; the result keeps what arrived and says why it stopped.
func TestLoopDetectorStopsALoopingStream(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for k := 1; k <= 4096; k++ {
			_, err := fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"duct\"}}],\"usage\":{\"completion_tokens\":%d}}\n\n", k)
			if err != nil {
				return // the client hung up
			}
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	var pair loop.Pair
	res := stream.New(srv.URL).Do(context.Background(), stream.Text("go", 4096), func(u stream.Update) error {
		return pair.Write(u.Content, u.Reasoning)
	})
	require.ErrorIs(t, res.Err, stream.ErrAborted)
	require.ErrorIs(t, res.Err, loop.ErrLoop)
	var le *loop.Error
	require.True(t, errors.As(res.Err, &le))
	require.Equal(t, "content", le.Channel)
	require.Equal(t, 1024, res.OutputTokens, "stopped at the 4096-character boundary")
	require.Equal(t, "aborted", stream.ErrorClass(res.Err))
}
