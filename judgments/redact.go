package judgments

import (
	"errors"
	"net/url"
	"strings"
)

// redacted stands where a secret was: the reader sees that there was one.
const redacted = "xxxxx"

// RedactURL is raw fit for a message or a log: user info and query are
// replaced by "xxxxx" (a token may sit in either: https://TOKEN@host,
// ?token=…), the fragment dropped. A URL that does not parse as one is
// redacted by its shape, so a malformed endpoint is never echoed with its
// secrets.
func RedactURL(raw string) string {
	// An opaque URL ("user:pass@host" has scheme "user") is redacted by
	// its shape too.
	if u, err := url.Parse(raw); err == nil && u.Opaque == "" {
		if u.User != nil {
			u.User = url.User(redacted)
		}
		if u.RawQuery != "" || u.ForceQuery {
			u.RawQuery, u.ForceQuery = redacted, false
		}
		u.Fragment, u.RawFragment = "", ""
		return u.String()
	}
	s := raw
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i] + "?" + redacted
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + 3
	}
	end := len(s)
	if i := strings.IndexAny(s[start:], "/?"); i >= 0 {
		end = start + i
	}
	if at := strings.LastIndex(s[start:end], "@"); at >= 0 {
		s = s[:start] + redacted + s[start+at:]
	}
	return s
}

// RedactError hides the secrets of every *url.Error URL in err's chain, in
// place (net/http keeps the user name and query in the ones it returns),
// and returns err.
func RedactError(err error) error {
	var ue *url.Error
	for e := err; e != nil; {
		if errors.As(e, &ue) {
			ue.URL = RedactURL(ue.URL)
			e = ue.Err
			continue
		}
		break
	}
	return err
}
