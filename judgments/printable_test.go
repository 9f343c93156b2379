package judgments

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostileText is what a hostile server puts in an error body or a model
// name: a window title, a screen clear, a colour, a carriage return that
// overwrites the line, a bidi override that reverses what follows, a NUL
// and a byte that is not UTF-8.
const hostileText = "\x1b]0;PWNED\a\x1b[2J\x1b[31mEVIL\r\x1b[Kfake ok\u202eevil\x00\xff\nline2\ttab"

// TestPrintable: every control character, bidi control and invalid byte
// is written as a Go escape, so a server's text printed on a terminal
// (or in a one-line field) cannot move the cursor, recolour, retitle or
// reorder anything; printable text, other scripts included, is kept.
func TestPrintable(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "HTTP 500: engine dead (≤ 2 µs, Grüße, 日本)", "HTTP 500: engine dead (≤ 2 µs, Grüße, 日本)"},
		{"hostile", hostileText, `\x1b]0;PWNED\a\x1b[2J\x1b[31mEVIL\r\x1b[Kfake ok\u202eevil\x00\xff\nline2\ttab`},
		{"C1 and DEL", "a\u009bb\x7fc", `a\u009bb\x7fc`},
		{"bidi isolate and zero width", "x\u2066y\u200bz", `x\u2066y\u200bz`},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Printable(tc.in))
		})
	}
}

// TestStatusErrorIsPrintable: a 500 body's message, type and param are
// kept printable (vetbench prints them on stderr and keeps them in
// receipts); the key is still redacted first.
func TestStatusErrorIsPrintable(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"nested", `{"error":{"message":"` + jsonText + ` key-k","type":"` + jsonText + `","param":"` + jsonText + `","code":500}}`},
		{"bare", `{"error":"` + jsonText + ` key-k"}`},
		{"text", hostileText + " key-k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &http.Response{StatusCode: 500, Header: http.Header{}}
			e := ParseStatusError("/v1/chat/completions", res, []byte(tc.body), Secret("key-k"))
			for _, s := range []string{e.Error(), e.Message, e.Type, e.Param} {
				require.NotContains(t, s, "\x1b")
				require.NotContains(t, s, "\r")
				require.NotContains(t, s, "\u202e")
				require.NotContains(t, s, "key-k")
			}
			require.Contains(t, e.Message, `\x1b[31mEVIL\r`)
		})
	}
}

// jsonText is hostileText as a JSON string's content.
const jsonText = `\u001b]0;PWNED\u0007\u001b[2J\u001b[31mEVIL\r\u001b[Kfake ok\u202eevil\u0000\nline2\ttab`
