package judgments

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The parts the client sends are json.Marshal(BuildRequest(...)) byte for
// byte, also for the text json.Marshal escapes (HTML characters, U+2028,
// bad UTF-8), no image or two, odd MIME types; where the fast path cannot
// apply (a media marker in the text, a control without an id, a model
// name that holds the sentinel, a question reusing an id) the client falls
// back to json.Marshal, which says what is wrong.
func TestWirePartsAreMarshalBytes(t *testing.T) {
	png := Image{MIME: "image/png", Data: []byte("png bytes")}
	items := []Item{
		{ID: "plain", State: "The image shows one paper check.", Images: []Image{png}},
		{ID: "html", State: "a <b> & \"c\" \u2028 \u2029 \t\n é → \x7f", Images: []Image{png}},
		{ID: "bad-utf8", State: "bad \xff\xfe bytes", Images: []Image{png}},
		{ID: "none", State: "no image at all"},
		{ID: "two", State: "two images", Images: []Image{png, {MIME: `image/x"odd<>`, Data: []byte{0, 1, 2, 250}}}},
		{ID: "empty", Images: []Image{{MIME: "image/png"}}},
	}
	qs := append(checksQuestions(), NewNoul("odd", "Is <this> & \u2028 that?", "yes \xff", "no"))
	ctrl := Controls{"0": 236048, "1": 236049, "2": 236050, "3": 236051, "4": 236052, "5": 236053}
	for _, model := range []string{"google/gemma-4-31B-it", "m<&>"} {
		for _, mode := range []Mode{ModeTokenIDs, ModeTopLogprobs} {
			w := newWire(model, mode, 7)
			for _, it := range items {
				urls := make([]string, len(it.Images))
				for i, im := range it.Images {
					urls[i] = im.DataURL()
				}
				for _, q := range qs {
					for range 2 { // the second time from the caches
						req, err := BuildRequest(model, mode, 7, it, q, ctrl, urls)
						require.NoError(t, err)
						want, err := json.Marshal(req)
						require.NoError(t, err)
						parts, n, ok := w.body(it, q, ctrl)
						require.True(t, ok, "fast path for %s/%s", it.ID, q.ID)
						got := bytes.Join(parts, nil)
						require.Equal(t, string(want), string(got), "%s %s %s", model, mode, it.ID)
						require.Equal(t, len(want), n)
					}
				}
			}
		}
	}

	w := newWire("m", ModeTokenIDs, 0)
	q := checksQuestions()[0]
	_, _, ok := w.body(Item{State: "a " + MediaMarker + " in the state", Images: []Image{png}}, q, ctrl)
	require.False(t, ok, "a marker in the state")
	_, _, ok = w.body(items[0], q, Controls{"0": 1})
	require.False(t, ok, "a control without an id")
	_, _, ok = newWire("x"+sentinel+"text", ModeTokenIDs, 0).body(items[0], q, ctrl)
	require.False(t, ok, "a model name holding the sentinel")
	_, _, ok = newWire("m", Mode("logits"), 0).body(items[0], q, ctrl)
	require.False(t, ok, "an unknown mode")

	// A question that reuses a cached id with other content is encoded anew.
	other := q
	other.Instructions = "Another question under the same id?"
	parts, _, ok := w.body(items[0], other, ctrl)
	require.True(t, ok)
	req, err := BuildRequest("m", ModeTokenIDs, 0, items[0], other, ctrl, []string{png.DataURL()})
	require.NoError(t, err)
	want, _ := json.Marshal(req)
	require.Equal(t, string(want), string(bytes.Join(parts, nil)))
}

// Where the fast path does not apply, the client's error is BuildRequest's.
func TestWireFallbackErrors(t *testing.T) {
	c := NewClient("http://127.0.0.1:1", WithModel("m"))
	it := Item{ID: "i", State: "a " + MediaMarker, Images: []Image{{MIME: "image/png", Data: []byte("x")}}}
	_, err := c.ask(t.Context(), it, checksQuestions()[0], Controls{"0": 1, "1": 2})
	require.ErrorContains(t, err, "2 media markers for 1 images")
	_, err = c.ask(t.Context(), Item{ID: "i", State: "s"}, checksQuestions()[0], Controls{"0": 1})
	require.ErrorIs(t, err, ErrMissingCandidate)
}
