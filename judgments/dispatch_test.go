package judgments

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// sequence records, in arrival order, each request's path and what it
// asked ("/tokenize 3", "/v1/chat/completions verdict"), then hands it to
// the fake server.
type sequence struct {
	mu   sync.Mutex
	seen []string
	next http.Handler
}

func (s *sequence) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	what := r.URL.Path
	switch r.URL.Path {
	case "/tokenize":
		var req map[string]any
		_ = json.Unmarshal(data, &req)
		what += fmt.Sprintf(" %v special=%v", req["prompt"], req["add_special_tokens"])
	case chatPath:
		_, q, _ := ParseRequestID(r.Header.Get("X-Request-Id"))
		what += " " + q
	}
	s.mu.Lock()
	s.seen = append(s.seen, what)
	s.mu.Unlock()
	r.Body = io.NopCloser(strings.NewReader(string(data)))
	s.next.ServeHTTP(w, r)
}

// The typevet dispatch sends, before every judgment, one uncached
// /tokenize per control of every question (add_special_tokens false), in
// question order and one at a time, then the questions one after another:
// 15 tokenize calls for a checks judgment, as typevet's client sends
// (typevet-semantics §1.1). The answers are the in-order client's.
func TestJudgeTypevetDispatch(t *testing.T) {
	answer := func(b map[string]any) (int, string) {
		return 200, idsBody(b, func(i int) string { return fmt.Sprint(-float64(i) - 0.5) })
	}
	plain, spec, ctrl := newTestClient(t, &fakeVLLM{chat: answer})
	want, err := plain.Judge(t.Context(), spec, ctrl, testItem())
	require.NoError(t, err)
	require.Zero(t, want.Tokenizes)

	seq := &sequence{next: &fakeVLLM{chat: answer}}
	srv := httptest.NewServer(seq)
	t.Cleanup(srv.Close)
	c := NewClient(srv.URL, WithModel("google/gemma-4-31B-it"), WithDispatch(DispatchTypevet))
	require.Equal(t, DispatchTypevet, c.Dispatch())
	require.False(t, c.FanOut())
	ctrl, err = c.Tokenize(t.Context(), spec.Controls())
	require.NoError(t, err)
	seq.seen = nil
	var wantSeen []string
	for range 2 {
		for _, q := range spec.Questions {
			for _, k := range q.Controls() {
				wantSeen = append(wantSeen, "/tokenize "+k+" special=false")
			}
		}
		for _, q := range spec.Questions {
			wantSeen = append(wantSeen, chatPath+" "+q.ID)
		}
		got, err := c.Judge(t.Context(), spec, ctrl, testItem())
		require.NoError(t, err)
		require.Equal(t, want.Answers, got.Answers)
		require.Equal(t, 15, got.Tokenizes, "2+2+6+5 controls")
		require.Equal(t, TypevetTokenizeCalls(spec), got.Tokenizes)
		require.Equal(t, len(spec.Questions), got.Requests)
	}
	require.Equal(t, wantSeen, seq.seen, "tokenized anew for every judgment, before its questions")

	_, err = ParseDispatch("typevet ")
	require.NoError(t, err)
	_, err = ParseDispatch("fanout")
	require.ErrorContains(t, err, "want in-order, fan-out or typevet")
}

// A control that tokenizes differently mid-run fails the judgment before
// any question is asked (its scores would be another token's); a failed
// /tokenize fails it too, naming the question.
func TestJudgeTypevetTokenizerChanged(t *testing.T) {
	f := &fakeVLLM{chat: func(b map[string]any) (int, string) {
		return 200, idsBody(b, func(i int) string { return fmt.Sprint(-float64(i) - 0.5) })
	}}
	c, spec, ctrl := newTestClient(t, f, WithDispatch(DispatchTypevet))
	_, err := c.Judge(t.Context(), spec, ctrl, testItem())
	require.NoError(t, err, "positive control: the pinned ids")

	moved := Controls{}
	for k, v := range ctrl {
		moved[k] = v
	}
	moved["5"]++ // verdict's sixth control
	f.bodies = nil
	j, err := c.Judge(t.Context(), spec, moved, testItem())
	var je *JudgeError
	require.ErrorAs(t, err, &je)
	require.Equal(t, "verdict", je.Question)
	require.Equal(t, "r00:clean", je.Item)
	require.ErrorContains(t, err, "tokenizer changed")
	require.Empty(t, f.bodies, "no question asked")
	require.Zero(t, j.Requests)

	down := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(down.Close)
	c = NewClient(down.URL, WithDispatch(DispatchTypevet))
	_, err = c.Judge(t.Context(), spec, ctrl, testItem())
	require.ErrorIs(t, err, ErrNoTokenizer)
	require.ErrorAs(t, err, &je)
	require.Equal(t, "payee_matches", je.Question)
}

// Prepare encodes every item's parts before any request: afterwards the
// client holds each image's data URL once, judging adds none, and the
// bodies sent are those of a client that never prepared (byte for byte).
func TestPrepare(t *testing.T) {
	answer := func(b map[string]any) (int, string) {
		return 200, idsBody(b, func(i int) string { return fmt.Sprint(-float64(i) - 0.5) })
	}
	items := []Item{testItem(), {ID: "r01:clean", State: "Another check.", Images: []Image{{MIME: "image/png", Data: []byte("png-2")}}}}
	plain := &fakeVLLM{chat: answer}
	c, spec, ctrl := newTestClient(t, plain)
	require.Empty(t, c.wire.images, "positive control: nothing encoded before a request")
	for _, it := range items {
		_, err := c.Judge(t.Context(), spec, ctrl, it)
		require.NoError(t, err)
	}

	prepared := &fakeVLLM{chat: answer}
	p, _, _ := newTestClient(t, prepared)
	p.Prepare(spec, ctrl, items)
	require.Len(t, p.wire.images, 2, "every image encoded once")
	require.Len(t, p.wire.states, 2)
	require.Len(t, p.wire.fields, len(spec.Questions))
	templates := len(p.wire.templates)
	for _, it := range items {
		_, err := p.Judge(t.Context(), spec, ctrl, it)
		require.NoError(t, err)
	}
	require.Len(t, p.wire.images, 2, "judging encoded nothing new")
	require.Len(t, p.wire.templates, templates)
	require.Equal(t, plain.bodies, prepared.bodies)
}
