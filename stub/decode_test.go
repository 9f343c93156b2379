package stub

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// decoded is what the twin reads of a chat body: the decode error, or the
// messages (text, and each image's digest, size and header error) and the
// message error.
func decoded(t testing.TB, req *chatRequest, err error, images *imageCache) string {
	if err != nil {
		return "json: " + jsonDecodeError(err).Message
	}
	msgs, e := req.messages(images)
	if e != nil {
		return "messages: " + e.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "model=%q max_tokens=%v |", req.Model, req.MaxTokens != nil)
	for _, m := range msgs {
		fmt.Fprintf(&b, " %s:", m.Role)
		for _, p := range m.Parts {
			if p.Image == nil {
				fmt.Fprintf(&b, " text %q", p.Text)
				continue
			}
			fmt.Fprintf(&b, " image %s %dx%d %v", p.Image.Digest[:12], p.Image.Width, p.Image.Height, p.Image.err)
		}
	}
	return b.String()
}

// twoWays decodes body as decodeChat does (lifting the image URLs out)
// and as plain json.Unmarshal does, each with a fresh image cache.
func twoWays(t testing.TB, body []byte) (lifted, plain string) {
	s := &Server{images: newImageCache(imageCacheBytes)}
	var a chatRequest
	lifted = decoded(t, &a, s.decodeChat(body, &a), s.images)
	var b chatRequest
	err := json.Unmarshal(body, &b)
	b.body = body
	plain = decoded(t, &b, err, newImageCache(imageCacheBytes))
	return lifted, plain
}

func decodeSeeds(t testing.TB) []string {
	url := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(twintest.JPEGImage(t, 160, 120, 3).Data)
	require.Greater(t, len(url), liftMin, "the image must be long enough to be lifted")
	part := func(img string) string {
		return `{"type":"image_url","image_url":{"url":"` + img + `"}}`
	}
	body := func(content string) string {
		return `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[` + content + `]}]}`
	}
	escaped := strings.Replace(url, "/", `\/`, 1)
	return []string{
		body(part(url) + `,{"type":"text","text":"Is it?"}`),
		body(part(url) + `,` + part(url)),
		// vLLM's bare form, and spaces around the colon
		body(`{"type":"image_url","image_url" : "` + url + `"}`),
		// escapes: an escaped slash (not lifted, same image), quotes and
		// backslashes in text before and after
		body(`{"type":"text","text":"say \"url\": \\"},` + part(escaped) + `,{"type":"text","text":"\\\"data:"}`),
		// "url" as a value, not a key: the next string is no URL value
		body(`{"type":"url","text":"` + url + `"}`),
		body(`{"type":"text","text":"url"},{"type":"text","text":"` + url + `"}`),
		// an escaped quote before "url" (a quote counts only unescaped)
		body(`{"type":"text","text":"\\\"url\": "},{"type":"text","text":"` + url + `"}`),
		// an image URL elsewhere (ignored either way)
		`{"model":"m","url":"` + url + `","messages":[{"role":"user","content":"hi"}]}`,
		// bad base64 and a control character inside a URL: errors as before
		body(part(url[:len(url)-7] + "!!!!")),
		body(part(url[:40] + "\x01" + url[41:])),
		body(part(url[:40] + "\n" + url[41:])),
		body(part(url[:40] + `\n` + url[41:])),
		// not an image (header unreadable), and not JSON after the URL
		body(part("data:image/png;base64," + strings.Repeat("QUJD", 400))),
		body(part(url)) + "x",
		body(part(url))[:len(body(part(url)))-3],
		// the body's own \u0000: nothing lifted
		body(part(url) + `,{"type":"text","text":"\u0000"}`),
		// type errors inside parts, a missing content and null content
		body(part(url) + `,{"type":"text","text":7}`),
		`{"model":"m","messages":[{"role":"user"},{"role":"user","content":"` + url + `"}]}`,
		`{"model":"m","messages":[{"role":"user","content":null}],"x":{"url":"` + url + `"}}`,
		// a key that only matches case-insensitively
		body(`{"TYPE":"image_url","Image_URL":{"URL":"` + url + `"}}`),
	}
}

// TestDecodeChatLifted: lifting the image data URLs out of a body before
// decoding it changes nothing the twin reads — the same messages, images,
// fields and errors as decoding the whole body — for bodies that probe
// the string scanning (escaped quotes and backslashes, "url" as a value,
// a URL elsewhere), bad URLs and bad JSON.
func TestDecodeChatLifted(t *testing.T) {
	t.Parallel()
	for i, body := range decodeSeeds(t) {
		lifted, plain := twoWays(t, []byte(body))
		require.Equal(t, plain, lifted, "seed %d", i)
	}
	// the images of the first seed were lifted (a positive control: the
	// fast path runs)
	rest, urls := liftImageURLs([]byte(decodeSeeds(t)[1]))
	require.Len(t, urls, 2)
	require.Less(t, len(rest), 200)
}

func FuzzTwinDecodeChat(f *testing.F) {
	for _, s := range decodeSeeds(f) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		lifted, plain := twoWays(t, body)
		if lifted != plain {
			t.Fatalf("lifted %s\nplain  %s", lifted, plain)
		}
	})
}

// TestImageCacheBound: the cache starts again once its URLs pass its
// bound, and keeps no URL that is not plain JSON text.
func TestImageCacheBound(t *testing.T) {
	t.Parallel()
	url := func(seed int) string {
		return "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(twintest.JPEGImage(t, 64, 64, seed).Data)
	}
	c := newImageCache(2*len(url(1)) + 10)
	for seed := range 3 {
		_, err := c.get(url(seed))
		require.NoError(t, err)
	}
	require.Len(t, c.m, 1, "the third URL found the cache full and started it again")
	require.LessOrEqual(t, c.bytes, c.max)
	im, err := c.get(url(0)[:50] + "\n" + url(0)[50:])
	require.NoError(t, err, "base64 skips a newline")
	require.NotNil(t, im)
	require.Len(t, c.m, 1, "a URL with a newline is resolved but not kept")
}
