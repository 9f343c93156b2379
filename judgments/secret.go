package judgments

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Secret is the API key as the clients hold it: what they send as
// "Authorization: Bearer <key>", and what must never come back out. A
// server may echo it (quoted in an error body, in /version); every string
// from a server is passed through Redact, and every body a Guard-ed client
// reads is masked on the wire, before it is stored or printed.
type Secret string

// Redact replaces every occurrence of the key in s (as sent, and as JSON
// escapes it) with "xxxxx"; the Bearer form is covered with it. An empty
// key redacts nothing.
func (k Secret) Redact(s string) string {
	for _, p := range k.patterns() {
		s = strings.ReplaceAll(s, string(p), redacted)
	}
	return s
}

// SentKey is the key authorize puts on a request ("Authorization: Bearer
// <key>"; the whole header value for another scheme), "" for none or a
// nil authorize: what to redact from a server's text in a caller that
// holds only authorize.
func SentKey(authorize func(*http.Request)) Secret {
	if authorize == nil {
		return ""
	}
	req, err := http.NewRequest(http.MethodGet, "http://probe.invalid/", nil)
	if err != nil {
		return ""
	}
	authorize(req)
	return Secret(strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer "))
}

// patterns are the key's spellings: as sent, and JSON-escaped when that
// differs (a key with '"', '\' or '<' is escaped in a JSON body).
func (k Secret) patterns() [][]byte {
	if k == "" {
		return nil
	}
	out := [][]byte{[]byte(k)}
	if q, err := json.Marshal(string(k)); err == nil {
		if esc := q[1 : len(q)-1]; string(esc) != string(k) {
			out = append(out, esc)
		}
	}
	return out
}

// Guard returns a copy of hc (nil: a new client) whose response bodies
// have the key masked (each occurrence overwritten with as many 'x', so
// lengths and framing hold) and which follows a redirect only within the
// origin of the request (scheme, host and port): net/http keeps the
// Authorization header on a redirect to the same host on another port,
// and a run must not pass against a server its receipt does not name.
func (k Secret) Guard(hc *http.Client) *http.Client {
	if hc == nil {
		hc = &http.Client{}
	}
	out := *hc
	if mt, ok := out.Transport.(*maskTransport); !ok || string(mt.key) != string(k) {
		rt := out.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		if len(k) >= MinMaskedKey {
			out.Transport = &maskTransport{rt: rt, key: k}
		}
	}
	out.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := SameOrigin(req, via); err != nil {
			// A Location may quote the key.
			return fmt.Errorf("%w: %s", ErrRedirect, k.Redact(strings.TrimPrefix(err.Error(), ErrRedirect.Error()+": ")))
		}
		return nil
	}
	return &out
}

// MinMaskedKey is the shortest key masked in bodies on the wire: a
// shorter one (a "k") would overwrite the JSON itself. Such a key is
// still redacted from the errors the clients build (Redact).
const MinMaskedKey = 8

// ErrRedirect is a redirect refused: to another origin, or the eleventh.
var ErrRedirect = errors.New("redirect refused")

// SameOrigin is an http.Client CheckRedirect that follows up to 10
// redirects within the first request's origin and refuses any other.
func SameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return fmt.Errorf("%w: stopped after 10 redirects", ErrRedirect)
	}
	if from := via[0].URL; Origin(from) != Origin(req.URL) {
		return fmt.Errorf("%w: %s redirects to %s, another origin (the key and the run go to %s only)",
			ErrRedirect, RedactURL(from.String()), RedactURL(req.URL.String()), Origin(from))
	}
	return nil
}

// Origin is u's scheme://host:port, the port spelled out when implied.
func Origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// maskTransport masks the key in every response body it returns.
type maskTransport struct {
	rt  http.RoundTripper
	key Secret
}

func (t *maskTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.rt.RoundTrip(req)
	if err != nil || res.Body == nil {
		return res, err
	}
	res.Body = newMaskReader(res.Body, t.key.patterns())
	return res, nil
}

// CloseIdleConnections reaches the wrapped transport (http.Client calls it).
func (t *maskTransport) CloseIdleConnections() {
	if c, ok := t.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// maskReader overwrites each pattern in a stream with 'x's. It holds back
// the last longest-pattern-minus-one bytes until more arrive (or the
// stream ends), so an occurrence split across reads is masked whole.
type maskReader struct {
	rc    io.ReadCloser
	pats  [][]byte
	hold  int
	buf   []byte // read, masked up to ready
	ready int    // buf[:ready] is masked and may be handed out
	err   error
}

func newMaskReader(rc io.ReadCloser, pats [][]byte) *maskReader {
	m := &maskReader{rc: rc, pats: pats}
	for _, p := range pats {
		m.hold = max(m.hold, len(p)-1)
	}
	return m
}

func (m *maskReader) Read(p []byte) (int, error) {
	for m.ready == 0 {
		if m.err != nil {
			return 0, m.err
		}
		if len(m.buf) == cap(m.buf) {
			m.buf = append(m.buf, make([]byte, max(4096, len(p)))...)[:len(m.buf)]
		}
		n, err := m.rc.Read(m.buf[len(m.buf):cap(m.buf)])
		m.buf, m.err = m.buf[:len(m.buf)+n], err
		mask(m.buf, m.pats)
		m.ready = len(m.buf) - m.hold
		if m.err != nil {
			m.ready = len(m.buf)
		}
		m.ready = max(m.ready, 0)
	}
	n := copy(p, m.buf[:m.ready])
	m.buf = m.buf[:copy(m.buf, m.buf[n:])]
	m.ready -= n
	return n, nil
}

func (m *maskReader) Close() error { return m.rc.Close() }

// mask overwrites every occurrence of each pattern in b with 'x's.
func mask(b []byte, pats [][]byte) {
	for _, p := range pats {
		for i := 0; ; {
			j := bytes.Index(b[i:], p)
			if j < 0 {
				break
			}
			for k := range p {
				b[i+j+k] = 'x'
			}
			i += j + len(p)
		}
	}
}
