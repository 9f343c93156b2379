package stream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeClock is a clock the test server moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// vLLM's chunk shapes (chat serving, continuous usage on).
func roleChunk(prompt int) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":0}}`, prompt, prompt)
}

func tokenChunk(field, text string, prompt, n int, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	t, _ := json.Marshal(text)
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{%q:%s},"logprobs":null,"finish_reason":%s}],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}`,
		field, t, fr, prompt, prompt+n, n)
}

func usageChunk(prompt, n int) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}`, prompt, prompt+n, n)
}

const done = "[DONE]"

// sse frames data as vLLM does: "data: ...\n\n".
func sse(data string) string { return "data: " + data + "\n\n" }

// genStream is a whole vLLM stream of n tokens "t0 t1 ...", finishing with
// "length", then the usage chunk and [DONE].
func genStream(prompt, n int) []string {
	out := []string{sse(roleChunk(prompt))}
	for i := 1; i <= n; i++ {
		fin := ""
		if i == n {
			fin = "length"
		}
		out = append(out, sse(tokenChunk("content", fmt.Sprintf("t%d ", i), prompt, i, fin)))
	}
	return append(out, sse(usageChunk(prompt, n)), sse(done))
}

func genText(n int) string {
	s := ""
	for i := 1; i <= n; i++ {
		s += fmt.Sprintf("t%d ", i)
	}
	return s
}

// step is one write of the test server: move the clock to t0+At (when
// Clock is set), write Data, flush, and, with Ack, wait until the client's
// observer took a chunk so the next clock move cannot race the read.
type step struct {
	At   time.Duration
	Data string
	Ack  bool
}

type script struct {
	Steps []step
	Clock *fakeClock
	// Cut closes the connection after the steps, without [DONE].
	Cut bool
	// Hold blocks after the steps until the request is canceled.
	Hold bool
	// Status and Body answer before any stream when Status != 0.
	Status  int
	Header  map[string]string
	Body    string
	acks    chan struct{}
	gotReq  chan *http.Request
	gotBody chan []byte
}

// serve runs the script on an httptest server and returns its URL.
func (s *script) serve(t *testing.T) string {
	t.Helper()
	s.acks = make(chan struct{}, 1)
	s.gotReq = make(chan *http.Request, 1)
	s.gotBody = make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil {
			body = make([]byte, 0, 512)
			buf := make([]byte, 512)
			for {
				n, err := r.Body.Read(buf)
				body = append(body, buf[:n]...)
				if err != nil {
					break
				}
			}
		}
		select {
		case s.gotReq <- r.Clone(r.Context()):
			s.gotBody <- body
		default:
		}
		for k, v := range s.Header {
			w.Header().Set(k, v)
		}
		if s.Status != 0 {
			w.WriteHeader(s.Status)
			_, _ = w.Write([]byte(s.Body))
			return
		}
		if _, ok := s.Header["Content-Type"]; !ok {
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		}
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		for _, st := range s.Steps {
			if s.Clock != nil {
				s.Clock.Set(t0.Add(st.At))
			}
			_, _ = w.Write([]byte(st.Data))
			fl.Flush()
			if st.Ack {
				select {
				case <-s.acks:
				case <-r.Context().Done():
					return
				}
			}
		}
		switch {
		case s.Cut:
			panic(http.ErrAbortHandler) // drops the connection mid-body
		case s.Hold:
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// ack is the observer that releases the server's next step.
func (s *script) ack(Update) error {
	s.acks <- struct{}{}
	return nil
}

// pieces splits every step's data with split, keeping its timing on the
// first piece.
func pieces(data []string, split func(string) []string) []step {
	var out []step
	for _, d := range data {
		for _, p := range split(d) {
			out = append(out, step{Data: p})
		}
	}
	return out
}
